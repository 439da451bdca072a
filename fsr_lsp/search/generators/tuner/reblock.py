"""A structural winner tuned further (issue 45 item 3): its block size halved and doubled, the
grid following, round after round from whichever variant leads. Only rewrites whose code reads
the block size from `blockDim` (a warp per row, the online softmax, the vector map) are
re-blocked: the others size shared arrays and loops by the block they were written for."""

from __future__ import annotations

import re

from ....kernels import Kernel
from ...proposal import Proposal, Tried
from ..structural.syntax import threads_within_launch_bounds

# generator -> the elements a thread its grid is written for (`cdiv(rows * 32, 256)`; `cdiv(N, 256 * 4)`)
TUNABLE = {"builtin:warp-per-row": (1,), "builtin:online-softmax": (1,), "builtin:vector-map": (4, 8)}
_BLOCK = re.compile(r"^block\s*=\s*(\d+)\s*$", re.M)
_GRID = re.compile(r'^grid\s*=\s*"([^"\n]*)"\s*$', re.M)


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
        expr = _regrid(grid.group(1), old, new, TUNABLE[leader.generator])
        if expr is None:
            continue
        source = leader.source[:grid.start(1)] + expr + leader.source[grid.end(1):]
        source = _BLOCK.sub(f"block = {new}", source, count=1)
        note = re.sub(r"; block \d+ a block$", "", leader.note or leader.generator) + f"; block {new} a block"
        p = Proposal(source=source, generator=leader.generator, note=note, flags=leader.flags, round=round_)
        if p.key not in tried:
            out.append(p)
    return out


_CDIV = re.compile(r"\s*cdiv\((.+),\s*(\d+)\s*\)\s*")


def _regrid(expr: str, old: int, new: int, per_thread: tuple[int, ...]) -> str | None:
    """`cdiv(X, old * k)` as `cdiv(X, new * k)` for the rewrite's k elements a thread: only the
    divisor changes (a literal inside X, a size of 256 rows say, stays), or None for any other grid."""
    m = _CDIV.fullmatch(expr)
    if m is None:
        return None
    divisor = int(m.group(2))
    for per in per_thread:
        if divisor == old * per:
            return f"cdiv({m.group(1)}, {new * per})"
    return None
