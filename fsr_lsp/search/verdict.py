"""What counts as found: each round's leaders confirmed by the stricter verification, the
winner chosen (only a fully verified one), and the outcome said in words."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Callable

from ..evaluator.records import EvalResult, GpuInfo, SizePlan
from .config import SearchConfig
from .outcome import Bench, SearchOutcome, ranked
from .proposal import Tried

BANDWIDTH_SLACK = 0.8  # faster than 1/0.8 of the measured copy bandwidth allows is suspicious


def promote(history: list[Tried], bench: Bench, config: SearchConfig, round_: int,
            record: Callable[[Tried], None], started: float | None = None,
            on_confirmed: Callable[[], None] | None = None) -> None:
    """Nothing is shown to a generator as the best, or seeds a round, before the full
    verification: the leaders (the next round's seeds) each pass it once (more seeds and, when
    on, the sanitizers at every test size). One that fails is demoted, and the history says why."""
    if not config.sanitize_winner:
        return  # the regular verification is then the full one
    while True:
        order = ranked(history)
        # Only a win under the program's launch can be applied (launch_fixed): its fastest is a
        # leader too, confirmed first and alone, so a deadline that cuts the others short leaves
        # the user the one they can take.
        applicable = [t for t in order if t.proposal.keeps_launch and t.result.is_win(config.min_gain)][:1] \
            if config.launch_fixed else []
        pending = list({id(t): t for t in applicable + order[: config.seeds] if not t.result.confirmed}.values())
        if not pending:
            return
        first = 1 if applicable and pending[0] is applicable[0] and len(pending) > 1 else 0
        # the rest together: the bench may check them for less (one sanitizer child per tool for all)
        for batch in (pending[:first], pending[first:]):
            if not batch:
                continue
            results = bench.confirm_many([t.proposal for t in batch])
            verdicts = [judged(t, r, f"round {round_ + 1} leader", record, started) for t, r in zip(batch, results)]
            if any(v is None for v in verdicts):
                return  # interrupted (cancel, the deadline): the leaders not judged stay unconfirmed
            if any(verdicts) and on_confirmed is not None:
                on_confirmed()  # a fully verified best shows at once


def confirm(t: Tried, bench: Bench, role: str, record: Callable[[Tried], None],
            started: float | None = None) -> bool | None:
    """Run the stricter verification on a candidate once; a failure demotes it. None when it was
    interrupted (cancelled, or the deadline): the candidate stays as it was, unconfirmed."""
    return judged(t, bench.confirm(t.proposal), role, record, started)


def judged(t: Tried, confirmed: EvalResult, role: str, record: Callable[[Tried], None],
           started: float | None = None) -> bool | None:
    """A candidate's stricter verification taken into its record (see `confirm`)."""
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


def choose_winner(outcome: SearchOutcome, history: list[Tried], bench: Bench, plan: SizePlan, config: SearchConfig,
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
    summary = _summary(outcome, config) + (_of_a_copy(outcome.best, plan, gpu) if outcome.best else "")
    if outcome.status == "failed":
        outcome.message = outcome.problem
    else:
        outcome.message = summary if not outcome.problem else f"{summary} (stopped early: {outcome.problem})"


COPY_SHARE_SHOWN = 0.25  # a winner moving at least this share of a copy's bandwidth is data movement: say how near


def _of_a_copy(t: Tried, plan: SizePlan, gpu: GpuInfo) -> str:
    """The winner's bytes a second against the copy the worker measured on this GPU ("2869 GB/s,
    94% of a copy"): the yardstick of a kernel that moves data. '' for one that computes."""
    moved = _bytes_moved(plan)
    if not gpu.bandwidth_gbps or not t.time_ms or not moved:
        return ""
    gbps = moved / (t.time_ms * 1e-3) / 1e9
    share = gbps / gpu.bandwidth_gbps
    return f"; it moves {gbps:.0f} GB/s, {share:.0%} of a copy on this GPU" if share >= COPY_SHARE_SHOWN else ""


def _bytes_moved(plan: SizePlan) -> int:
    """The fewest bytes a run must move: each buffer read once, an inout one read and written."""
    return sum(a.nbytes * (2 if a.direction == "inout" else 1) for a in plan.args if a.kind == "buffer")


def _beyond_bandwidth(t: Tried, plan: SizePlan, gpu: GpuInfo) -> str:
    """A time below what the buffers' bytes allow at the measured bandwidth: worth a second look."""
    if not gpu.bandwidth_gbps or t.time_ms is None:
        return ""
    nbytes = _bytes_moved(plan)
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
        ranges = f" and {len(r.range_sets)} that probe their range" if r.range_sets else ""
        return (f"{r.speedup:.2f}x faster ({r.original_time.median_ms:.4g} ms -> {r.candidate_time.median_ms:.4g} ms "
                f"on {gpu}; verified at {sizes} sizes, {seeds} input sets{ranges})" + (f"; {pending}" if pending else ""))
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
