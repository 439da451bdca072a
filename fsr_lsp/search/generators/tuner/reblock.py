"""A structural winner tuned further (issue 45 item 3): its block size halved and doubled, the
grid following, round after round from whichever variant leads. Only rewrites whose code reads
the block size from `blockDim` (a warp per row, the online softmax, the vector map) are
re-blocked: the others size shared arrays and loops by the block they were written for."""

from __future__ import annotations

import re

from ....kernels import Kernel
from ....specs.expr import has_literal, replace_literal
from ...proposal import Proposal, Tried
from ..structural.syntax import threads_within_launch_bounds

TUNABLE = ("builtin:warp-per-row", "builtin:online-softmax", "builtin:vector-map")
_BLOCK = re.compile(r"^block\s*=\s*(\d+)\s*$", re.M)
_GRID = re.compile(r'^grid\s*=\s*"([^"\n]*)"\s*$', re.M)
PER_THREAD = (1, 2, 4, 8)  # a grid written as threads x elements a thread (`cdiv(N, 1024)` for 256 x 4)


def reblocked(kernel: Kernel, leaders: list[Tried], tried: set[str], round_: int) -> list[Proposal]:
    """The verified structural leader (the first of `leaders` that is one) with half and twice
    its block, where its launch is a 1-D block of a literal size in an `@fsr` block of its own and
    its grid names that size (or that size times the elements a thread); none already tried."""
    leader = next((t.proposal for t in leaders if t.verified and t.proposal.generator in TUNABLE), None)
    if leader is None:
        return []
    block, grid = _BLOCK.search(leader.source), _GRID.search(leader.source)
    if block is None or grid is None:
        return []
    old = int(block.group(1))
    out = []
    for new in (old // 2, old * 2):
        if not 64 <= new <= 1024 or threads_within_launch_bounds(kernel, new) != new:
            continue
        expr = _regrid(grid.group(1), old, new)
        if expr is None:
            continue
        source = leader.source[:grid.start(1)] + expr + leader.source[grid.end(1):]
        source = _BLOCK.sub(f"block = {new}", source, count=1)
        note = re.sub(r"; block \d+ a block$", "", leader.note or leader.generator) + f"; block {new} a block"
        p = Proposal(source=source, generator=leader.generator, note=note, flags=leader.flags, round=round_)
        if p.key not in tried:
            out.append(p)
    return out


def _regrid(expr: str, old: int, new: int) -> str | None:
    """The grid for `new` threads a block where it was written for `old` (its literal, or the
    literal of `old` times the elements a thread), or None where the grid does not name it."""
    for per in PER_THREAD:
        if has_literal(expr, old * per):
            return str(replace_literal(expr, old * per, new * per))
    return None
