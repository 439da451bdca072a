"""One evaluation on the GPU: verify (verify.py), place against unmapped pages, time (timing.py);
or, in sanitize mode, one plain launch per size for compute-sanitizer to watch."""

from __future__ import annotations

import functools
import sys
import time
from typing import Any

import numpy as np

from ..records import Check, EvalJob, EvalResult
from ..job.widening import wide_args
from .accuracy import scalar_dtypes
from .common import Failure, JobContext, Report, guarded_launch, make_inputs, pointer, seed_for
from .packing import launch_values
from ..job.linked_memory import late_values, link_writes
from .constant_fill import fill_constants
from .session import GpuSession
from .timing import time_job
from .unmapped import unmapped_layer
from .runs import WIDE_CHECK
from .verify import Counts, checked_text, verify


def run_job(session: GpuSession, job: EvalJob, report: Report = lambda _: None) -> EvalResult:
    started = time.perf_counter()
    result = EvalResult(kernel=job.kernel, status="verified", message="", gpu=session.info, screened=job.screen)
    torch = session.torch
    phase = Phases(result.phase_seconds)
    try:
        dtypes = scalar_dtypes(job.sizes[0].args)
        ctx = JobContext(session, job, session.load(job.original, dtypes),
                         session.load(job.candidate, dtypes) if job.candidate else None, result, report)
        if job.mode == "full":
            _load_wide(ctx)
        result.resources["original"] = ctx.original.resources()
        if ctx.candidate:
            result.resources["candidate"] = ctx.candidate.resources()
        phase("load")
        if job.mode == "sanitize":
            _sanitize_runs(ctx)
            result.message = "ran under compute-sanitizer"
        elif job.mode in ("time", "alone"):
            fill_constants(ctx, seed_for(job, 0, 0))  # both modules on the same tables
            session.wait_alone()  # the timed runs: nothing else on the GPU
            time_job(ctx)
            phase("time")
            result.status = "timed"
            result.message = _timed_summary(result)
        else:
            counts = verify(ctx)
            result.sizes_checked, result.seeds = counts.sizes, counts.seeds
            phase("verify")
            if ctx.candidate is not None:
                unmapped_layer(ctx, "original")  # once per worker and sizes: blames the spec, not the candidate
            result.checks.append(unmapped_layer(ctx, "candidate" if ctx.candidate else "original"))
            phase("unmapped pages")
            session.wait_alone()  # the checks may share the GPU (with sanitizers, another worker); the timed runs never
            phase("waiting for the GPU")
            time_job(ctx)
            phase("time")
            result.message = _summary(job, result, counts)
    except Failure as f:
        result.status = f.status  # type: ignore[assignment]
        result.message = f.message
        result.mismatch = f.mismatch
        result.restart_worker = f.restart
        if f.check == WIDE_CHECK:
            result.reference_failed = f.message
        if f.check:
            result.checks.append(Check(f.check, "fail", f.mismatch.describe() if f.mismatch else f.message, f.argument))
    except torch.cuda.OutOfMemoryError as e:
        result.status, result.message, result.restart_worker = "oom", f"out of GPU memory: {e}".splitlines()[0], True
    finally:
        session.take_printed()  # what the timed runs printed is nobody's to compare: emptied
        _release(session)
    result.seconds = time.perf_counter() - started
    return result


RELEASE_BYTES = 1 << 30  # cached by torch above this after a job: given back to the driver


def _release(session: GpuSession) -> None:
    """Give a large job's memory back: torch keeps what it freed for the next job of this
    worker, and the sanitizers, the other provers' workers and the user's own programs on this
    GPU would run out of memory beside it (seen: 21 GiB held after a captured program's proof)."""
    torch = session.torch
    try:
        if torch.cuda.memory_reserved(session.device) > RELEASE_BYTES:
            torch.cuda.empty_cache()
    except RuntimeError:  # a context already broken: the worker is restarted anyway
        pass


def _load_wide(ctx: JobContext) -> None:
    """The double-precision run of the original, when the job has one and it loads."""
    job = ctx.job
    ctx.accuracy.why_not = job.wide_why
    if job.wide is None:
        return
    try:
        ctx.wide = ctx.session.load(job.wide, scalar_dtypes(wide_args(job.sizes[0])))
    except Exception as e:  # a module or entry the driver refuses: no reference, nothing broken
        ctx.accuracy.why_not = f"its double-precision build does not load ({str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__})"


