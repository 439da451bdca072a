"""Find every `__global__` kernel in a CUDA source text."""

from __future__ import annotations

import re

from ..source import SourceText
from .fallback import scan_kernel
from .lexical import macro_aliases, mask
from .model import Kernel
from .treesitter import kernels_from_tree, parse


def discover_kernels(source: str | SourceText) -> list[Kernel]:
    """All kernels in file order: tree-sitter's, plus those only the token scanner finds
    (macro-declared kernels, kernels hidden in ERROR nodes by an edit in progress)."""
    src = source if isinstance(source, SourceText) else SourceText(source)
    masked = mask(src.data)
    words = [b"__global__", *sorted(macro_aliases(src.data))]
    pattern = re.compile(rb"\b(?:" + b"|".join(re.escape(w) for w in words) + rb")\b")
    markers = [(m.start(), m.end()) for m in pattern.finditer(masked)]
    # A definition that swallowed another kernel's marker was mis-parsed around an edit in
    # progress: leave both to the scanner.
    found = [k for k in kernels_from_tree(src, parse(src.data))
             if sum(k.definition_span.start_byte <= m < k.definition_span.end_byte for m, _ in markers) <= 1]
    for i, (start, end) in enumerate(markers):
        if any(k.definition_span.start_byte <= start < k.definition_span.end_byte for k in found):
            continue
        limit = markers[i + 1][0] if i + 1 < len(markers) else len(masked)
        kernel = scan_kernel(src, masked, start, end, limit)
        if kernel is not None:
            found.append(kernel)
    found.sort(key=lambda k: k.span.start_byte)
    return found


def find_kernel(source: str | SourceText, name: str) -> Kernel | None:
    return next((k for k in discover_kernels(source) if k.name == name), None)


def kernel_at(source: str | SourceText, byte: int) -> Kernel | None:
    """The kernel whose definition (or spec comment) contains a byte offset."""
    return next((k for k in discover_kernels(source) if k.span.start_byte <= byte <= k.span.end_byte), None)
