"""Structural rewrites: a new split of the work, each a transform behind a recogniser of the
pattern it applies to (one thread walking a row -> a warp per row). A transform that does not
apply says nothing; one that applies gives a candidate verified like any other, its label
saying what it did. They go first in a search: where one applies, it is the likeliest big win.
"""

from __future__ import annotations

from ....evaluator.records import GpuInfo
from ....kernels import Kernel
from ....specs import Spec
from ...proposal import Proposal
from .registry import REWRITES, recognised

__all__ = ["REWRITES", "patterns", "structural_proposals"]


def patterns(kernel: Kernel, spec: Spec, definition: str) -> list[str]:
    """What the recognisers found, in words a model can act on (for its prompt)."""
    return [rewrite.line(found) for rewrite, found in recognised(kernel, spec, definition) if rewrite.line]


def structural_proposals(kernel: Kernel, spec: Spec, definition: str, round_: int = 0,
                         gpu: GpuInfo | None = None, launch_fixed: bool = False) -> list[Proposal]:
    """Every structural rewrite that applies; `gpu`, where known, sizes those whose launch
    depends on it (a grid of one wave); `launch_fixed`: the program's launch cannot follow a new
    one, so the variants that keep it are proposed too."""
    return [p for rewrite, found in recognised(kernel, spec, definition, gpu, launch_fixed)
            for p in rewrite.candidates(found, spec, gpu, round_)]
