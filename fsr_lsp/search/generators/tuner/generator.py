"""Rewrites that need no LLM, so the tool is useful out of the box: a tuner.

Its space (tuning/space.py) holds every legal launch shape and the code changes that keep a
kernel's meaning. Where the bench can screen (time a configuration cheaply at the bench size,
checking the outputs there), round 0 sweeps every launch shape, then anneals over all knobs
together, and proposes the fastest few for the full verification; later rounds anneal on from
the verified leaders. Without screening, each round proposes the untried neighbours of the
leader, one knob at a time. Structural rewrites (a new split of the work) go first in round 0,
ranked by their screened time where the bench can screen, the ones that lose on this GPU
dropped, and only the fastest (and one near it) verified at once. Later rounds refine the
verified leader first: a tiled product climbs through its configurations (climb.py), a row
rewrite is re-blocked (reblock.py); once a rewrite of the work is LEADER_AHEAD ahead, the
original's own shapes are not tuned again. Screening results never leave the tuner: only fully
verified candidates seed rounds or reach the history.
"""

from __future__ import annotations

import hashlib
import time

from ....kernels import Kernel
from ....specs import Spec
from ...context import RoundContext
from ...proposal import Proposal, Tried
from ..screening import SCREEN_MARGIN, first_to_verify, screened_ms, screened_order
from ..structural import structural_proposals
from ..structural.tiles import bench_sizes, matrix_product, tiled_products
from .climb import Family, climb
from .reblock import reblocked
from .render import render
from .space import KNOBS, Config, Space, space_of
from .strategy import Annealer

ANNEAL_BUDGET = 64  # configurations screened per round after the sweep
ROUND_SECONDS = 40.0  # of screening per round at most
# The first round is short, so that a first verified win shows within seconds of the start: a
# second or so of screening (on an H200 a first win waits about 4 s for the worker to start),
# its two best configurations verified; later rounds screen longer.
FIRST_ROUND_SECONDS = 1.2
FIRST_ROUND_PROPOSALS = 2  # configurations of the original verified in round 0
SWEEP_SHARE = 0.5  # of a round's screening time for the sweep of launch shapes at most
VERIFY_SHARE = 0.4  # of the search's remaining time left for the full verification of what screening found
BATCH = 16  # configurations compiled in parallel and screened together
# A verified rewrite of the work this far ahead of the original takes every later round's budget:
# the original's block shapes and knobs are not tuned again (a 25x tile's search once spent two
# rounds verifying 3.7x shapes of a 275 ms original).
LEADER_AHEAD = 2.0


