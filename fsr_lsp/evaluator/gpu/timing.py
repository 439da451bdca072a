"""Interleaved timing on inputs that are new for every repetition, and the speedup's interval.

Each repetition draws fresh inputs, copies them into the contenders' buffers, and times each
contender once with CUDA events, the L2 flushed before each. The order, and which of two buffer
sets each kernel runs on, are drawn at random every repetition, so neither launch order, buffer
placement, nor anything that repeats in the sequence of launches favours one side. (A strict
alternation did: on an H100 an 18 us kernel timed against itself read 0.96x to 1.045x,
consistently within a run; bench/bias_probe.py.) The candidate's outputs are compared with the original's from the same
repetition: a kernel that caches results by address, counts launches or skips work once timed
gives stale outputs here. The speedup's confidence interval is a bootstrap over the paired
repetitions of this run, of the geometric interquartile mean of the paired ratios.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..records import KEEP_TIMED_MS, Check, LaunchPlan, SizePlan, TimingConfig
from .relocation import canonical
from .buffers import FLOATS, FRESH_ELEMENTS, count_bad, differing, poison, refill, storage_dtype
from .common import (Failure, JobContext, buffers_of, guarded_launch, inputs_only, launch_args, make_inputs, outputs,
                     seed_for)
from .ref import eval_ref
from .timed_runs import SMALL_OUTPUT, Repetition, held_to_their_errors, largest_difference
from .oracle_cache import TimedOriginal, cacheable, has_variables, run_key, tensor_bytes
from .kernel_clock import TaggedLaunches, clock_said
from .timing_stats import CHECK_EVERY, paired_speedup, settled, speedup_interval, stats
from .session import LoadedKernel

SLOW_TIMING_MS = 2000.0  # of the slowest contender's runs a timing needs at least, beyond which it takes fewer
MIN_SLOW_REPS = 5
SLOW_WARMUP_S = 0.3  # a warm-up repetition this long (wall clock) is warm-up enough
REPLAY_FACTOR = 2.0  # kept times are compared only with a candidate at least this much faster


@dataclass
class _Contender:
    name: str
    launch: Callable[[list[Any]], None] | None  # None for the ref (a torch expression)
    point: Callable[[list[Any]], None] | None = None  # its `__device__` variables at their buffers, unclocked
    times: list[tuple[Any, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    replay: TimedOriginal | None = None  # the original's timed runs from an earlier job, not run again


def _inputs_of_runs(bench: SizePlan) -> str:
    """What the timed runs' inputs were: drawn afresh each run, but for the run's own bytes."""
    same = [a.name for a in buffers_of(bench)
            if a.direction != "out" and a.init is not None and a.init.kind == "captured"]
    if not same:
        return "each on freshly generated inputs"
    listed = ", ".join(f"`{n}`" for n in sorted(same))
    if any(a.fresh is not None for a in buffers_of(bench)):  # bench_inputs = "captured"
        return (f"each on the captured run's own inputs ({listed}), {FRESH_ELEMENTS} elements of each drawn afresh "
                "every run")
    others = [a.name for a in buffers_of(bench) if a.direction != "out" and a.name not in same]
    return (f"each on freshly generated inputs but {listed}, the captured run's bytes every time" if others
            else f"each on the captured run's own inputs ({listed})")


def time_job(ctx: JobContext) -> None:
    """Time the contenders at the bench size. Against an original slow enough that its timed runs
    are kept (gpu/oracle_cache.py), the candidate runs alone on the same inputs, its outputs
    compared with the original's kept ones, and the original's kept times are the other side:
    taken only where the candidate is over REPLAY_FACTOR times faster, far beyond any drift
    between the two timings; else both are timed again side by side."""
    bench = next(p for p in reversed(ctx.job.sizes) if p.role == "bench")
    key = _timed_key(ctx, bench)
    replay = ctx.session.oracle_cache.get(key) if key and ctx.candidate is not None else None
    if replay is not None and _time(ctx, bench, replay, None):
        return
    _time(ctx, bench, None, key if ctx.candidate is None else None)


def _timed_key(ctx: JobContext, bench: SizePlan) -> str | None:
    """The key of the original's kept timed runs: a search's (its bench seed fixed), on buffers a
    seed decides, without a torch `ref` timed beside."""
    job = ctx.job
    if job.bench_seed is None or job.mode != "full" or job.ref or job.constants or has_variables(ctx.original) \
            or not cacheable(bench):
        return None
    n = len(job.sizes)
    return run_key("timed", job, ctx.original.digest, "", bench, seed_for(job, n + 1, 0),
                   generator=seed_for(job, n + 2, 0), order=seed_for(job, n + 4, 0), timing=dataclasses.asdict(job.timing))


def _time(ctx: JobContext, bench: SizePlan, replay: TimedOriginal | None, keep: str | None) -> bool:
    """One timing; False where a replayed original turned out not to be far enough ahead of the
    candidate (nothing recorded in the result then). `keep`: the key under which the original's
    timed runs are kept, where they are slow enough."""
    ctx.report(f"timing at {bench.label}" + (" (the original's timed runs from an earlier job)" if replay else ""))
    try:
        return _Timing(ctx, bench, replay, keep, exact=ctx.job.timing.exact_first).run()
    except NotBitExact:  # its outputs differ from the original's bits somewhere: every run judged by the tolerance
        return _Timing(ctx, bench, replay, keep, exact=False).run()


class NotBitExact(Exception):
    """A timing compared bit for bit found a run whose outputs are not the original's very bits."""


