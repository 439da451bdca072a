"""Feature Search and Reinforcement: rounds of proposals, verified and timed, the fastest
seeding the next round, failures sent back to be fixed.

FSR (N > 1 candidates a round) and staged refinement of one evolving kernel (N = 1) are the
same loop; the generator reads `ctx.mode`. The loop only sees the evaluator through `Bench`
(the GPU one compiles in parallel and times one at a time; tests use a scripted one).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable, Literal, Protocol

import logging

from ..evaluator.plan import build_plans
from ..evaluator.profile import ProfileFacts
from ..evaluator.records import EvalResult, GpuInfo, SizePlan
from ..kernels import find_kernel, kernel_source
from ..source import SourceText
from ..specs import parse_spec, render_spec
from .config import SearchConfig
from .context import RoundContext
from .generators.base import Generator, GeneratorError
from .proposal import Proposal, Tried
from .store import HistoryStore, search_key
from .workload import classify

log = logging.getLogger("fsr_lsp.search")
FIXABLE = ("wrong", "compile_error", "rejected", "crashed", "timeout")
BANDWIDTH_SLACK = 0.8  # faster than 1/0.8 of the measured copy bandwidth allows is suspicious


class Bench(Protocol):
    gpu: GpuInfo
    flags: tuple[str, ...]  # compile flags of both kernels: part of the search's identity

    def baseline(self) -> EvalResult: ...

    def evaluate(self, proposals: list[Proposal]) -> list[EvalResult]: ...

    def confirm(self, proposal: Proposal) -> EvalResult:
        """Stricter verification of a winner: more seeds, and the sanitizers."""
        ...


@dataclass
class Progress:
    round: int
    rounds: int
    tried: int
    verified: int
    best_speedup: float | None
    message: str


@dataclass
class SearchOutcome:
    status: Literal["improved", "no_win", "cancelled", "failed"]
    message: str
    baseline: EvalResult | None = None
    best: Tried | None = None  # the verified win, when there is one
    best_tried: Tried | None = None  # the fastest verified candidate, win or not
    tried: list[Tried] = field(default_factory=list)  # this search's candidates (fixes included)
    rounds: int = 0
    seconds: float = 0.0
    stopped: str = ""  # rounds, time, target, cancelled, exhausted, generator
    search_key: str = ""
    problem: str = ""  # what stopped the search early (the generator failing), for the user
    notes: list[str] = field(default_factory=list)  # things the user should know (no profiler, ...)
    original: str = ""  # the kernel as searched (its @fsr block and definition), for diffs
    unconfirmed: Tried | None = None  # a faster win whose stricter verification the search did not finish


def run_search(source: str, file: str, kernel_name: str, config: SearchConfig, bench: Bench, generator: Generator,
               store: HistoryStore | None = None, on_progress: Callable[[Progress], None] | None = None,
               cancel: threading.Event | None = None, started: float | None = None) -> SearchOutcome:
    """The search, ended by its rounds, its target, a cancel, or its deadline (`time_budget`
    seconds after it starts, or after `started` on the monotonic clock when the caller began
    the work earlier): at the deadline whatever is in flight stops (the bench's GPU work, model
    requests, sanitizers) and the fastest fully verified candidate so far is the result."""
    started = time.monotonic() if started is None else started
    cancel = cancel or threading.Event()
    deadline = Deadline(started + config.time_budget, cancel, getattr(bench, "interrupt", None))
    try:
        return _search(source, file, kernel_name, config, bench, generator, store, on_progress, cancel, deadline)
    finally:
        deadline.close()


class Deadline:
    """At `at`, the search's cancel is set and the bench interrupted: every layer watches one or
    the other, so everything in flight stops within a second or two."""

    def __init__(self, at: float, cancel: threading.Event, interrupt: Callable[[], None] | None) -> None:
        self.at, self.cancel, self.interrupt = at, cancel, interrupt
        self.reached = threading.Event()
        self._timer = threading.Timer(max(0.0, at - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        log.debug("deadline reached: interrupting")
        self.reached.set()
        self.cancel.set()
        if self.interrupt is not None:
            self.interrupt()

    @property
    def passed(self) -> bool:
        return self.reached.is_set() or time.monotonic() >= self.at

    def close(self) -> None:
        self._timer.cancel()


def _search(source: str, file: str, kernel_name: str, config: SearchConfig, bench: Bench, generator: Generator,
            store: HistoryStore | None, on_progress: Callable[[Progress], None] | None, cancel: threading.Event,
            deadline: Deadline) -> SearchOutcome:
    started = deadline.at - config.time_budget
    report = on_progress or (lambda _: None)
    src = SourceText(source)
    kernel = find_kernel(src, kernel_name)
    if kernel is None:
        return SearchOutcome("failed", f"no kernel named {kernel_name}")
    spec_result = parse_spec(src, kernel)
    if spec_result.spec is None:
        why = "; ".join(p.message for p in spec_result.problems) or "no spec"
        return SearchOutcome("failed", f"{kernel_name} cannot be searched: {why}")
    spec = spec_result.spec
    texts = kernel_source(src, kernel)
    kernel_text = texts.unit
    bench_plan = build_plans(kernel, spec)[-1]
    report(Progress(0, config.rounds, 0, 0, None, "measuring the original"))
    baseline = bench.baseline()
    if not baseline.verified:
        if deadline.passed:
            return SearchOutcome("no_win", f"the time budget ({config.time_budget:g} s) ran out while measuring the "
                                           "original", baseline=baseline, seconds=time.monotonic() - started, stopped="time")
        return SearchOutcome("failed", f"the original cannot be the oracle: {baseline.message}", baseline=baseline,
                             seconds=time.monotonic() - started)
    gpu = bench.gpu
    key = search_key(kernel_text, gpu.name, bench.flags)
    history = store.load(key) if store else []
    search_id = store.start_search(key, os.path.abspath(file), kernel_name, gpu.name, _config_record(config)) if store else None
    spec_text = texts.spec or render_spec(spec)
    outcome = SearchOutcome("no_win", "", baseline=baseline, search_key=key, original=kernel_text)

    profiler = Profiler(bench, outcome) if getattr(generator, "wants_profile", False) else None

    def context(round_: int) -> RoundContext:
        ctx = RoundContext(kernel=kernel, kernel_text=kernel_text, spec=spec, spec_text=spec_text, bench=bench_plan,
                           gpu=gpu, baseline=baseline, workload=classify(kernel_text, bench_plan), round=round_,
                           rounds=config.rounds, mode=config.mode, history=list(history),
                           seeds=ranked(history)[: config.seeds], definition_text=texts.definition,
                           declarations=texts.declarations, screen=getattr(bench, "screen", None),
                           deadline=started + config.time_budget,
                           note=lambda m: report(Progress(round_ + 1, config.rounds, len(outcome.tried),
                                                          _verified(outcome.tried), _best_speedup(history, config),
                                                          f"round {round_ + 1}: {m}")))
        if profiler and round_ >= 1:  # profiler facts help after the first round, not in it
            report(Progress(round_ + 1, config.rounds, len(outcome.tried), _verified(outcome.tried),
                            _best_speedup(history, config), f"round {round_ + 1}: profiling the leader"))
            ctx.profile, ctx.profile_note = profiler.leader(ctx.seeds[0] if ctx.seeds else None)
        return ctx

    def evaluate(proposals: list[Proposal]) -> list[Tried]:
        tried: list[Tried] = []
        fresh = []
        for p in proposals:
            stored = store.lookup(key, p) if store else None
            tried.append(Tried(p, stored, reused=True) if stored else None)  # type: ignore[arg-type]
            if stored is None:
                fresh.append(p)
        results = iter(bench.evaluate(fresh)) if fresh else iter(())
        tried = [t if t is not None else Tried(p, next(results)) for p, t in zip(proposals, tried)]
        for t in tried:
            t.found_at = time.monotonic() - started
            if not t.reused:
                record(t)
        return tried

    def record(t: Tried) -> None:
        if store:
            store.record(key, search_id, os.path.abspath(file), kernel_name, t)

    stopped = "rounds"
    for round_ in range(config.rounds):
        if deadline.passed:
            stopped = "time"
            break
        if cancel.is_set():
            stopped = "cancelled"
            break
        outcome.rounds = round_ + 1
        ctx = context(round_)
        report(Progress(round_ + 1, config.rounds, len(outcome.tried), _verified(outcome.tried),
                        _best_speedup(history, config), f"round {round_ + 1}: generating"))
        try:
            proposals = [_stamp(p, round_) for p in generator.propose(ctx, config.candidates)]
        except GeneratorError as e:
            outcome.problem = f"the generator failed: {e}"
            stopped = "generator"
            break
        if not proposals:
            stopped = "exhausted"
            break
        report(Progress(round_ + 1, config.rounds, len(outcome.tried), _verified(outcome.tried),
                        _best_speedup(history, config), f"round {round_ + 1}: evaluating {len(proposals)} candidates"))
        log.debug("round %d: evaluating %d", round_ + 1, len(proposals))
        batch = evaluate(proposals)
        batch += _fixes(batch, ctx, generator, config, evaluate, cancel, started)
        log.debug("round %d: evaluated", round_ + 1)
        history += batch
        outcome.tried += batch
        if not cancel.is_set():
            report(Progress(round_ + 1, config.rounds, len(outcome.tried), _verified(outcome.tried),
                            _best_speedup(history, config), f"round {round_ + 1}: confirming the leaders"))
            promote(history, bench, config, round_, record, started,
                    lambda: report(Progress(round_ + 1, config.rounds, len(outcome.tried), _verified(outcome.tried),
                                            _best_speedup(history, config), f"round {round_ + 1}: a leader verified")))
        best = _best_speedup(history, config)
        report(Progress(round_ + 1, config.rounds, len(outcome.tried), _verified(outcome.tried), best,
                        f"round {round_ + 1} done"))
        if config.target_speedup and best and best >= config.target_speedup:
            stopped = "target"
            break
    if deadline.passed:
        stopped = "time"
    elif cancel.is_set():
        stopped = "cancelled"
    outcome.stopped = stopped
    log.debug("choosing the winner (stopped: %s)", stopped)
    _choose_winner(outcome, history, bench, bench_plan, config, cancel, started, gpu)
    outcome.seconds = time.monotonic() - started
    if store and search_id is not None:
        store.finish_search(search_id, {"status": outcome.status, "message": outcome.message, "stopped": stopped,
                                        "best": outcome.best.proposal.key if outcome.best else None})
    return outcome


class Profiler:
    """Nsight Compute facts about each round's leader (once per leader), where the bench can
    profile; the first reason there are none becomes a note for the user."""

    def __init__(self, bench: Bench, outcome: SearchOutcome) -> None:
        self.bench, self.outcome = bench, outcome
        self._facts: dict[str, tuple[ProfileFacts | None, str]] = {}

    def leader(self, leader: Tried | None) -> tuple[ProfileFacts | None, str]:
        profile = getattr(self.bench, "profile", None)
        if profile is None:
            return None, ""
        key = leader.proposal.key if leader else ""
        if key not in self._facts:
            profiled = profile(leader.proposal if leader else None)
            self._facts[key] = (profiled.facts, profiled.note)
            if profiled.note and profiled.note not in self.outcome.notes:
                self.outcome.notes.append(profiled.note)
        return self._facts[key]


def ranked(tried: list[Tried]) -> list[Tried]:
    """Verified candidates, fastest first (by speedup over the original each was timed against)."""
    return sorted((t for t in tried if t.verified and t.result.speedup), key=lambda t: -(t.result.speedup or 0))


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


def promote(history: list[Tried], bench: Bench, config: SearchConfig, round_: int,
            record: Callable[[Tried], None], started: float | None = None,
            on_confirmed: Callable[[], None] | None = None) -> None:
    """Nothing is shown to a generator as the best, or seeds a round, before the full
    verification: the leaders (the next round's seeds) each pass it once (more seeds and, when
    on, the sanitizers at every test size). One that fails is demoted, and the history says why."""
    if not config.sanitize_winner:
        return  # the regular verification is then the full one
    while True:
        pending = [t for t in ranked(history)[: config.seeds] if not t.result.confirmed]
        if not pending:
            return
        for t in pending:
            verdict = confirm(t, bench, f"round {round_ + 1} leader", record, started)
            if verdict is None:
                return  # interrupted (cancel, the deadline): the leaders stay unconfirmed
            if verdict and on_confirmed is not None:
                on_confirmed()  # a fully verified best shows at once, before the other leaders' turn


def confirm(t: Tried, bench: Bench, role: str, record: Callable[[Tried], None],
            started: float | None = None) -> bool | None:
    """Run the stricter verification on a candidate once; a failure demotes it. None when it was
    interrupted (cancelled, or the deadline): the candidate stays as it was, unconfirmed."""
    confirmed = bench.confirm(t.proposal)
    if confirmed.status == "cancelled" or (confirmed.verified and not confirmed.confirmed and
                                           any(c.detail == "cancelled" for c in confirmed.checks)):
        return None
    if confirmed.verified:
        t.result.confirmed = True
        if started is not None:
            t.confirmed_at = time.monotonic() - started
        t.result.checks += [c for c in confirmed.checks if c.name.startswith("sanitizer")]
    else:
        t.result.warnings.append(f"demoted as {role}: {confirmed.message}")
        t.result.status = "spec_error" if confirmed.status == "spec_error" else "wrong"
        t.result.message = f"demoted as {role} by the stricter verification: {confirmed.message}"
        t.result.checks += [c for c in confirmed.checks if c.status == "fail"]
        t.result.mismatch = confirmed.mismatch or t.result.mismatch
    record(t)
    return confirmed.verified


def _choose_winner(outcome: SearchOutcome, history: list[Tried], bench: Bench, plan: SizePlan, config: SearchConfig,
                   cancel: threading.Event, started: float, gpu: GpuInfo) -> None:
    """The fastest fully verified win. `gpu` as the search began: asking the bench again after a
    deadline would start the worker the deadline stopped."""
    candidates = ranked(history)
    outcome.best_tried = candidates[0] if candidates else None
    for t in candidates:
        if not t.result.is_win(config.min_gain):
            continue  # inside its own interval of 1 + min_gain: a faster one with a wider interval may not win
        suspicious = _beyond_bandwidth(t, plan, gpu)
        if (suspicious or config.sanitize_winner) and not t.result.confirmed:
            # Interrupted (the deadline, a cancel): what was found is kept only if fully verified.
            verdict = None if cancel.is_set() else confirm(t, bench, "winner", lambda _: None, started)
            if verdict is None:
                outcome.unconfirmed = outcome.unconfirmed or t
                continue
            if not verdict:
                continue
        if suspicious:
            t.result.warnings.append(suspicious + "; confirmed by a stricter verification")
        outcome.best = t
        break
    if outcome.best:
        outcome.status = "improved"
    elif outcome.stopped == "cancelled":
        outcome.status = "cancelled"
    elif outcome.stopped == "generator" and not outcome.tried:
        outcome.status = "failed"
    else:
        outcome.status = "no_win"
    summary = _summary(outcome, config)
    if outcome.status == "failed":
        outcome.message = outcome.problem
    else:
        outcome.message = summary if not outcome.problem else f"{summary} (stopped early: {outcome.problem})"


def _beyond_bandwidth(t: Tried, plan: SizePlan, gpu: GpuInfo) -> str:
    """A time below what the buffers' bytes allow at the measured bandwidth: worth a second look."""
    if not gpu.bandwidth_gbps or t.time_ms is None:
        return ""
    nbytes = sum(a.nbytes * (2 if a.direction == "inout" else 1) for a in plan.args if a.kind == "buffer")
    floor_ms = nbytes / (gpu.bandwidth_gbps * 1e9) * 1e3
    if t.time_ms < BANDWIDTH_SLACK * floor_ms:
        return (f"{t.time_ms:.4g} ms is below the {floor_ms:.4g} ms that moving {nbytes / 1e6:.1f} MB at the "
                f"measured {gpu.bandwidth_gbps:.0f} GB/s takes")
    return ""


