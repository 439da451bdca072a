"""Which `@fsr` block belongs to which kernel.

A block attaches to the next `__global__` definition when only device-side declarations
(`__device__` helpers, `__constant__` data, `constexpr` and `const` values, structs, typedefs,
templates of those), preprocessor lines and comments stand between them: models and people put
tile `#define`s and helpers between a spec and its kernel. A block that attaches to nothing is
reported, never silently dropped.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ..source import SourceText
from .brackets import closing, nesting, top_level
from .kernel import Kernel, SpecComment

_IDENT = re.compile(rb"[A-Za-z_]\w*")
# Any of these words in a declaration's head makes it device-side (or compile-time) code.
_DEVICE_WORDS = {b"__device__", b"__constant__", b"__shared__", b"__managed__", b"__forceinline__",
                 b"__noinline__", b"constexpr", b"const", b"struct", b"class", b"union", b"enum", b"typedef",
                 b"using", b"static_assert"}
_AGGREGATES = {b"struct", b"class", b"union", b"enum"}


@dataclass(frozen=True)
class OrphanSpec:
    """An `@fsr` block that attaches to no kernel, and why."""

    comment: SpecComment
    reason: str


def attach_specs(src: SourceText, masked: bytes, kernels: list[Kernel],
                 blocks: list[SpecComment]) -> tuple[list[Kernel], list[OrphanSpec]]:
    """Kernels with their spec blocks attached (spans widened to include them), and the blocks
    that attach to none. `kernels` are in file order and carry no spec yet."""
    attached: dict[int, SpecComment] = {}
    orphans: list[OrphanSpec] = []
    for i, block in enumerate(blocks):
        end = block.span.end_byte
        index = next((j for j, k in enumerate(kernels) if k.definition_span.start_byte >= end), None)
        if index is None:
            inside = next((k for k in kernels if k.definition_span.start_byte < end <= k.definition_span.end_byte), None)
            where = f"it is inside kernel `{inside.name}`" if inside else "no kernel definition follows it"
            orphans.append(OrphanSpec(block, where))
            continue
        kernel = kernels[index]
        start = kernel.definition_span.start_byte
        later = next((b for b in blocks[i + 1:] if b.span.end_byte <= start), None)
        if later is not None:
            orphans.append(OrphanSpec(block, f"another @fsr block (line {later.span.start.line + 1}) stands between it "
                                             f"and kernel `{kernel.name}`"))
            continue
        problem = gap_problem(src, masked, end, start, kernel.name)
        if problem:
            orphans.append(OrphanSpec(block, f"{problem} stands between it and kernel `{kernel.name}` (only device-side "
                                             "declarations, preprocessor lines, templates and comments may)"))
            continue
        attached[index] = block
    out = [dataclasses.replace(k, spec=attached[i], span=src.span(attached[i].span.start_byte, k.span.end_byte))
           if i in attached else k for i, k in enumerate(kernels)]
    return out, orphans


def gap_problem(src: SourceText, masked: bytes, start: int, end: int, kernel: str) -> str:
    """'' when masked[start:end] holds only device-side declarations; else what stands there."""
    i = start
    while True:
        i = _skip_ws(masked, i, end)
        if i >= end:
            return ""
        if masked[i : i + 1] == b";":
            i += 1
            continue
        item_end, block = _item(masked, i, end)
        if item_end is None:
            return ""  # unterminated: the kernel's own prefix (`static`, `extern "C"`, attribute macros)
        head = masked[i : block[0] if block else item_end]
        words = set(_IDENT.findall(head))
        if b"__global__" in words:
            if block is None and _declared_name(head) == kernel.encode():
                i = item_end  # a prototype of the same kernel
                continue
            what = "the definition" if block else "a declaration"
            return f"{what} of kernel `{(_declared_name(head) or b'?').decode()}` (line {src.line_of(i) + 1})"
        if block is not None and (b"namespace" in words or words <= {b"extern"}):
            inner = gap_problem(src, masked, block[0] + 1, block[1], kernel)
            if inner:
                return inner
        elif not words & _DEVICE_WORDS:
            return f"host code `{_first_line(src, i, item_end)}` (line {src.line_of(i) + 1})"
        i = item_end


def _item(m: bytes, i: int, end: int) -> tuple[int | None, tuple[int, int] | None]:
    """One top-level declaration from i: (its end, its first brace block), or (None, None) when
    it does not end before `end`."""
    block: tuple[int, int] | None = None
    j = i
    while True:
        hit = next(top_level(m, (b";", b"{"), b"([", b")]", j, end), None)
        if hit is None:
            return None, None
        j = hit.start()
        if hit.group() == b";":
            return j + 1, block
        close = closing(m, j, b"{", b"}", end)
        if close < 0:
            return None, None
        if block is None:
            block = (j, close)
        head = m[i:j]
        if not (set(_IDENT.findall(head)) & _AGGREGATES or b"=" in head):
            return close + 1, block  # a function or namespace body ends the item
        j = close + 1  # an aggregate's initializer or body: the item goes on


def _declared_name(head: bytes) -> bytes | None:
    """The function name in a declaration head: the last identifier before its last top-level
    `(` (the parameter list; `__launch_bounds__(...)` and attribute macros come before it)."""
    paren = max((j for j, (ch, depth) in enumerate(nesting(head, b"(", b")")) if ch == 0x28 and depth == 0), default=-1)
    names = _IDENT.findall(head[: paren if paren >= 0 else len(head)])
    return names[-1] if names else None


def _skip_ws(m: bytes, i: int, end: int) -> int:
    while i < end and m[i] in b" \t\r\n":
        i += 1
    return i


def _first_line(src: SourceText, start: int, end: int) -> str:
    text = src.slice(start, end).strip().splitlines()[0].strip()
    return text if len(text) <= 60 else text[:57] + "..."