class _Timing:
    """One timing's state and its steps: the contenders and their two buffer sets, each
    repetition's runs (fresh inputs, order and buffer sets drawn at random), the runs compared
    with the original's, then the times taken and judged.

    `exact`: the candidate's outputs are first compared bit for bit, counted on the device, so
    that no repetition waits for the GPU (a tolerance's comparison starts with a wait, to skip
    its twenty passes where the bits agree). The count is read at each synchronize; any
    difference ends the timing (NotBitExact), to be run again with every repetition judged by
    the tolerance. A run bit-exact throughout is within any tolerance."""

    def __init__(self, ctx: JobContext, bench: SizePlan, replay: TimedOriginal | None, keep: str | None,
                 exact: bool = False) -> None:
        session, job = ctx.session, ctx.job
        self.ctx, self.bench, self.replay, self.keep, self.exact = ctx, bench, replay, keep, exact
        self.session, self.job, self.cfg, self.torch = session, job, job.timing, session.torch
        self.buffer_args = buffers_of(bench)
        self.outs = outputs(bench)
        self.pointers = any(a.links or a.pointers for a in bench.args)  # memory holding pointers: compared as placed
        self.pristine = make_inputs(session, bench, seed_for(job, len(job.sizes) + 1, 0))
        self.sets = [self._working(), self._working()]  # the kernels swap these every other repetition
        self._args: dict[int, list[Any]] = {}  # each set's launch arguments (_arguments)
        self.contenders = self._contenders()
        self.kernels = [c for c in self.contenders if c.launch is not None]
        self.clock = TaggedLaunches(session.kernel_clock() if self.cfg.clock == "kernel" else None,
                                    [c.name for c in self.contenders])
        self.why_events = session.clock_note if self.cfg.clock == "kernel" else "as the timing asked"
        self.kept: list[dict[str, Any]] | None = [] if keep else None  # the original's outputs, each timed run's
        zero = lambda: self.torch.zeros((), dtype=self.torch.int64, device=session.device)  # noqa: E731
        self.bad = {c.name: zero() for c in self.contenders}
        self.differs = zero()  # with `exact`: the candidate's elements not equal to the original's, every run
        self.touched = zero()
        self.generator = self.torch.Generator(device=session.device)
        self.generator.manual_seed(seed_for(job, len(job.sizes) + 2, 0))
        self.shuffle = random.Random(seed_for(job, len(job.sizes) + 4, 0))
        # Outputs judged against the double-precision run during verification: the candidate may
        # differ from the original by both their errors, never by a stale or skipped result's.
        self.tolerances = {a.name: ctx.accuracy.compare_tolerance(a.name) for a in self.outs}
        self.seen: list[Repetition] = []  # the candidate's disagreements, each repetition's, judged at the end
        self.warmups = 0

    def _working(self) -> dict[str, Any]:
        torch = self.torch
        return {a.name: torch.empty(a.numel, dtype=storage_dtype(torch, a.dtype), device=self.session.device)
                for a in self.buffer_args}

    def _contenders(self) -> list[_Contender]:
        ctx, bench = self.ctx, self.bench

        def kernel_launch(kernel: LoadedKernel, launch: LaunchPlan) -> Callable[[list[Any]], None]:
            return lambda args: kernel.launch(args, launch)

        contenders = [] if self.job.mode == "alone" else \
            [_Contender("original", kernel_launch(ctx.original, bench.original), ctx.original.point)] \
            if self.replay is None else [_Contender("original", None, replay=self.replay)]
        if ctx.candidate:
            contenders.append(_Contender("candidate", kernel_launch(ctx.candidate, bench.candidate), ctx.candidate.point))
        if self.job.ref and not any(w.startswith("ref not used") for w in ctx.result.warnings):
            contenders.append(_Contender("ref", None))
        return contenders

    # ------------------------------------------------------------ runs

    def once(self, c: _Contender, buffers: dict[str, Any] | None, timed: int | None) -> None:
        """One run of one contender on `buffers` (its inputs the repetition's, its outputs
        poisoned), timed where `timed` is a timed run's index."""
        if c.replay is not None:  # its outputs on these inputs as kept; nothing for a warm-up run
            c.outputs = c.replay.outputs[timed] if timed is not None else {}
            return
        torch, session, cfg, bench = self.torch, self.session, self.cfg, self.bench
        if buffers is not None:
            for a in self.buffer_args:
                if a.direction == "out":
                    poison(torch, buffers[a.name], a, "A")
                else:
                    buffers[a.name].copy_(self.pristine[a.name])
        # the arguments before the clock starts: memory holding pointers is rebuilt there (a copy)
        args = self._arguments(buffers) if c.launch is not None and buffers is not None else None
        if args is not None and c.point is not None:
            c.point(args)  # a copy when a redirected variable's buffer moved: before the clock starts
        if cfg.flush_l2:
            session.flush_l2(cfg.flush_factor)
        # the stream waits until the end event is queued; a torch ref may itself wait on the stream
        release = session.hold_gpu(cfg.hold_cycles, until_released=c.launch is not None)
        start, end = session.event(), session.event()
        try:
            start.record()
            with self.clock.tagged(c.name, timed):
                if c.launch is not None and buffers is not None and args is not None:
                    c.launch(args)
                    c.outputs = buffers
                else:
                    c.outputs = eval_ref(torch, self.job.ref, bench, self.pristine)
            end.record()
        finally:
            release()  # also where the launch failed: the stream never waits out the hold's timeout
        if args is not None and buffers is not None and self.pointers:  # pointers put back as saved: sets compare
            canonical(torch, bench.args, buffers, {name: t.data_ptr() for name, t in buffers.items()})
        if timed is not None:
            c.times.append((start, end))
            if self.kept is not None and c.name == "original":
                self.kept.append({a.name: buffers[a.name].clone() for a in self.outs} if buffers is not None else {})

    def _arguments(self, buffers: dict[str, Any]) -> list[Any]:
        """The launch's arguments on one of the two buffer sets: made once per set, where no
        memory holds pointers (else rebuilt at every run, as the run's structure is a copy)."""
        if self.pointers:
            return launch_args(self.bench.args, buffers)
        key = id(buffers)
        if key not in self._args:
            self._args[key] = launch_args(self.bench.args, buffers)
        return self._args[key]

    def repetition(self, timed: int | None) -> None:
        """Fresh inputs, then each contender once, in an order and on buffer sets drawn at random
        (any pattern that repeats in the sequence of launches, as a strict alternation's period of
        four, stays out of the ratio); then the runs compared."""
        state = self.generator.get_state()
        for a in self.buffer_args:
            if a.name in self.pristine:
                refill(self.torch, self.pristine[a.name], a, self.generator)
        order = self.contenders[:]
        self.shuffle.shuffle(order)
        swap = self.shuffle.randrange(2)
        placed = {c.name: self.sets[(i + swap) % 2] for i, c in enumerate(self.kernels)}
        for c in order:
            self.once(c, placed.get(c.name), timed)
        self._compare(state)
        for c in self.kernels:
            for a in inputs_only(self.bench):
                self.touched.add_((placed[c.name][a.name] != self.pristine[a.name]).sum())

    def _compare(self, state: Any) -> None:
        """Each contender's outputs against the original's of this repetition; the candidate's
        disagreements kept to be judged at the end."""
        torch = self.torch
        expected = self.contenders[0].outputs
        for c in self.contenders[1:]:
            if self.exact and c.name == "candidate":
                for a in self.outs:
                    if a.name in c.outputs and a.name in expected:
                        self.differs += differing(torch, c.outputs[a.name], expected[a.name])
                continue
            rep = Repetition(state, torch.zeros((), dtype=torch.int64, device=self.session.device))
            for a in self.outs:
                if a.name not in c.outputs or a.name not in expected:
                    continue  # a torch reference gives the kernel's own outputs, not memory reached through pointers
                n = count_bad(torch, c.outputs[a.name], expected[a.name], a, self.tolerances.get(a.name))
                self.bad[c.name] += n
                if c.name == "candidate":
                    rep.bad += n
                    rep.bad_by[a.name] = n
                    if a.dtype in FLOATS and a.numel <= SMALL_OUTPUT:
                        rep.apart[a.name] = largest_difference(torch, c.outputs[a.name], expected[a.name])
                        rep.timed[a.name] = c.outputs[a.name].clone()
            if c.name == "candidate":
                self.seen.append(rep)

    def sync(self, where: str) -> None:
        guarded_launch(self.session, "candidate" if self.ctx.candidate else "original", where, lambda: None)
        if self.exact and int(self.differs.item()):
            raise NotBitExact(where)

    def warm_up(self) -> None:
        replay = self.replay
        for _ in range(replay.warmup if replay else self.cfg.warmup):  # a replay draws the inputs the kept runs had
            warm = time.perf_counter()
            self.repetition(timed=None)
            self.sync("warm-up")
            self.warmups += 1
            if replay is None and time.perf_counter() - warm > SLOW_WARMUP_S:  # one run of a slow kernel warms it
                break  # as well as three

    def timed(self) -> tuple[dict[str, list[float]], dict[str, list[float | None]], dict[str, list[float]]]:
        """The timed runs: as many as the kernels' speed asks for, fewer once the answer is
        settled (timing_stats.py); each contender's events, kernel clock times, and the times taken."""
        cfg, replay = self.cfg, self.replay
        self.repetition(timed=0)
        self.sync("timing")
        per_run_ms = max(max(s.elapsed_time(e) for c in self.contenders for s, e in c.times), 1e-3) + 0.05
        reps = len(replay.events_ms) if replay else \
            int(min(cfg.max_reps, max(least_reps(cfg, per_run_ms), cfg.target_seconds * 1000.0 / per_run_ms)))
        if self.kept is not None and per_run_ms < KEEP_TIMED_MS:
            self.kept = None  # fast enough to time again beside each candidate
        for r in range(1, reps):
            self.repetition(timed=r)
            if r % 32 == 31:
                self.ctx.report(f"timing at {self.bench.label}: {r + 1}/{reps} runs")
                self.session.take_printed()  # what a printing kernel wrote meanwhile: nobody's to compare
            if replay is None and r + 1 >= cfg.min_reps and (r + 1) % CHECK_EVERY == 0 and r + 1 < reps:
                self.sync("timing")  # the runs so far: settled, the timing stops
                so_far = _measured(self.clock, self.contenders, self.why_events)[2]
                if settled(so_far, cfg.precision, seed_for(self.job, len(self.job.sizes) + 5, 0), cfg.win_above):
                    break
        self.sync("timing")
        events, kernel, times, self.ctx.result.clock = _measured(self.clock, self.contenders, self.why_events)
        return events, kernel, times

    # ------------------------------------------------------------ the result

    def run(self) -> bool:
        ctx, job, result, replay = self.ctx, self.job, self.ctx.result, self.replay
        self.warm_up()
        events, kernel, times = self.timed()
        if replay is not None and stats(times["candidate"]).median_ms * REPLAY_FACTOR > statistics.median(times["original"]):
            return False  # too close to the original to compare with times taken in another job
        if self.keep and self.kept is not None:  # the original alone was timed (a baseline): kept for the candidates
            self.session.oracle_cache.put(self.keep, TimedOriginal(self.warmups, self.kept, events["original"],
                                                                   kernel["original"]), tensor_bytes(self.kept))
        _log_times(job.kernel, self.bench.label, times, events, result.clock)
        counts = {name: int(v.item()) for name, v in self.bad.items()}
        if int(self.touched.item()) and job.mode != "time":
            who = "candidate" if ctx.candidate else "original"
            raise Failure("wrong" if ctx.candidate else "spec_error",
                          f"an in buffer was modified during the timed runs ({who})", check="inputs unchanged")
        if ctx.candidate and job.mode == "full":  # a time-only job judges nothing: the user's edit may change results
            result.checks.append(Check("timed runs verified", "pass", self._verified_detail(times, counts["candidate"])))
        if counts.get("ref"):
            result.warnings.append(f"ref disagreed with the original on {counts['ref']} elements of its timed runs")
        result.bench_size = self.bench.label
        _record_times(ctx, times)
        return True

    def _verified_detail(self, times: dict[str, list[float]], bad: int) -> str:
        """What the timed runs' check saw: how many runs, on what inputs, the disagreements held
        to the original's own error, and by which clock."""
        held = held_to_their_errors(self.ctx, self.bench, self.pristine, self.generator, self.seen, bad) if bad else ""
        kept_runs = (f"; the original's outputs and times from its own timing in an earlier job on the same inputs "
                     f"({statistics.median(times['original']):.4g} ms a run, over {REPLAY_FACTOR:g}x the candidate's)"
                     ) if self.replay else ""
        bits = "; every run's outputs the original's very bits" if self.exact else ""
        return (f"{len(times['original']) + self.warmups} runs, {_inputs_of_runs(self.bench)}{held}{bits}{kept_runs}; "
                f"{clock_said(self.ctx.result.clock)}")


