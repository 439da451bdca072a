"""A verified tiled product refined further: its neighbours (each tile size halved or doubled,
buffering, vectors, padding, a register cap) screened, the climb moving to the fastest while
one screens faster, and the few that screened faster than the leader proposed for the full
verification. A configuration that screens no faster than the leader is never verified: its
time would buy nothing.

Without a screen (a bench that cannot take one), the neighbours the space's prior ranks first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ...context import RoundContext
from ...proposal import Proposal, Tried
from ..screening import screened_ms
from ..structural.matmul.product import Product
from ..structural.matmul.tile_space import TileConfig, prior, valid
from ..structural.tiles import Sizes, tile_proposal

STEPS = 4  # climbs a round at most
STEP_GAIN = 0.01  # a neighbour must screen this much faster to move the climb
ROUND_SHARE = 0.3  # of the search's remaining time a round's climb may spend screening


@dataclass
class Family:
    """A recognised product and what is known of its configurations this search."""

    product: Product
    sizes: Sizes
    sms: int
    configs: dict[str, TileConfig] = field(default_factory=dict)  # proposal key -> configuration
    screened: dict[TileConfig, float | None] = field(default_factory=dict)  # ms at the bench size (None: failed)

    def register(self, c: TileConfig, p: Proposal) -> None:
        self.configs[p.key] = c

    def neighbours(self, c: TileConfig) -> list[TileConfig]:
        """The valid neighbours the prior does not expect to spill, likeliest fastest first."""
        e, s = self.sizes.element, self.sizes
        scored = {n: prior(n, s.p, s.q, s.batch, self.sms, e) for n in c.neighbours() if valid(n, e)}
        return sorted((n for n, score in scored.items() if score < float("inf")), key=lambda n: (scored[n], n))


def climb(ctx: RoundContext, family: Family, leader: Tried, tried: set[str], n: int) -> list[Proposal]:
    """Up to `n` configurations near the leader's, each screened faster than the leader (or, with
    no screen, the prior's first neighbours), none tried before."""
    start = family.configs.get(leader.proposal.key)
    if start is None or n <= 0:
        return []
    def proposal(c: TileConfig) -> Proposal:
        return tile_proposal(family.product, c, ctx.round, parent=leader.proposal.key)

    if ctx.screen is None:
        fresh = [(c, p) for c in family.neighbours(start) if (p := proposal(c)).key not in tried][:n]
        for c, p in fresh:
            family.register(c, p)
        return [p for _, p in fresh]
    deadline = time.monotonic() + max(0.0, (ctx.deadline or time.monotonic()) - time.monotonic()) * ROUND_SHARE
    _screen(ctx, family, [start] + family.neighbours(start), proposal)
    current = start
    for _ in range(STEPS):
        if time.monotonic() > deadline or (ctx.cancel is not None and ctx.cancel.is_set()):
            break
        best = _fastest(family)
        here = family.screened.get(current)
        if best is None or here is None or best == current or family.screened[best] >= here * (1 - STEP_GAIN):  # type: ignore[operator]
            break
        current = best
        _screen(ctx, family, family.neighbours(current), proposal)
    leader_ms = family.screened.get(start)
    out = []
    for c, ms in sorted(((c, ms) for c, ms in family.screened.items() if ms is not None), key=lambda x: x[1]):
        if leader_ms is not None and ms >= leader_ms * (1 - STEP_GAIN):
            break  # no faster than the leader: not worth a verification
        p = proposal(c)
        if p.key not in tried:
            family.register(c, p)
            out.append(p)
        if len(out) == n:
            break
    if ctx.note:
        ctx.note(f"tiled product: {len(family.screened)} configurations screened, "
                 f"{len(out)} faster than the leader proposed")
    return out


def _screen(ctx: RoundContext, family: Family, configs: list[TileConfig],
            proposal: Callable[[TileConfig], Proposal]) -> None:
    todo = [c for c in dict.fromkeys(configs) if c not in family.screened]
    if not todo or ctx.screen is None:
        return
    results = ctx.screen([proposal(c) for c in todo])
    for c, r in zip(todo, results):
        if r.status == "cancelled":
            return
        family.screened[c] = screened_ms(r, ctx.baseline_ms)


def _fastest(family: Family) -> TileConfig | None:
    timed = [(ms, c) for c, ms in family.screened.items() if ms is not None]
    return min(timed)[1] if timed else None
