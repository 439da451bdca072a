"""Kernels that read the GPU's clock: latency and throughput microbenchmarks store
`clock64()` differences as their result. Two runs never give the same clocks, so no spec can
check what such a kernel computes, and no rewrite of it can be verified: fsr says so by name
instead of failing a proof on it."""

from __future__ import annotations

import re

from ..source import SourceText
from .kernel import Kernel
from .lexical import lex

_CALLS = re.compile(rb"\b(clock64|clock|__globaltimer|globaltimer)\s*\(")
_ASM = re.compile(rb"%(clock64|clock|globaltimer(?:_lo|_hi)?)\b")  # inline PTX: mov.u64 %0, %clock64;


def clock_read(src: SourceText, kernel: Kernel) -> str | None:
    """Where the kernel's body reads a clock (`clock64() at line 23`), or None. Only its own
    body: a clock read in a helper it calls is not seen."""
    span = kernel.definition_span
    data = src.data[span.start_byte:span.end_byte]
    masked = lex(data).masked  # comments and strings blanked: a commented-out clock() is no read
    found = _CALLS.search(masked)
    if found is None:
        found = next((m for m in _ASM.finditer(data) if _in_asm(masked, m.start())), None)
    if found is None:
        return None
    line = src.data.count(b"\n", 0, span.start_byte + found.start()) + 1
    name = found.group(1).decode()
    return f"{name}() at line {line}" if found.re is _CALLS else f"%{name} (inline PTX) at line {line}"


def _in_asm(masked: bytes, at: int) -> bool:
    """Whether offset `at` (inside a string) belongs to an `asm(...)` statement."""
    before = masked[max(0, at - 400):at]
    return re.search(rb"\basm\s*(?:volatile|__volatile__)?\s*\([^;]*$", before) is not None