def _record_times(ctx: JobContext, times: dict[str, list[float]]) -> None:
    """Each contender's time, the speedup and its interval, into the result."""
    result, job = ctx.result, ctx.job
    result.original_time = stats(times["original"]) if "original" in times else None
    result.candidate_time = stats(times["candidate"]) if "candidate" in times else None
    result.ref_time = stats(times["ref"]) if "ref" in times else None
    if result.candidate_time and result.original_time:
        result.speedup = paired_speedup(times["original"], times["candidate"])
        result.speedup_ci = speedup_interval(times["original"], times["candidate"], job.timing.confidence,
                                             seed_for(job, len(job.sizes) + 3, 0))
    base = result.candidate_time or result.original_time
    if result.ref_time and base is not None:
        result.speedup_vs_ref = result.ref_time.median_ms / base.median_ms


def _measured(clock: TaggedLaunches, contenders: list[_Contender], why_events: str) -> tuple[
        dict[str, list[float]], dict[str, list[float | None]], dict[str, list[float]], str]:
    """The timed runs so far (after a synchronize): each contender's events, its kernel clock's
    times, the times the timing takes, and by which clock."""
    events = {c.name: c.replay.events_ms if c.replay else [s.elapsed_time(e) for s, e in c.times] for c in contenders}
    kernel = clock.spans({c.name: len(c.times) for c in contenders if c.launch is not None},
                         {c.name: c.replay.kernel_ms for c in contenders if c.replay is not None})
    times, how = clock.choose(events, kernel, why_events)
    return events, kernel, times, how


def least_reps(cfg: TimingConfig, per_run_ms: float) -> int:
    """The fewest timed runs: the configured number, or fewer where that many runs of the slowest
    contender would take over SLOW_TIMING_MS (a 275 ms original timed 20 times is 5.5 s of every
    verification; its run-to-run spread is far under its speedup's, so 7 runs time it as well)."""
    if per_run_ms * cfg.min_reps <= SLOW_TIMING_MS:
        return cfg.min_reps
    return max(MIN_SLOW_REPS, min(cfg.min_reps, int(SLOW_TIMING_MS // per_run_ms)))


def _log_times(kernel: str, size: str, times: dict[str, list[float]], events: dict[str, list[float]], clock: str) -> None:
    """Every timed run, one JSON line per job, where FSR_TIMING_LOG names a file (benchmarks):
    the times taken, the events beside them, and the clock that gave the times."""
    path = os.environ.get("FSR_TIMING_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"kernel": kernel, "size": size, "clock": clock, "times_ms": times, "events_ms": events})
                    + "\n")
