"""Where in the file a spec problem is reported: the line of the key it is about, else the
`@fsr` line; and the block's body as TOML reads it, a key of it."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from ..kernels.kernel import Kernel, SpecComment
from ..source import SourceText, Span


def strip_stars(body: str) -> str:
    """Allow doc-comment style blocks (` * key = value`) by blanking the leading `*`."""
    lines = body.split("\n")
    content = [ln for ln in lines[1:] if ln.strip()]
    if content and all(ln.lstrip().startswith("*") for ln in content):
        lines = [lines[0]] + [re.sub(r"^(\s*)\*", r"\1 ", ln) for ln in lines[1:]]
    return "\n".join(lines)


def locate(src: SourceText, comment: SpecComment, body: str, key: str | None, section: str | None) -> Span:
    """Best place to report a problem with `key`: its `key = ...` line, else the `@fsr` line."""
    base = comment.body_start_byte
    if key is not None:
        search_from = 0
        if section is not None:
            header = re.search(rf"^\s*\[\s*{re.escape(section)}\s*\]", body, re.M)
            if header:
                search_from = header.end()
        m = re.compile(rf"^[ \t]*(?:{re.escape(section)}\.)?{re.escape(key)}[ \t]*=.*$", re.M).search(body, search_from) \
            if section else None
        if m is None:
            m = re.compile(rf"^[ \t]*{re.escape(key)}[ \t]*=.*$|\[\s*{re.escape(key)}\s*\]", re.M).search(body)
        if m is None:
            m = re.compile(rf"\b{re.escape(key)}\b").search(body)
        if m is not None:
            text = m.group().rstrip()
            lead = len(text) - len(text.lstrip())
            text = text.split("#")[0].rstrip() or text
            start = base + len(body[: m.start() + lead].encode())
            return src.span(start, start + len(text.strip().encode()))
    first = comment.span.start_byte
    line_end = src.data.find(b"\n", first)
    return src.span(first, line_end if line_end > 0 else comment.span.end_byte)


def block_value(kernel: Kernel, key: str) -> Any:
    """The value of `key` in the kernel's own @fsr block; None where it has none, or the block
    does not parse (its own parse says why)."""
    if kernel.spec is None or key not in kernel.spec.body:
        return None
    try:
        return tomllib.loads(strip_stars(kernel.spec.body)).get(key)
    except tomllib.TOMLDecodeError:
        return None
