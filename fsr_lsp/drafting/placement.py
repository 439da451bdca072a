"""Where a spec block goes in a file: right above its kernel (above `template <...>` too), as the
quick fix inserts it and as a proof or a search compiles it."""

from __future__ import annotations

from dataclasses import dataclass

from ..kernels import require_kernel
from ..source import SourceText


class NoSuchKernel(LookupError):
    pass


@dataclass(frozen=True)
class Placed:
    text: str  # the whole file with the block in place
    at: int  # byte offset of the block in `text`
    block: str  # what was inserted (the block and a newline)
    replaced: int = 0  # bytes of an existing block it replaced


def place_spec(text: str, kernel_name: str, block: str) -> Placed:
    """The file with `block` as the kernel's @fsr block: inserted above the definition, or in
    place of the block it has."""
    src = SourceText(text)
    kernel = require_kernel(src, kernel_name, NoSuchKernel)
    block = block.rstrip("\n")
    if kernel.spec is not None:
        s = kernel.spec.span
        new = src.slice(0, s.start_byte) + block + src.slice(s.end_byte, len(src.data))
        return Placed(new, s.start_byte, block, s.end_byte - s.start_byte)
    start = kernel.definition_span.start_byte
    head = src.slice(0, start)
    return Placed(head + block + "\n" + src.slice(start, len(src.data)), start, block + "\n")


def proof_text(text: str, kernel_name: str) -> str:
    """What a kernel's proof depends on: the file up to the end of its definition (its includes,
    macros and helpers, the block itself); host code after it is not compiled into the kernel."""
    src = SourceText(text)
    kernel = require_kernel(src, kernel_name, NoSuchKernel)
    return src.slice(0, kernel.definition_span.end_byte)