def _summary(outcome: SearchOutcome, config: SearchConfig) -> str:
    base = outcome.baseline.original_time.median_ms if outcome.baseline and outcome.baseline.original_time else 0
    gpu = outcome.baseline.gpu.name if outcome.baseline and outcome.baseline.gpu else "the GPU"
    pending = _unfinished(outcome)
    if outcome.best:
        r = outcome.best.result
        sizes = len(r.sizes_checked)
        seeds = len(r.seeds)
        return (f"{r.speedup:.2f}x faster ({r.original_time.median_ms:.4g} ms -> {r.candidate_time.median_ms:.4g} ms "
                f"on {gpu}; verified at {sizes} sizes, {seeds} input sets)" + (f"; {pending}" if pending else ""))
    failures = Counter(t.result.status for t in outcome.tried if not t.verified)
    why = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in failures.most_common())
    if pending:
        return f"no fully verified faster rewrite of the {base:.4g} ms original: {pending}" + (f"; {why}" if why else "")
    best = outcome.best_tried
    best_text = f"best verified {best.result.speedup:.3f}x ({best.proposal.note or best.proposal.generator}), " \
                f"not beyond the noise and a {config.min_gain:.0%} minimum gain{_interval(best.result)}" \
        if best and best.result.speedup else "no candidate verified"
    return f"no faster verified rewrite of the {base:.4g} ms original: {best_text}" + (f"; {why}" if why else "")