class BuiltinGenerator:
    name = "builtin"

    def __init__(self, budget: int = ANNEAL_BUDGET, seconds: float = ROUND_SECONDS, batch: int = BATCH) -> None:
        self.budget, self.seconds, self.batch = budget, seconds, batch
        self._configs: dict[str, Config] = {}  # proposal key -> configuration
        self._tuners: dict[str, tuple[Space, Annealer]] = {}
        self.screened = 0  # configurations screened so far (all kernels)
        self._losers: dict[str, str] = {}  # structural rewrites that screened slower than the original: key -> note
        self._families: dict[str, Family | None] = {}  # kernel -> its tiled-product family, where it is a product
        self._screened: dict[str, float] = {}  # structural rewrites' screened time, a share of the original's

    # ------------------------------------------------------------ the generator interface

    def likely_first(self, kernel: Kernel, spec: Spec, definition: str) -> list[Proposal]:
        """What round 0 will likely propose, known before the GPU is: the structural rewrites
        (compiled ahead while the worker starts)."""
        return structural_proposals(kernel, spec, definition)

    def propose(self, ctx: RoundContext, n: int) -> list[Proposal]:
        tried = {t.proposal.key for t in ctx.history} | set(self._losers)
        family = self._family(ctx)
        # A new split of the work first, where one applies: it is verified before any tuning
        structural = [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, ctx.round, ctx.gpu,
                                                     ctx.launch_fixed)
                      if p.key not in tried]
        if structural and ctx.round == 0:  # alone: its verdict, and a first win, come without waiting for tuning
            if ctx.screen is None:
                return structural[:n]
            structural = screened_order(ctx, structural, self._losers, self._screened)
            if not structural:  # every one screened slower than the original: round 0 tunes instead
                return self._tuned(ctx, n, tried | set(self._losers))
            return first_to_verify(ctx, structural, self._screened)[:n]
        # the structural leader tuned further, ahead of the tuner's configurations of the original
        leader = next((t for t in ctx.seeds if t.verified), None)
        if leader is not None and leader.result.speedup:  # what screened slower than the leader is not verified
            structural = [p for p in structural
                          if self._screened.get(p.key, 0.0) * leader.result.speedup < 1 - SCREEN_MARGIN]
        if family is not None and leader is not None and leader.proposal.key in family.configs:
            structural += climb(ctx, family, leader, tried, max(0, n - len(structural)))
        structural += reblocked(ctx.kernel, ctx.seeds, tried, ctx.round)[: max(0, n - len(structural))]
        if self._far_ahead(leader):  # the original's own shapes cannot catch it: no budget goes back to them
            return structural[:n]
        return structural + self._tuned(ctx, max(0, n - len(structural)) if structural else n, tried)

    def _far_ahead(self, leader: Tried | None) -> bool:
        """A verified rewrite of the work (no configuration of the original) at LEADER_AHEAD or more."""
        return leader is not None and leader.proposal.key not in self._configs and \
            (leader.result.speedup or 0.0) >= LEADER_AHEAD

    def _family(self, ctx: RoundContext) -> Family | None:
        """The kernel's tiled-product family (None: no matrix product), its round-0 guesses known."""
        key = hashlib.sha256((ctx.kernel_text + ctx.gpu.name).encode()).hexdigest()
        if key not in self._families:
            product = matrix_product(ctx.kernel, ctx.spec, ctx.definition)
            self._families[key] = None if product is None else \
                Family(product, bench_sizes(product, ctx.spec), ctx.gpu.sm_count or 132)
        family = self._families[key]
        if family is not None and ctx.round == 0:
            for c, p in tiled_products(ctx.kernel, ctx.spec, ctx.definition, ctx.gpu, ctx.round):
                family.register(c, p)
        return family

    def _tuned(self, ctx: RoundContext, n: int, tried: set[str]) -> list[Proposal]:
        if n <= 0:
            return []
        space, tuner = self._tuner(ctx)
        if ctx.screen is not None and ctx.round == 0:
            n = min(n, FIRST_ROUND_PROPOSALS)
        if ctx.screen is not None:
            self._explore(ctx, tuner)
            order = self._screened_order(tuner)
        else:
            order = self._unscreened_order(ctx, space)
        out: list[Proposal] = []
        for c in order:
            p = self._render(ctx, space, c)
            if p is None or p.key in tried or any(q.key == p.key for q in out):
                continue
            out.append(p)
            if len(out) >= n:
                break
        return out

    def fix(self, ctx: RoundContext, failed: Tried) -> Proposal | None:
        return None  # a deterministic rewrite that fails stays failed; the search moves on

    # ------------------------------------------------------------ with screening

    def _explore(self, ctx: RoundContext, tuner: Annealer) -> None:
        now = time.monotonic()
        deadline = now + (min(self.seconds, FIRST_ROUND_SECONDS) if ctx.round == 0 else self.seconds)
        if ctx.deadline is not None:  # what screening finds must still be checked and confirmed in time
            deadline = min(deadline, now + max(0.0, ctx.deadline - now) * (1 - VERIFY_SHARE), ctx.deadline - ctx.reserve)
        if ctx.round == 0 or not tuner.times:
            tuner.sweep(now + (deadline - now) * SWEEP_SHARE)  # the rest of the shapes: annealing's neighbours
        starts = [c for t in ctx.seeds if (c := self._configs.get(t.proposal.key)) is not None]
        tuner.anneal(self.budget, deadline, starts)
        guess = tuner.combined()
        if guess is not None:
            tuner.measure_all([guess], deadline)

    def _screened_order(self, tuner: Annealer) -> list[Config]:
        """Fastest screened first, but the fastest plain launch shape always among the first
        two: then the search never does worse than a block-size sweep, whatever the noise."""
        ranked = [c for c, _ in tuner.ranked()]
        shapes = [c for c in ranked if c.only_block() and c.block]
        if shapes and shapes[0] not in ranked[:2]:
            ranked.remove(shapes[0])
            ranked.insert(1, shapes[0])
        return ranked

    def _screen(self, ctx: RoundContext, space: Space, configs: list[Config]) -> list[float | None]:
        proposals: list[Proposal] = []
        index: list[int] = []
        for i, c in enumerate(configs):
            p = self._render(ctx, space, c)
            if p is not None:
                proposals.append(p)
                index.append(i)
        times: list[float | None] = [None] * len(configs)
        assert ctx.screen is not None
        results = ctx.screen(proposals) if proposals else []
        self.screened += len(results)
        if ctx.note:
            passed = [ctx.baseline_ms / ms for r in results if (ms := screened_ms(r, ctx.baseline_ms))]
            best = f", best of this batch {max(passed):.2f}x" if passed else ""
            ctx.note(f"tuning: {self.screened} configurations screened{best}")
        for i, r in zip(index, results):
            if r.status == "cancelled":
                return times[:i]  # shorter than asked: the tuner stops
            ms = screened_ms(r, ctx.baseline_ms)
            if ms is not None:
                times[i] = ms
            elif r.status == "unchanged":
                times[i] = ctx.baseline_ms
        return times

    # ------------------------------------------------------------ without screening

    def _unscreened_order(self, ctx: RoundContext, space: Space) -> list[Config]:
        """The untried neighbours of the verified leader (the original in round 0), taking
        each knob in turn so that one round covers every kind of change."""
        leader = next((c for t in ctx.seeds if (c := self._configs.get(t.proposal.key)) is not None), Config())
        by_knob: dict[str, list[Config]] = {}
        for c in space.neighbours(leader):
            knob = next(f for f in KNOBS if getattr(c, f) != getattr(leader, f))
            by_knob.setdefault(knob, []).append(c)
        order: list[Config] = []
        while any(by_knob.values()):
            for knob in list(by_knob):
                if by_knob[knob]:
                    order.append(by_knob[knob].pop(0))
        return order

    # ------------------------------------------------------------ shared

    def _tuner(self, ctx: RoundContext) -> tuple[Space, Annealer]:
        key = hashlib.sha256((ctx.kernel_text + ctx.gpu.name).encode()).hexdigest()
        if key not in self._tuners:
            space = space_of(ctx.kernel, ctx.spec, ctx.definition, ctx.gpu)
            self._tuners[key] = (space, Annealer(space, measure=lambda _: [], seed=int(key[:8], 16), batch=self.batch))
        space, tuner = self._tuners[key]
        tuner.measure = lambda cs: self._screen(ctx, space, cs)  # this round's context
        return space, tuner

    def _render(self, ctx: RoundContext, space: Space, c: Config) -> Proposal | None:
        if c == Config():
            return None  # the original itself
        p = render(c, space, ctx.kernel, ctx.spec, ctx.definition, ctx.gpu, ctx.round)
        if p is not None:
            self._configs[p.key] = c
        return p
