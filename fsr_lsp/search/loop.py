"""Feature Search and Reinforcement: rounds of proposals, verified and timed, the fastest
seeding the next round, failures sent back to be fixed.

FSR (N > 1 candidates a round) and staged refinement of one evolving kernel (N = 1) are the
same loop; the generator reads `ctx.mode`. The loop only sees the evaluator through `Bench`
(the GPU one compiles in parallel and times one at a time; tests use a scripted one).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable

from ..evaluator.job.plan import build_plans
from ..evaluator.profile.profile import ProfileFacts
from ..evaluator.records import EvalResult
from ..kernels import find_kernel, kernel_source
from ..kernels.aliases import with_included_aliases
from ..kernels.packs import expanded
from ..specs.defines import with_defines
from ..source import SourceText
from ..specs import parse_spec, render_spec
from .config import SearchConfig
from .context import RoundContext
from .costs import RoundCosts, TimedConfirms
from .deadline import Deadline
from .early_confirm import EarlyConfirm
from .generators.base import Generator, GeneratorError
from .outcome import Bench, Progress, SearchOutcome, ranked
from .proposal import Proposal, Tried
from .store import HistoryStore, search_key
from .verdict import choose_winner, first_win_seconds, promote
from .workload import classify

__all__ = ["Bench", "Deadline", "Progress", "SearchControl", "SearchOutcome", "first_win_seconds", "ranked",
           "run_search"]

log = logging.getLogger("fsr_lsp.search")
FIXABLE = ("wrong", "compile_error", "rejected", "crashed", "timeout")


@dataclass(frozen=True)
class SearchControl:
    """How the caller steers a search beyond its config: progress reports, a cancel, when the work
    began (the deadline counts from there), and where the kernel's headers are (their typedefs
    type it as the bench compiles it)."""

    on_progress: Callable[[Progress], None] | None = None
    cancel: threading.Event | None = None
    started: float | None = None  # on the monotonic clock; None: now
    include_dirs: tuple[str, ...] = ()


def run_search(source: str, file: str, kernel_name: str, config: SearchConfig, bench: Bench, generator: Generator,
               store: HistoryStore | None = None, control: SearchControl | None = None) -> SearchOutcome:
    """The search, ended by its rounds, its target, a cancel, or its deadline (`time_budget`
    seconds after it starts, or after `control.started` where the caller began the work earlier):
    at the deadline whatever is in flight stops (the bench's GPU work, model requests,
    sanitizers) and the fastest fully verified candidate so far is the result. The kernel's
    element types are read as the bench compiles it: typedefs of the headers found in
    `control.include_dirs`, with the bench's `-D` flags."""
    control = control or SearchControl()
    started = time.monotonic() if control.started is None else control.started
    cancel = control.cancel or threading.Event()
    deadline = Deadline(started + config.time_budget, cancel, bench.interrupt)
    search = _Search(config, bench, generator, store, control.on_progress or (lambda _: None), cancel, deadline)
    try:
        return search.ready(source, file, kernel_name, control.include_dirs) or search.run()
    finally:
        deadline.close()