def _unfinished(outcome: SearchOutcome) -> str:
    """A faster candidate the search could not fully verify before it was stopped, said plainly."""
    t = outcome.unconfirmed
    if t is None or (outcome.best is not None and (t.result.speedup or 0) <= (outcome.best.result.speedup or 0)):
        return ""
    when = "at the deadline" if outcome.stopped == "time" else "when the search was cancelled"
    return f"{t.result.speedup:.2f}x passed the checks but its sanitizers had not finished {when}, so it is not a result"


def _interval(result: EvalResult) -> str:
    return f" (interval {result.speedup_ci[0]:.3f}-{result.speedup_ci[1]:.3f})" if result.speedup_ci else ""


def first_win_seconds(outcome: SearchOutcome, sanitized: bool = True) -> float | None:
    """Seconds into the search when the first fully verified win was known (None: no win);
    with the sanitizers on, when its stricter verification passed."""
    wins = [t for t in outcome.tried if t.verified and t.result.is_win(0.0)]
    times = [t.confirmed_at for t in wins if t.confirmed_at is not None] if sanitized else [t.found_at for t in wins]
    return min(times) if outcome.best is not None and times else None


def _verified(tried: list[Tried]) -> int:
    return sum(t.verified for t in tried)


def _best_speedup(tried: list[Tried], config: SearchConfig) -> float | None:
    """The fastest fully verified so far (the sanitizers passed too, when they are on): what
    progress shows as the best."""
    r = [t for t in ranked(tried) if t.result.confirmed or not config.sanitize_winner]
    return r[0].result.speedup if r else None


def _config_record(config: SearchConfig) -> dict:
    return asdict(config)  # names the key's environment variable, never holds the key
