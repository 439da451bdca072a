"""Kernel discovery by scanning tokens, for what tree-sitter cannot see.

A user mid-edit is the normal case: an unterminated kernel, a macro standing for
`__global__`, or `__cluster_dims__` can push later kernels into ERROR nodes. This scanner
works on masked bytes (no comments, strings or preprocessor lines) and only needs balanced
brackets, so it still finds them.
"""

from __future__ import annotations

import re

from ..source import SourceText
from .c_types import parse_param
from .brackets import closing
from .lexical import active_text, defined_macros, mask, split_top_level
from .kernel import Kernel

_ATTRIBUTES = {b"__launch_bounds__", b"__cluster_dims__", b"__maxnreg__", b"__declspec", b"__attribute__"}
_IDENT = re.compile(rb"[A-Za-z_]\w*")


def scan_kernel(src: SourceText, m: bytes, start: int, pos: int, limit: int) -> Kernel | None:
    """Parse the kernel whose marker (`__global__` or an alias) spans [start, pos); a
    declaration or a marker with no kernel after it gives None. `limit` is the next marker."""
    data = src.data
    bounds_text = None
    name = None
    while pos < limit:
        ident = _IDENT.match(m, _skip_ws(m, pos))
        if ident is None:
            return None
        word = ident.group()
        pos = ident.end()
        nxt = _skip_ws(m, pos)
        if word in _ATTRIBUTES and nxt < limit and m[nxt : nxt + 1] == b"(":
            close = closing(m, nxt, b"(", b")", limit)
            if word == b"__launch_bounds__":
                bounds_text = src.slice(nxt + 1, close if close > 0 else limit).strip()
            pos = close + 1 if close > 0 else limit
            continue
        if nxt < limit and m[nxt : nxt + 1] == b"(":
            close = closing(m, nxt, b"(", b")", limit)
            after = _IDENT.match(m, _skip_ws(m, close + 1)) if close > 0 else None
            if after is not None and after.group() not in (b"const", b"noexcept"):
                pos = close + 1  # `MACRO(args) name(...)`: an attribute-like macro, not the name
                continue
            name = (word, ident.start(), ident.end())
            pos = nxt
            break
    if name is None:
        return None
    close = closing(m, pos, b"(", b")", limit)
    params_end = close if close > 0 else _end_of_params(m, pos, limit)
    params_text = src.slice(pos + 1, params_end)
    if "#" in params_text or "/" in params_text:  # `#ifdef` lines or comments inside the list
        params_text = mask(active_text(params_text, defined_macros(data)).encode()).decode()
    params = tuple(parse_param(t) for t in split_top_level(params_text) if t.strip())
    complete = False
    end = params_end
    if close > 0:
        after = _skip_ws(m, close + 1)
        while after < limit and m[after : after + 1] not in (b"{", b";"):
            after += 1
        if after < limit and m[after : after + 1] == b";":
            return None  # a declaration, not a definition
        if after < limit:
            body_close = closing(m, after, b"{", b"}", limit)
            complete = body_close > 0
            end = body_close + 1 if complete else _trim_end(m, limit)
    definition_start = _prefix_start(data, m, start)
    template_params = _template_params(src, m, definition_start, start)
    return Kernel(
        name=name[0].decode(),
        params=params,
        template_params=template_params,
        launch_bounds=bounds_text,
        span=src.span(definition_start, end),
        definition_span=src.span(definition_start, end),
        name_span=src.span(name[1], name[2]),
        spec=None,
        complete=complete,
        found_by="fallback",
    )


def _skip_ws(m: bytes, i: int) -> int:
    while i < len(m) and m[i] in b" \t\r\n":
        i += 1
    return i


def _end_of_params(m: bytes, i: int, limit: int) -> int:
    """An unterminated parameter list ends at the first `{`, `;` or end of its line run."""
    for j in range(i + 1, limit):
        if m[j : j + 1] in (b"{", b";") or m[j : j + 2] == b"\n\n":
            return j
    return _trim_end(m, limit)


def _trim_end(m: bytes, limit: int) -> int:
    while limit > 0 and m[limit - 1 : limit] in (b" ", b"\n", b"\t", b"\r"):
        limit -= 1
    return limit


_PREFIX = re.compile(rb'(?:template\s*<[^;{}]*>\s*)?(?:extern\s+"C"\s*)?(?:(?:static|inline)\s+)*$')


def _prefix_start(data: bytes, m: bytes, marker: int) -> int:
    """Start of `template <...>` / `extern "C"` in front of the marker, if any."""
    window_start = max(0, marker - 400)
    # `extern "C"` needs the real quotes, which masking removed: use the original bytes.
    hit = _PREFIX.search(data[window_start:marker])
    if hit is None or hit.start() == hit.end():
        return marker
    start = window_start + hit.start()
    return start if m[start:marker].strip() or data[start:marker].strip() else marker


def _template_params(src: SourceText, m: bytes, definition_start: int, marker: int) -> tuple[str, ...]:
    head = m[definition_start:marker]
    t = re.match(rb"\s*template\s*<", head)
    if not t:
        return ()
    open_ = definition_start + t.end() - 1
    # `Pair<Pair<T>>`: each `>` of a `>>` closes a list (C++11). Read as one, it lost the head's last
    # closer and the kernel its template parameters; and the whole text's copy made to read it so
    # cost a 10 MB file 12 ms a template kernel (1.1 s in all)
    close = closing(m, open_, b"<", b">", marker)
    if close < 0:
        return ()
    return tuple(p.strip() for p in split_top_level(src.slice(open_ + 1, close)) if p.strip())
