"""A large text as one kernel's draft reads it: every line where it is, the bodies of the code no
launch of that kernel can depend on emptied.

A draft of one kernel in a 10 MB file read the whole file: its launches (a tree-sitter parse of
10 MB), its type aliases and structs (another), 10-17 s on a 2-core machine. What it depends on
is a small part: the kernel, the host functions that launch it and those that call them (their
sizes, up to `MAX_CALLERS` calls up), the small host functions these call (a launch's
arguments may; `HELPER_DEPTH` calls down), the types, the globals and the preprocessor lines. The rest is other
kernels and other programs' host code.

The text is cut into top-level chunks at lines that begin with `}` (the end of a definition in
code as people and generators write it), once per text (every kernel's view shares the cut). A
chunk whose braces balance, whose head ends as a function's does and that is none of the above,
has its body emptied: its head, its braces, its preprocessor lines and its cudaMemset calls stay
(a function with nothing in it but what a draft reads of every function; a block comment is
never cut open). Everything else is kept as written, so a
chunk the cut misreads is kept whole; where a chunk that names a followed function cannot be
read, the whole text is. Emptied lines keep their newline: every line and column of what is kept is where it is
in the file, and a launch found in the view is at its place in the file.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache

from .brackets import balance, match_text, nesting
from .discover import moved
from .kernel import Kernel
from .word_regex import word_start

VIEW_BYTES = 1 << 20  # texts above this are drafted from a view
MAX_CALLERS = 4  # as drafting/host.py follows a size up the calls
HELPER_DEPTH = 2  # host functions kept: those the kept code calls, and those these call
HELPER_BYTES = 4096  # ... up to this size (what a launch's arguments call is small: `cdiv`, `iDivUp`)
NOT_FOLLOWED = frozenset({"main"})  # called by no code: its places are every program's own

_CLOSER = re.compile(rb"(?m)^\}[^\n]*(?:\n|\Z)")
_BRACE = re.compile(rb"[{}]")
_PAREN = re.compile(rb"[()]")
# a function's head ends at its parameter list's `)`, then qualifiers or a trailing return type
_FUNCTION_HEAD = re.compile(rb"\)\s*(?:(?:const|noexcept|override|final|volatile)\b\s*)*(?:->[^;{}()]*)?$")
_DEVICE_ONLY = re.compile(word_start("__global__", "__device__").encode() + rb"\b")
_HOST = re.compile(word_start("__host__").encode() + rb"\b")
# what an emptied body keeps: its preprocessor lines, and its cudaMemset calls (drafting/draft.py's
# `_zeroed` reads every one written before a launch)
_EMPTIED_LINE = re.compile(rb"(?m)^(?![ \t]*#)(?![^\n]*\bcudaMemset)[^\n]+")
_NAME_BEFORE = re.compile(rb"([A-Za-z_]\w*)\s*(?:<[^<>;{}]*>)?\s*$")
_CALLED = re.compile(rb"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>\s*)?\(")
HEAD_LOOK = 1024  # how far before a body its function's head is looked for


@dataclass(frozen=True)
class KernelView:
    text: str
    kernel: Kernel  # the kernel, at its place in `text`


@dataclass(frozen=True)
class _Chunk:
    start: int
    end: int
    body: int  # the byte of its top-level `{` (-1: its braces do not balance, or it has none)
    function: str | None  # the function it defines (None: a type, an initialiser, what the cut cannot read)
    host: bool  # a function host code can call (not `__global__`, not `__device__` alone)


@dataclass(frozen=True)
class _Reading:
    chunks: list[_Chunk]
    starts: list[int]
    host_functions: dict[str, list[int]]  # a host function's name -> the chunks that define it


def kernel_view(text: str, kernel: Kernel) -> KernelView:
    """The view of `text` a draft of `kernel` reads (`text` itself where it is not over
    VIEW_BYTES or nothing can be left out)."""
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= VIEW_BYTES:
        return KernelView(text, kernel)
    reading = _read(data)
    own = range(bisect.bisect_right(reading.starts, kernel.span.start_byte) - 1,
                bisect.bisect_right(reading.starts, max(kernel.span.end_byte - 1, 0)))
    followed = _followed(data, reading, kernel.name)
    if followed is None:
        return KernelView(text, kernel)
    kept = _with_helpers(data, reading, followed | set(own))
    out, by = bytearray(), 0
    for i, chunk in enumerate(reading.chunks):
        if i == own.start:
            by = len(out) - chunk.start
        out += data[chunk.start:chunk.end] if i in kept else _emptied(data, chunk)
    return KernelView(out.decode("utf-8", errors="surrogatepass"), moved(kernel, by, 0) if by else kernel)


@lru_cache(maxsize=4)  # one text's kernels are drafted in turn
def _read(data: bytes) -> _Reading:
    chunks, start = [], 0
    for m in _CLOSER.finditer(data):
        chunks.append(_chunk(data, start, m.end()))
        start = m.end()
    if start < len(data):
        chunks.append(_Chunk(start, len(data), -1, None, False))
    helpers: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        if c.function is not None and c.host:
            helpers.setdefault(c.function, []).append(i)
    return _Reading(chunks, [c.start for c in chunks], helpers)


def _chunk(data: bytes, start: int, end: int) -> _Chunk:
    body = _body(data, start, end)
    if body < 0:
        return _Chunk(start, end, body, None, False)
    head = max(start, body - HEAD_LOOK)
    name = _defined_name(data, start, body) if _FUNCTION_HEAD.search(data, head, body) else None
    host = not _DEVICE_ONLY.search(data, head, body) or _HOST.search(data, head, body) is not None
    return _Chunk(start, end, body, name, host)


def _body(data: bytes, start: int, end: int) -> int:
    """Where its braces balance, the chunk's last top-level `{`: the one the closing `}` that
    ends the chunk matches; else -1."""
    stray, after = balance(_BRACE.finditer(data, start, end), (b"{",), (b"}",), match_text)
    if stray is not None or after != 0:
        return -1
    return max((m.start() for m, depth in nesting(_BRACE.finditer(data, start, end), (b"{",), (b"}",), match_text)
                if depth == 0 and m.group() == b"{"), default=-1)


def _followed(data: bytes, reading: _Reading, name: str) -> set[int] | None:
    """The chunks that name the kernel, or a function defined in one of those, and so on up
    MAX_CALLERS calls; None where one of them cannot be read (its braces do not balance: the
    function it holds, and so its callers, unknown): the text is then read whole."""
    kept: set[int] = set()
    names, seen = [name], set(NOT_FOLLOWED)
    for _ in range(MAX_CALLERS + 1):
        defined = []
        for word in names:
            if word in seen:
                continue
            seen.add(word)
            for i in _places(data, word.encode(), reading):
                if i not in kept:
                    chunk = reading.chunks[i]
                    if chunk.body < 0:
                        return None
                    kept.add(i)
                    defined += [chunk.function] if chunk.function else []
        names = defined
    return kept


def _with_helpers(data: bytes, reading: _Reading, kept: set[int]) -> set[int]:
    """`kept` and the small host functions its code calls, HELPER_DEPTH calls down (`main`,
    whose head every kept `main` names, is no helper)."""
    kept, new = set(kept), set(kept)
    for _ in range(HELPER_DEPTH):
        called = {m.group(1).decode() for i in new for m in _CALLED.finditer(data, reading.chunks[i].start,
                                                                               reading.chunks[i].end)}
        new = {j for name in called - NOT_FOLLOWED for j in reading.host_functions.get(name, ())
               if reading.chunks[j].end - reading.chunks[j].start <= HELPER_BYTES} - kept
        kept |= new
    return kept


def _places(data: bytes, word: bytes, reading: _Reading):
    """The chunks where `word` occurs as a word, each once (a plain find: a `\\b` regex over
    10 MB is ten times slower)."""
    at = data.find(word)
    while at >= 0:
        end = at + len(word)
        if _word_char(data, at - 1) or _word_char(data, end):
            at = data.find(word, end)
            continue
        i = bisect.bisect_right(reading.starts, at) - 1
        yield i
        at = data.find(word, reading.chunks[i].end)


def _word_char(data: bytes, i: int) -> bool:
    return 0 <= i < len(data) and (chr(data[i]).isalnum() or data[i] == 95)


def _defined_name(data: bytes, start: int, body: int) -> str | None:
    """The name before the parameter list that ends the head (None: none found): the opener of
    the last `)` before the body, then the word before it."""
    opened_at: dict[int, int] = {}
    opener = None
    for m, depth in nesting(_PAREN.finditer(data, max(start, body - HEAD_LOOK), body), (b"(",), (b")",), match_text):
        if m.group() == b"(":
            opened_at[depth] = m.start()
        else:
            opener = opened_at.get(depth)
    if opener is None:
        return None
    name = _NAME_BEFORE.search(data, max(start, opener - 256), opener)
    return name.group(1).decode() if name else None


def _emptied(data: bytes, chunk: _Chunk) -> bytes:
    """The chunk with its function's body emptied: the head and the braces kept (a function with
    nothing in it), the lines between them empty but for preprocessor lines and cudaMemset calls
    (a block comment is never cut open: it lies inside the body, or on the kept lines whole); a
    chunk that holds no function (a type, a namespace, an initialiser, what the cut cannot read)
    as it is."""
    text = data[chunk.start:chunk.end]
    if chunk.function is None:
        return text
    inside = data.find(b"\n", chunk.body)
    closing = data.rfind(b"\n", chunk.start, chunk.end - 1) + 1  # the line that begins with `}`
    if inside < 0 or inside >= closing:
        return text  # on one line
    return data[chunk.start:chunk.body + 1] + _EMPTIED_LINE.sub(b"", data[inside:closing]) + data[closing:chunk.end]
