"""Rewrites that need no LLM, so the tool is useful out of the box: a tuner.

Its space (tuning/space.py) holds every legal launch shape and the code changes that keep a
kernel's meaning. Where the bench can screen (time a configuration cheaply at the bench size,
checking the outputs there), round 0 sweeps every launch shape, then anneals over all knobs
together, and proposes the fastest few for the full verification; later rounds anneal on from
the verified leaders. Without screening, each round proposes the untried neighbours of the
leader, one knob at a time. Structural rewrites (a new split of the work) go first in round 0,
ranked by their screened time where the bench can screen, the ones that lose on this GPU
dropped. Screening results never leave the tuner: only fully verified candidates seed rounds
or reach the history.
"""

from __future__ import annotations

import hashlib
import time

from ....kernels import Kernel
from ....specs import Spec
from ...context import RoundContext
from ...proposal import Proposal, Tried
from ..screening import screened_order
from ..structural import structural_proposals
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
FIRST_ROUND_PROPOSALS = 2
SWEEP_SHARE = 0.5  # of a round's screening time for the sweep of launch shapes at most
VERIFY_SHARE = 0.4  # of the search's remaining time left for the full verification of what screening found
BATCH = 16  # configurations compiled in parallel and screened together


class BuiltinGenerator:
    name = "builtin"

    def __init__(self, budget: int = ANNEAL_BUDGET, seconds: float = ROUND_SECONDS, batch: int = BATCH) -> None:
        self.budget, self.seconds, self.batch = budget, seconds, batch
        self._configs: dict[str, Config] = {}  # proposal key -> configuration
        self._tuners: dict[str, tuple[Space, Annealer]] = {}
        self.screened = 0  # configurations screened so far (all kernels)
        self._losers: dict[str, str] = {}  # structural rewrites that screened slower than the original: key -> note

    # ------------------------------------------------------------ the generator interface

    def likely_first(self, kernel: Kernel, spec: Spec, definition: str) -> list[Proposal]:
        """What round 0 will likely propose, known before the GPU is: the structural rewrites
        (compiled ahead while the worker starts)."""
        return structural_proposals(kernel, spec, definition)

    def propose(self, ctx: RoundContext, n: int) -> list[Proposal]:
        tried = {t.proposal.key for t in ctx.history} | set(self._losers)
        # A new split of the work first, where one applies: it is verified before any tuning
        structural = [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, ctx.round, ctx.gpu)
                      if p.key not in tried]
        if structural and ctx.round == 0:  # alone: its verdict, and a first win, come without waiting for tuning
            if ctx.screen is None:
                return structural[:n]
            structural = screened_order(ctx, structural, self._losers)
            if not structural:  # every one screened slower than the original: round 0 tunes instead
                return self._tuned(ctx, n, tried | set(self._losers))
            return structural[:n]
        # the structural leader re-blocked (tuned further), ahead of the tuner's configurations of the original
        structural += reblocked(ctx.kernel, ctx.seeds, tried, ctx.round)[: max(0, n - len(structural))]
        return structural + self._tuned(ctx, max(0, n - len(structural)) if structural else n, tried)

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
        if ctx.deadline is not None:
            deadline = min(deadline, now + max(0.0, ctx.deadline - now) * (1 - VERIFY_SHARE))
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
            passed = [r.speedup for r in results if r.passed_screen and r.speedup]
            best = f", best of this batch {max(passed):.2f}x" if passed else ""
            ctx.note(f"tuning: {self.screened} configurations screened{best}")
        for i, r in zip(index, results):
            if r.status == "cancelled":
                return times[:i]  # shorter than asked: the tuner stops
            if r.passed_screen and r.candidate_time is not None and r.original_time is not None:
                # Relative to the original timed beside it: runs on a busy GPU stay comparable.
                times[i] = r.candidate_time.median_ms / r.original_time.median_ms * ctx.baseline_ms
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
