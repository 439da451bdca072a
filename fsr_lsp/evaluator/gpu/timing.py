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

import json
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from ..records import Check, LaunchPlan, SizePlan, TimingStats
from .accuracy import EPS, FACTOR, FLOOR_ULPS
from .relocation import canonical
from .buffers import FLOATS, FRESH_ELEMENTS, count_bad, poison, refill, scaled_error, storage_dtype
from .common import (Failure, JobContext, buffers_of, guarded_launch, inputs_only, launch_args, make_inputs, outputs,
                     seed_for)
from .ref import eval_ref
from .runs import double_outputs, launch_runs
from .session import LoadedKernel

BOOTSTRAP_SAMPLES = 1000


@dataclass
class _Contender:
    name: str
    launch: Callable[[list[Any]], None] | None  # None for the ref (a torch expression)
    point: Callable[[list[Any]], None] | None = None  # its `__device__` variables at their buffers, unclocked
    times: list[tuple[Any, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)


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
    session, job, result = ctx.session, ctx.job, ctx.result
    torch = session.torch
    bench = next(p for p in reversed(job.sizes) if p.role == "bench")
    cfg = job.timing
    ctx.report(f"timing at {bench.label}")
    buffer_args = buffers_of(bench)
    outs = outputs(bench)
    pointers = any(a.links or a.pointers for a in bench.args)  # memory holding pointers: compared as placed
    pristine = make_inputs(session, bench, seed_for(job, len(job.sizes) + 1, 0))

    def working() -> dict[str, Any]:
        return {a.name: torch.empty(a.numel, dtype=storage_dtype(torch, a.dtype), device=session.device)
                for a in buffer_args}

    def kernel_launch(kernel: LoadedKernel, launch: LaunchPlan) -> Callable[[list[Any]], None]:
        return lambda args: kernel.launch(args, launch)

    sets = [working(), working()]  # the kernels swap these every other repetition
    contenders = [_Contender("original", kernel_launch(ctx.original, bench.original), ctx.original.point)]
    if ctx.candidate:
        contenders.append(_Contender("candidate", kernel_launch(ctx.candidate, bench.candidate), ctx.candidate.point))
    if job.ref and not any(w.startswith("ref not used") for w in result.warnings):
        contenders.append(_Contender("ref", None))
    kernels = [c for c in contenders if c.launch is not None]
    bad = {c.name: torch.zeros((), dtype=torch.int64, device=session.device) for c in contenders}
    touched = torch.zeros((), dtype=torch.int64, device=session.device)
    generator = torch.Generator(device=session.device)
    generator.manual_seed(seed_for(job, len(job.sizes) + 2, 0))

    def once(c: _Contender, buffers: dict[str, Any] | None, timed: bool) -> None:
        if buffers is not None:
            for a in buffer_args:
                if a.direction == "out":
                    poison(torch, buffers[a.name], a, "A")
                else:
                    buffers[a.name].copy_(pristine[a.name])
        # the arguments before the clock starts: memory holding pointers is rebuilt there (a copy)
        args = launch_args(bench.args, buffers) if c.launch is not None and buffers is not None else None
        if args is not None and c.point is not None:
            c.point(args)  # a copy when a redirected variable's buffer moved: before the clock starts
        if cfg.flush_l2:
            session.flush_l2(cfg.flush_factor)
        session.hold_gpu(cfg.hold_cycles)  # keeps the GPU busy while Python submits the launch
        start, end = session.event(), session.event()
        start.record()
        if c.launch is not None and buffers is not None:
            c.launch(args)
            c.outputs = buffers
        else:
            c.outputs = eval_ref(torch, job.ref, bench, pristine)
        end.record()
        if args is not None and pointers:  # pointers put back as saved: the kernels' buffer sets compare
            canonical(torch, bench.args, buffers, {name: t.data_ptr() for name, t in buffers.items()})
        if timed:
            c.times.append((start, end))

    shuffle = random.Random(seed_for(job, len(job.sizes) + 4, 0))
    # Outputs judged against the double-precision run during verification: the candidate may
    # differ from the original by both their errors, never by a stale or skipped result's.
    tolerances = {a.name: ctx.accuracy.compare_tolerance(a.name) for a in outs}
    seen: list[_Rep] = []  # the candidate's disagreements, each repetition's, judged at the end

    def repetition(r: int, timed: bool) -> None:
        state = generator.get_state()
        for a in buffer_args:
            if a.name in pristine:
                refill(torch, pristine[a.name], a, generator)
        # Order and buffer sets drawn at random each repetition: any pattern that repeats in the
        # sequence of launches (a strict alternation makes one of period four) stays out of the ratio.
        order = contenders[:]
        shuffle.shuffle(order)
        swap = shuffle.randrange(2)
        placed = {c.name: sets[(i + swap) % 2] for i, c in enumerate(kernels)}
        for c in order:
            once(c, placed.get(c.name), timed)
        expected = contenders[0].outputs
        for c in contenders[1:]:
            rep = _Rep(state, torch.zeros((), dtype=torch.int64, device=session.device))
            for a in outs:
                if a.name not in c.outputs or a.name not in expected:
                    continue  # a torch reference gives the kernel's own outputs, not memory reached through pointers
                n = count_bad(torch, c.outputs[a.name], expected[a.name], a, tolerances.get(a.name))
                bad[c.name] += n
                if c.name == "candidate":
                    rep.bad += n
                    rep.bad_by[a.name] = n
                    if a.dtype in FLOATS and a.numel <= SMALL_OUTPUT:
                        rep.apart[a.name] = _largest_difference(torch, c.outputs[a.name], expected[a.name])
                        rep.timed[a.name] = c.outputs[a.name].clone()
            if c.name == "candidate":
                seen.append(rep)
        for c in order:
            if c.launch is None:
                continue
            for a in inputs_only(bench):
                touched.add_((placed[c.name][a.name] != pristine[a.name]).sum())

    def sync(where: str) -> None:
        guarded_launch(session, "candidate" if ctx.candidate else "original", where, lambda: None)

    for r in range(cfg.warmup):
        repetition(r, timed=False)
    sync("warm-up")
    repetition(0, timed=True)
    sync("timing")
    per_run_ms = max(max(s.elapsed_time(e) for c in contenders for s, e in c.times), 1e-3) + 0.05
    reps = int(min(cfg.max_reps, max(cfg.min_reps, cfg.target_seconds * 1000.0 / per_run_ms)))
    for r in range(1, reps):
        repetition(r, timed=True)
        if r % 32 == 31:
            ctx.report(f"timing at {bench.label}: {r + 1}/{reps} runs")
            session.take_printed()  # what a printing kernel wrote meanwhile: nobody's to compare
    sync("timing")
    times = {c.name: [s.elapsed_time(e) for s, e in c.times] for c in contenders}
    _log_times(job.kernel, bench.label, times)
    counts = {name: int(v.item()) for name, v in bad.items()}
    if int(touched.item()) and job.mode != "time":
        who = "candidate" if ctx.candidate else "original"
        raise Failure("wrong" if ctx.candidate else "spec_error",
                      f"an in buffer was modified during the timed runs ({who})", check="inputs unchanged")
    if ctx.candidate and job.mode != "time":  # a time-only job judges nothing: the user's edit may change results
        held = ""
        if counts["candidate"]:
            held = held_to_their_errors(ctx, bench, pristine, generator, seen, counts["candidate"])
        result.checks.append(Check("timed runs verified", "pass",
                                   f"{len(times['original']) + cfg.warmup} runs, {_inputs_of_runs(bench)}{held}"))
    if counts.get("ref"):
        result.warnings.append(f"ref disagreed with the original on {counts['ref']} elements of its timed runs")
    result.bench_size = bench.label
    result.original_time = stats(times["original"])
    result.candidate_time = stats(times["candidate"]) if "candidate" in times else None
    result.ref_time = stats(times["ref"]) if "ref" in times else None
    if result.candidate_time:
        result.speedup = paired_speedup(times["original"], times["candidate"])
        result.speedup_ci = speedup_interval(times["original"], times["candidate"], cfg.confidence,
                                             seed_for(job, len(job.sizes) + 3, 0))
    if result.ref_time:
        base = result.candidate_time or result.original_time
        result.speedup_vs_ref = result.ref_time.median_ms / base.median_ms


@dataclass
class _Rep:
    """One repetition as the candidate saw it: the generator's state before its inputs were
    drawn (to draw them again), its elements out of tolerance, and per output judged against
    the double-precision run, its largest difference from the original."""

    state: Any
    bad: Any
    bad_by: dict[str, Any] = field(default_factory=dict)
    apart: dict[str, Any] = field(default_factory=dict)  # small float outputs: the largest difference seen
    timed: dict[str, Any] = field(default_factory=dict)  # ... and the candidate's output in that run


# Outputs of at most this many elements may have a scale near zero (a sum whose inputs cancel):
# their repetitions are judged again; a larger output's scale is its mean magnitude, which does not.
SMALL_OUTPUT = 4096
AGAIN_RUNS = 4  # runs of a nondeterministic original on a repetition's inputs drawn again
SAMPLED_OUT = 0.05  # at most this share of the repetitions (and at least 2) may be held to their own errors
# ... and at least this many where every output apart is one the original's own runs differ in (float
# atomics): its rounding leaves the tolerance more often, each such run judged again all the same
SPREAD_JUDGED = 8


def held_to_their_errors(ctx: JobContext, bench: Any, pristine: dict[str, Any], generator: Any, reps: list[_Rep],
                         count: int) -> str:
    """Repetitions where the candidate's outputs left the tolerance measured in verification,
    each held to the rule verification holds the first runs to: its inputs drawn again, both
    kernels run once more beside the original in double precision, the candidate within its
    bound of that run (FACTOR times the original's error on these very inputs, or the job's
    bound), and the difference seen in the timed run no larger than the two kernels' errors
    there can make it. A sum that happens to be near zero has a tiny scale and the same rounding:
    that passes. An output held to the spec's own tolerance (no double-precision run judges it)
    is held to the original's own spread instead, where the original's runs differ (atomics):
    the user's tolerance cannot hold a kernel to less than the original gives against itself.
    A stale, cached or skipped result is far from both: that fails, as do disagreements too many
    to be such chance, from an original that gives the same result every run, or in outputs too
    large for their scale to collapse (SMALL_OUTPUT).
    Returns what the check's detail adds; raises the verdict otherwise."""
    flagged = [r for r in reps if int(r.bad.item())]
    limit = max(2, int(SAMPLED_OUT * len(reps)))
    apart = {name for r in flagged for name, n in r.bad_by.items() if int(n.item())}
    if apart and apart <= ctx.accuracy.spread:
        limit = max(limit, SPREAD_JUDGED)
    if len(flagged) > limit:
        problem = f" in {len(flagged)} of {len(reps)} runs, too many to be rounding on chance inputs"
    elif any(int(n.item()) for r in flagged for name, n in r.bad_by.items() if name not in r.apart):
        problem = ""
    else:
        problem = next((p for p in (_judged_again(ctx, bench, pristine, generator, r) for r in flagged) if p), None)
        if problem is None:
            return (f"; {len(flagged)} of {len(reps)} runs apart beyond the verification's tolerance, each within the "
                    "original's own error on its inputs drawn again")
    raise Failure("wrong", f"{count} output elements of the timed runs differ from the original's on the same fresh "
                           f"inputs{problem}: the candidate caches results across launches, skips work, or depends on "
                           "state left by earlier runs", check="timed runs verified")


def _judged_again(ctx: JobContext, bench: Any, pristine: dict[str, Any], generator: Any, rep: _Rep) -> str:
    """One repetition's inputs drawn again and both kernels held to the double-precision run on
    them (an output the spec gives its own tolerance: to the original's own spread there); what
    fails, or ''."""
    torch = ctx.torch
    generator.set_state(rep.state)
    for a in buffers_of(bench):
        if a.name in pristine:
            refill(torch, pristine[a.name], a, generator)
    inputs = {name: t.clone() for name, t in pristine.items()}
    flagged = {name: apart for name, apart in rep.apart.items() if int(rep.bad_by[name].item())}
    grounded = {name for name in flagged if ctx.wide is not None and ctx.accuracy.compare_tolerance(name) is not None}
    double = double_outputs(ctx, bench, inputs) if grounded else {}
    own_tolerance = len(grounded) < len(flagged)  # some output is judged by the kernels' own spreads
    # an original that rounds differently each run (atomics) is run a few times: its error is a spread
    runs = AGAIN_RUNS if ctx.accuracy.spread or own_tolerance else 1
    originals = [launch_runs(ctx, "original", bench, inputs, "A", 1, None)[0] for _ in range(runs)]
    candidate = launch_runs(ctx, "candidate", bench, inputs, "B", 1, None)[0]
    again = launch_runs(ctx, "candidate", bench, inputs, "A", 1, None)[0] if own_tolerance else None
    for name, apart in flagged.items():
        if name not in grounded:
            arg = next(a for a in outputs(bench) if a.name == name)
            problem = _within_own_spread(torch, arg, apart, originals, candidate, again)
            if problem:
                return problem
            continue
        own = max(float(scaled_error(torch, o[name], double[name]).max().item()) for o in originals)
        mine = float(scaled_error(torch, candidate[name], double[name]).max().item())
        bound = max(ctx.accuracy.bound(name), FACTOR * own)
        if not mine <= bound:
            return (f" (drawn again, {name} is {mine:.3g} of its scale from the double-precision run, where the "
                    f"original is {own:.3g}: bound {bound:.3g})")
        timed = rep.timed.get(name)
        if timed is not None and float(scaled_error(torch, timed, double[name]).max().item()) <= bound:
            continue  # what the candidate gave in the timed run is what these inputs give, to its bound: the
            # disagreement was the original's rounding there (float atomics now and then far from their usual)
        errors = max(_largest_difference(torch, o[name], double[name]) for o in originals) + \
            _largest_difference(torch, candidate[name], double[name])
        if not math.isfinite(float(errors.item())):  # a NaN or infinity the double-precision run has not: no bound
            return f" (drawn again, {name} is not finite where the double-precision run is: nothing bounds the difference)"
        scale = double[name].double().abs().max()
        allowed = float((FACTOR * errors + FLOOR_ULPS * EPS["float32"] * scale).item())
        seen = float(apart.item())
        if not seen <= allowed:
            return (f" ({name} was {seen:.3g} apart; on the same inputs drawn again both kernels are within {allowed:.3g}"
                    " of the double-precision run together: the timed run's output was not computed from its inputs)")
    return ""


def _within_own_spread(torch: Any, arg: Any, apart: Any, originals: list[dict[str, Any]],
                       candidate: dict[str, Any], again: dict[str, Any] | None = None) -> str:
    """An output held to the spec's tolerance, judged again on its inputs drawn again: the
    original run several times must differ from itself (else the timed run's disagreement is the
    candidate's alone), the candidate must lie within the spec's tolerance or FACTOR times that
    spread of the original, and the timed run's difference may exceed the candidate's distance
    from the original by no more than FACTOR times the two kernels' own spreads (the candidate's
    from its second run, `again`). '' when it holds."""
    name = arg.name
    first = originals[0][name]
    own = max(float(_largest_difference(torch, o[name], first).item()) for o in originals[1:])
    seen = float(apart.item())
    if not own > 0 or not math.isfinite(own):
        return (f" ({name} was {seen:.3g} apart; drawn again, the original gives the same {name} every run: the timed "
                "run's disagreement is the candidate's)")
    mine = float(_largest_difference(torch, candidate[name], first).item())
    if not (mine <= FACTOR * own or not int(count_bad(torch, candidate[name], first, arg).item())):
        return (f" (drawn again, {name} is {mine:.3g} from the original's, whose own runs differ by {own:.3g}: "
                f"bound {FACTOR * own:.3g})")
    spread = float(_largest_difference(torch, again[name], candidate[name]).item()) if again is not None else 0.0
    allowed = mine + FACTOR * (own + spread)
    if not seen <= allowed:
        return (f" ({name} was {seen:.3g} apart; on the same inputs drawn again the candidate is {mine:.3g} from the "
                f"original, whose runs differ by {own:.3g} (the candidate's by {spread:.3g}): within {allowed:.3g} "
                "together, the timed run's output was not computed from its inputs)")
    return ""


def _largest_difference(torch: Any, a: Any, b: Any) -> Any:
    """max |a - b| in float64 on the device: equal values (the same infinity) and NaN against NaN
    count as 0, a NaN or an infinity against anything else as infinite. (An original that writes
    the same NaN every run has no spread there: counted infinite, it would excuse any difference.)"""
    x, y = a.double(), b.double()
    d = (x - y).abs()
    same = (x == y) | (x.isnan() & y.isnan())
    d = torch.where(same, torch.zeros_like(d), torch.nan_to_num(d, nan=float("inf")))
    return d.max() if d.numel() else torch.zeros((), dtype=torch.float64, device=d.device)


def _log_times(kernel: str, size: str, times: dict[str, list[float]]) -> None:
    """Every timed run, one JSON line per job, where FSR_TIMING_LOG names a file (benchmarks)."""
    path = os.environ.get("FSR_TIMING_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"kernel": kernel, "size": size, "times_ms": times}) + "\n")


def stats(times: list[float]) -> TimingStats:
    s = sorted(times)
    n = len(s)

    def q(p: float) -> float:
        x = p * (n - 1)
        lo = int(x)
        hi = min(lo + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (x - lo)

    return TimingStats(median_ms=q(0.5), min_ms=s[0], max_ms=s[-1], p25_ms=q(0.25), p75_ms=q(0.75), reps=n)


def _iqm(sorted_rows):
    """The mean of the middle half of each sorted row. CUDA events tick in about 0.5 us: on a
    20 us kernel medians sit on those ticks; the mean of the middle half averages over them and
    still ignores the outliers."""
    n = sorted_rows.shape[1]
    lo, hi = n // 4, n - n // 4
    return sorted_rows[:, lo:max(hi, lo + 1)].mean(axis=1)


def paired_speedup(original: list[float], candidate: list[float]) -> float:
    """The speedup from the pairs: the geometric interquartile mean of original/candidate over
    the repetitions. Both of a pair ran back to back, so a slow moment (clocks, a neighbour)
    slows both and leaves their ratio alone; the middle half drops outliers, and averaging
    over it keeps the event timer's ticks out."""
    import numpy as np

    return float(_paired(np.asarray(original, dtype=float), np.asarray(candidate, dtype=float))[0])


def _paired(o, c):
    """Geometric IQM of o/c along the last axis (rows of resampled pairs)."""
    import numpy as np

    logs = np.sort(np.log(np.atleast_2d(o)) - np.log(np.atleast_2d(c)), axis=-1)
    return np.exp(_iqm(logs))


def speedup_interval(original: list[float], candidate: list[float], confidence: float, seed: int) -> tuple[float, float]:
    """Bootstrap interval of the paired speedup, resampling whole repetitions."""
    import numpy as np

    o, c = np.asarray(original, dtype=float), np.asarray(candidate, dtype=float)
    n = min(len(o), len(c))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(BOOTSTRAP_SAMPLES, n))
    ratios = _paired(o[:n][idx], c[:n][idx])
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)
