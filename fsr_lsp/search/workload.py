"""The workload class of a kernel, which picks the optimisation prompt in staged refinement.

A heuristic over the kernel's code and its spec's buffer sizes; "other" when unsure.
"""

from __future__ import annotations

import re
from typing import Literal

from ..evaluator.records import SizePlan

Workload = Literal["elementwise", "reduction", "rowwise", "gemm", "stencil", "other"]
_LOOP = re.compile(r"\bfor\s*\(")


def classify(kernel_text: str, bench: SizePlan) -> Workload:
    body = kernel_text[kernel_text.find("{"):]
    buffers = [a for a in bench.args if a.kind == "buffer"]
    ins = [a.numel for a in buffers if a.direction == "in"]
    outs = [a.numel for a in buffers if a.direction != "in"]
    biggest_in = max(ins, default=0)
    smallest_out = min(outs, default=0)
    loops = len(_LOOP.findall(body))
    if outs and biggest_in and max(outs) * 16 <= biggest_in or "atomicAdd" in body and smallest_out <= 64:
        return "reduction"
    if loops and re.search(r"\+=\s*[^;]*\[[^\]]*\]\s*\*\s*[^;]*\[", body) and len(ins) >= 2:
        return "gemm"
    if re.search(r"\[[^\]]*[+-]\s*1\s*\]", body) and re.search(r"\[[^\]]*\b\w+\s*[+-]\s*\w+\s*\]", body) and not loops:
        return "stencil"
    if loops and any(w in body for w in ("expf", "exp(", "__expf", "fmaxf", "rsqrtf", "sqrtf")):
        return "rowwise"
    if loops and outs and biggest_in and max(outs) == biggest_in:
        return "rowwise"
    if not loops:
        return "elementwise"
    return "other"