class Phases:
    """Wall time per phase of a job, for whoever tunes the evaluator (bench/throughput.py; a
    sanitizer child's run prints its own: sanitize/plain_runs.py)."""

    def __init__(self, into: dict[str, float]) -> None:
        self.into, self.last = into, time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.into[name] = now - self.last
        self.last = now


def _summary(job: EvalJob, result: EvalResult, counts: Counts) -> str:
    gpu = result.gpu.name if result.gpu else "GPU"
    checked = f"verified at {checked_text(counts)}"
    o = result.original_time
    if result.candidate_time and o and result.speedup:
        c = result.candidate_time
        ci = f", {job.timing.confidence:.0%} interval {result.speedup_ci[0]:.3f}-{result.speedup_ci[1]:.3f}" \
            if result.speedup_ci else ""
        return f"{result.speedup:.2f}x{ci} ({o.median_ms:.4g} ms -> {c.median_ms:.4g} ms on {gpu}; {checked})"
    if o:
        return f"original: {o.median_ms:.4g} ms at {result.bench_size} on {gpu} ({checked})"
    return checked


def _timed_summary(result: EvalResult) -> str:
    o, c = result.original_time, result.candidate_time
    gpu = result.gpu.name if result.gpu else "GPU"
    if o is None or c is None or not result.speedup:
        return "timed"
    return f"{result.speedup:.3f}x ({o.median_ms:.4g} ms -> {c.median_ms:.4g} ms at {result.bench_size} on {gpu}; timed only)"


# Freed between buffers, so memcheck sees an over-read land in no allocation. Small allocations
# share the driver's pools at 512-byte steps (seen on an H100: two 4-byte buffers 0x200 apart):
# a spacer from the same pool makes the gap; large buffers get regions of their own anyway.
SPACER_BYTES = 64 << 10


def _sanitize_runs(ctx: JobContext) -> None:
    """One launch per size on buffers of exactly the spec's length, each its own cuMemAlloc
    (256-byte aligned, as cudaMalloc): torch's caching allocator would hide an access past the
    end inside a larger block. Between buffers lies freed memory (a spacer allocated, then
    released), so an over-read lands in no allocation rather than in the next buffer, and the
    nearest buffer is the one read past. Everything is allocated before any launch and stays
    to the end; the map of buffers goes to stdout for the parent to read the tool's reports.
    `out` buffers are left as allocated, so initcheck sees a read of one before any write."""
    session, job = ctx.session, ctx.job
    who = "original" if job.sanitize_original or ctx.candidate is None else "candidate"
    kernel = ctx.kernel(who)
    fill_constants(ctx, seed_for(job, 0, 0))
    cuda = session.cuda
    keep: list[Any] = []
    spacers: list[Any] = []
    launches = []
    for index, plan in enumerate(job.sizes):
        inputs = make_inputs(session, plan, seed_for(job, index, 0))
        args: list[Any] = []
        addresses: dict[str, int] = {}
        for a in plan.args:
            if a.kind != "buffer":  # a scalar, a texture's handle, a captured value (its pointers below)
                args.append(a.value)
                continue
            nbytes = a.nbytes
            spacers.append(cuda.mem_alloc(SPACER_BYTES))
            exact = cuda.mem_alloc(nbytes)
            keep.append(exact)
            if a.direction != "out":  # `out` stays unwritten: initcheck reports a kernel that reads it
                cuda.memcpy_dtod(exact, inputs[a.name].data_ptr(), nbytes)
            args.append(pointer(a, int(exact), nbytes // max(a.numel, 1)))
            addresses[a.name] = int(exact)
            print(f"fsr-buffer {a.name} {plan.label.replace(' ', '')} {int(exact):#x} {nbytes}", flush=True)
        for at, value in link_writes(plan.args, addresses):  # memory holding pointers, at these addresses
            cuda.memcpy_htod(at, np.array([value], dtype=np.uint64))
        args = late_values(plan.args, args, addresses)
        launches.append((plan, launch_values(plan.args, args), plan.candidate if who == "candidate" else plan.original))
    spacers.append(cuda.mem_alloc(SPACER_BYTES))
    session.synchronize()
    for spacer in spacers:
        spacer.free()
    for plan, args, launch in launches:
        guarded_launch(session, who, plan.label, functools.partial(kernel.launch, args, launch))
    sys.stdout.flush()