class _Search:
    """One search's state, and its steps: made ready (the kernel, its spec, the original measured,
    the history loaded), then its rounds (each proposed, evaluated, fixed, its leaders confirmed),
    then the winner chosen."""

    def __init__(self, config: SearchConfig, bench: Bench, generator: Generator, store: HistoryStore | None,
                 report: Callable[[Progress], None], cancel: threading.Event, deadline: Deadline) -> None:
        self.config, self.bench, self.generator, self.store = config, bench, generator, store
        self.report, self.cancel, self.deadline = report, cancel, deadline
        self.started = deadline.at - config.time_budget
        self.history: list[Tried] = []
        self.search_id: int | None = None
        self.costs = RoundCosts()
        self.early = EarlyConfirm(bench, config, self.started, lambda r: self.say(r, "a leader verified"))

    # ------------------------------------------------------------ ready

    def ready(self, source: str, file: str, kernel_name: str, include_dirs: tuple[str, ...]) -> SearchOutcome | None:
        """The kernel read as the bench compiles it, the original measured, the history loaded; an
        outcome where the search cannot go on."""
        config, bench = self.config, self.bench
        src = SourceText(source)
        kernel = find_kernel(src, kernel_name)
        if kernel is None:
            return SearchOutcome("failed", f"no kernel named {kernel_name}")
        kernel = with_included_aliases(kernel, source, include_dirs, with_defines(bench.flags, kernel))  # as the evaluator does
        spec_result = parse_spec(src, kernel)
        if spec_result.spec is None:
            why = "; ".join(p.message for p in spec_result.problems) or "no spec"
            return SearchOutcome("failed", f"{kernel_name} cannot be searched: {why}")
        self.spec = spec = spec_result.spec
        self.kernel = kernel = expanded(kernel, spec.template, source)  # its parameters as the spec instantiates it
        self.texts = texts = kernel_source(src, kernel)
        self.kernel_text = texts.unit
        self.bench_plan = build_plans(kernel, spec)[-1]
        likely = getattr(self.generator, "likely_first", None)
        if likely is not None:  # compiled while the GPU worker starts, where the bench can
            bench.compile_ahead(likely(kernel, spec, texts.definition))
        self.report(Progress(0, config.rounds, 0, 0, None, "measuring the original"))
        self.baseline = baseline = bench.baseline()
        if not baseline.verified:
            if self.deadline.passed:
                return SearchOutcome("no_win", f"the time budget ({config.time_budget:g} s) ran out while measuring the "
                                               "original", baseline=baseline, seconds=time.monotonic() - self.started,
                                     stopped="time")
            return SearchOutcome("failed", f"the original cannot be the oracle: {baseline.message}", baseline=baseline,
                                 seconds=time.monotonic() - self.started)
        self.gpu = bench.gpu
        self.key = search_key(self.kernel_text, self.gpu.name, bench.flags)
        self.file, self.kernel_name = os.path.abspath(file), kernel_name
        if self.store:
            self.history = self.store.load(self.key)
            self.search_id = self.store.start_search(self.key, self.file, kernel_name, self.gpu.name,
                                                     _config_record(config))
        self.spec_text = texts.spec or render_spec(spec)
        self.outcome = SearchOutcome("no_win", "", baseline=baseline, search_key=self.key, original=self.kernel_text)
        self.profiler = Profiler(bench, self.outcome) if getattr(self.generator, "wants_profile", False) else None
        return None

    # ------------------------------------------------------------ the rounds

    def run(self) -> SearchOutcome:
        """The rounds, until one says the search stops, or the deadline or a cancel comes first."""
        for round_ in range(self.config.rounds):
            stopped = "time" if self.deadline.passed else "cancelled" if self.cancel.is_set() else self.round(round_)
            if stopped:
                return self.finish(stopped)
        return self.finish("rounds")

    def round(self, round_: int) -> str:
        """One round: proposed, evaluated, failures sent back to be fixed, leaders confirmed; why
        the search stops after it ('' to go on)."""
        config, outcome = self.config, self.outcome
        outcome.rounds = round_ + 1
        ctx = self.context(round_)
        self.say(round_, "generating")
        try:
            proposals = [_stamp(p, round_) for p in self.generator.propose(ctx, config.candidates)]
        except GeneratorError as e:
            outcome.problem = f"the generator failed: {e}"
            return "generator"
        if not proposals:
            return "exhausted"
        fitting = self.costs.fitting(proposals, self.deadline.at - time.monotonic())
        if len(fitting) < len(proposals):  # the rest would leave the round's leader unconfirmed at the deadline
            log.debug("round %d: %d of %d proposals fit before the deadline", round_ + 1, len(fitting), len(proposals))
            proposals = fitting
        self.say(round_, f"evaluating {len(proposals)} candidates")
        log.debug("round %d: evaluating %d", round_ + 1, len(proposals))
        batch = self.evaluate(proposals)
        batch += _fixes(batch, ctx, self.generator, config, self.evaluate, self.cancel, self.started)
        self.join_early()
        log.debug("round %d: evaluated", round_ + 1)
        self.history += batch
        outcome.tried += batch
        if not self.cancel.is_set():
            self.say(round_, "confirming the leaders")
            promote(self.history, TimedConfirms(self.bench, self.costs), config, round_, self.record, self.started,
                    lambda r=round_: self.say(r, "a leader verified"))
        best = _best_speedup(self.history, config)
        self.say(round_, "done", f"round {round_ + 1} done")
        if config.target_speedup and best and best >= config.target_speedup:
            return "target"
        return ""

    def say(self, round_: int, what: str, message: str = "") -> None:
        """Progress: where the search is, with what it has found so far."""
        self.report(Progress(round_ + 1, self.config.rounds, len(self.outcome.tried), _verified(self.outcome.tried),
                             _best_speedup(self.history, self.config), message or f"round {round_ + 1}: {what}"))

    def context(self, round_: int) -> RoundContext:
        """What the generator sees this round."""
        config = self.config
        ctx = RoundContext(kernel=self.kernel, kernel_text=self.kernel_text, spec=self.spec, spec_text=self.spec_text,
                           bench=self.bench_plan, gpu=self.gpu, baseline=self.baseline,
                           workload=classify(self.kernel_text, self.bench_plan), round=round_, rounds=config.rounds,
                           mode=config.mode, history=list(self.history), seeds=ranked(self.history)[: config.seeds],
                           definition_text=self.texts.definition, declarations=self.texts.declarations,
                           screen=self.bench.screen if self.bench.screens else None,
                           deadline=self.started + config.time_budget, cancel=self.cancel, focus=config.focus,
                           launch_fixed=config.launch_fixed, note=lambda m: self.say(round_, m),
                           reserve=self.costs.reserve(config.candidates))
        if self.profiler and round_ >= 1:  # profiler facts help after the first round, not in it
            self.say(round_, "profiling the leader")
            ctx.profile, ctx.profile_note = self.profiler.leader(ctx.seeds[0] if ctx.seeds else None)
        return ctx

    def evaluate(self, proposals: list[Proposal]) -> list[Tried]:
        """Each proposal's verdict: from the store where it was evaluated before, else the bench's."""
        store, started = self.store, self.started
        tried: list[Tried | None] = []
        fresh = []
        for p in proposals:
            stored = store.lookup(self.key, p) if store else None
            tried.append(Tried(p, stored, reused=True) if stored else None)
            if stored is None:
                fresh.append(p)
        arrived: dict[int, Tried] = {}

        def on_result(i: int, result: EvalResult) -> None:
            """Stored the moment it arrives: a search killed mid-batch loses nothing evaluated; the
            search's first clear win confirmed at once (early_confirm.py)."""
            t = arrived[i] = Tried(fresh[i], result, found_at=time.monotonic() - started)
            self.record(t)
            self.early.offer(t, self.history, self.outcome.rounds - 1)

        began = time.monotonic()
        results = iter(self.bench.evaluate(fresh, on_result=on_result)) if fresh else iter(())
        if not self.deadline.passed and not self.cancel.is_set():  # a batch cut short tells nothing of its cost
            self.costs.evaluated(len(fresh), time.monotonic() - began)
        index = iter(range(len(fresh)))
        out = []
        for p, t in zip(proposals, tried):
            if t is None:
                i = next(index)
                result = next(results)  # the verdict `arrived` holds, where it came as it arrived
                t = arrived.get(i) or Tried(p, result, found_at=time.monotonic() - started)
                self.record(t)  # again, now with what the batch added (cheap: one row replaced)
            else:
                t.found_at = time.monotonic() - started
            out.append(t)
        return out

    def join_early(self) -> None:
        """The early confirmation's end waited for, its candidate recorded (the store is this
        thread's)."""
        t = self.early.join()
        if t is not None:
            self.record(t)

    def record(self, t: Tried) -> None:
        if self.store:
            self.store.record(self.key, self.search_id, self.file, self.kernel_name, t)

    # ------------------------------------------------------------ the end

    def finish(self, stopped: str) -> SearchOutcome:
        """The winner chosen (only a fully verified one), the search's end stored."""
        outcome = self.outcome
        self.join_early()  # interrupted by the deadline or a cancel where either came
        if self.deadline.passed:
            stopped = "time"
        elif self.cancel.is_set():
            stopped = "cancelled"
        outcome.stopped = stopped
        log.debug("choosing the winner (stopped: %s)", stopped)
        choose_winner(outcome, self.history, self.bench, self.bench_plan, self.config, self.cancel, self.started,
                      self.gpu)
        outcome.seconds = time.monotonic() - self.started
        if self.store and self.search_id is not None:
            self.store.finish_search(self.search_id, {"status": outcome.status, "message": outcome.message,
                                                      "stopped": stopped,
                                                      "best": outcome.best.proposal.key if outcome.best else None})
        return outcome


