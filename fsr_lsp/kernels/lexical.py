"""Byte-level helpers shared by both discovery paths: masking and the spec comment."""

from __future__ import annotations

import re

from ..source import SourceText
from .model import SpecComment

_SPEC_OPEN = re.compile(rb"/\*\s*@fsr\b")
# What may stand between a spec comment and its kernel: attributes, macros, `extern "C"`.
_MAX_GAP_LINES = 3


def mask(data: bytes) -> bytes:
    """Blank comments, string/char literals and preprocessor lines, keeping offsets.

    A scanner that looks for `__global__`, braces and parentheses must not see them inside
    a comment, a string or a `#define`.
    """
    out = bytearray(data)
    i, n = 0, len(data)
    line_start = True
    while i < n:
        c = data[i]
        if line_start and c in b" \t":
            i += 1
            continue
        if line_start and c == ord("#"):
            j = i
            while j < n and not (data[j] == 0x0A and data[j - 1] != ord("\\")):
                j += 1
            _blank(out, i, j)
            i = j
            continue
        line_start = c == 0x0A
        if data.startswith(b"//", i):
            j = data.find(b"\n", i)
            j = n if j < 0 else j
            _blank(out, i, j)
            i = j
        elif data.startswith(b"/*", i):
            j = data.find(b"*/", i + 2)
            j = n if j < 0 else j + 2
            _blank(out, i, j)
            i = j
        elif c in (ord('"'), ord("'")):
            j = i + 1
            while j < n and data[j] != c and data[j] != 0x0A:
                j += 2 if data[j] == ord("\\") else 1
            j = min(j + 1, n)
            _blank(out, i + 1, j - 1)
            i = j
        else:
            i += 1
    return bytes(out)


def _blank(buf: bytearray, start: int, end: int) -> None:
    for k in range(start, end):
        if buf[k] != 0x0A:
            buf[k] = 0x20


def find_spec_comment(src: SourceText, definition_start: int) -> SpecComment | None:
    """The `/* @fsr ... */` comment directly above a definition, if there is one."""
    data = src.data
    close = data.rfind(b"*/", 0, definition_start)
    if close < 0:
        return None
    gap = data[close + 2 : definition_start]
    if any(tok in gap for tok in (b";", b"{", b"}", b"/*", b"//")) or gap.count(b"\n") > _MAX_GAP_LINES:
        return None
    open_ = data.rfind(b"/*", 0, close)
    if open_ < 0:
        return None
    m = _SPEC_OPEN.match(data, open_)
    if not m:
        return None
    body_start = m.end()
    body = data[body_start:close].decode("utf-8", errors="replace")
    return SpecComment(span=src.span(open_, close + 2), body=body, body_start_byte=body_start)


def macro_aliases(data: bytes) -> set[bytes]:
    """Object-like macros whose body contains `__global__` (`#define KERNEL __global__`)."""
    return set(re.findall(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+[^\n]*\b__global__\b", data, re.M))