class Profiler:
    """Nsight Compute facts about each round's leader (once per leader), where the bench can
    profile; the first reason there are none becomes a note for the user."""

    def __init__(self, bench: Bench, outcome: SearchOutcome) -> None:
        self.bench, self.outcome = bench, outcome
        self._facts: dict[str, tuple[ProfileFacts | None, str]] = {}

    def leader(self, leader: Tried | None) -> tuple[ProfileFacts | None, str]:
        if not self.bench.profiles:
            return None, ""
        key = leader.proposal.key if leader else ""
        if key not in self._facts:
            profiled = self.bench.profile(leader.proposal if leader else None)
            self._facts[key] = (profiled.facts, profiled.note)
            if profiled.note and profiled.note not in self.outcome.notes:
                self.outcome.notes.append(profiled.note)
        return self._facts[key]


def _stamp(p: Proposal, round_: int) -> Proposal:
    from dataclasses import replace

    return p if p.round == round_ else replace(p, round=round_)


def _fixes(batch: list[Tried], ctx: RoundContext, generator: Generator, config: SearchConfig,
           evaluate: Callable[[list[Proposal]], list[Tried]], cancel: threading.Event, started: float) -> list[Tried]:
    """Send failures back to the generator, a bounded number of times each."""
    fixed: list[Tried] = []
    pending = [t for t in batch if t.result.status in FIXABLE]
    for _ in range(config.fix_attempts):
        proposals = []
        for t in pending:
            if cancel.is_set() or time.monotonic() - started > config.time_budget:
                return fixed
            try:
                p = generator.fix(ctx, t)
            except GeneratorError:
                return fixed
            if p is not None:
                proposals.append(_stamp(p, ctx.round))
        if not proposals:
            break
        results = evaluate(proposals)
        fixed += results
        pending = [t for t in results if t.result.status in FIXABLE]
    return fixed


def _verified(tried: list[Tried]) -> int:
    return sum(t.verified for t in tried)


def _best_speedup(tried: list[Tried], config: SearchConfig) -> float | None:
    """The fastest fully verified so far (the sanitizers passed too, when they are on): what
    progress shows as the best."""
    r = [t for t in ranked(tried) if t.result.confirmed or not config.sanitize_winner]
    return r[0].result.speedup if r else None


def _config_record(config: SearchConfig) -> dict:
    return asdict(config)  # names the key's environment variable, never holds the key
