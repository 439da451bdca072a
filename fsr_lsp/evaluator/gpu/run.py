"""One evaluation on the GPU: the original is the oracle, the candidate must match it.

Defences against a wrong-but-passing rewrite, in the order they run:
- outputs poisoned before every run (NaN, then a byte pattern): unwritten elements fail;
- `in` buffers compared bit for bit after every run: a kernel may not scribble on inputs;
- every size and seed run twice with different poisons: races and reads of uninitialised
  memory show up as disagreement;
- the outputs of the *timed* runs are checked too, on inputs drawn afresh for every run and
  copied into the same buffers, so a kernel that caches results across launches (by
  address or otherwise), counts launches, or skips work once timed fails;
- an edge size that is not a multiple of the block size when the spec has none.
The original passes the same self-checks first; if it cannot, the spec (not the candidate)
is at fault and the result says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..records import ArgPlan, Check, EvalJob, EvalResult, LaunchPlan, Mismatch, SizePlan, TimingStats
from .buffers import count_bad, describe, generate, poison, poisoned, storage_dtype
from .ref import RefError, eval_ref
from .session import GpuSession, LoadedKernel

Report = Callable[[str], None]


class Failure(Exception):
    """Ends a job early with a verdict."""

    def __init__(self, status: str, message: str, check: str | None = None, mismatch: Mismatch | None = None,
                 restart: bool = False) -> None:
        super().__init__(message)
        self.status, self.message, self.check, self.mismatch, self.restart = status, message, check, mismatch, restart


@dataclass
class _Kernels:
    original: LoadedKernel
    candidate: LoadedKernel | None


@dataclass
class _Counts:
    sizes: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    ref_compared: int = 0


def run_job(session: GpuSession, job: EvalJob, report: Report = lambda _: None) -> EvalResult:
    started = time.perf_counter()
    result = EvalResult(kernel=job.kernel, status="verified", message="", gpu=session.info)
    torch = session.torch
    try:
        dtypes = [None if a.kind == "buffer" else a.dtype for a in job.sizes[0].args]
        kernels = _Kernels(session.load(job.original, dtypes),
                           session.load(job.candidate, dtypes) if job.candidate else None)
        result.resources["original"] = kernels.original.resources()
        if kernels.candidate:
            result.resources["candidate"] = kernels.candidate.resources()
        if job.mode == "sanitize":
            _sanitize_runs(session, job, kernels, report)
            result.message = "ran under compute-sanitizer"
        else:
            counts = _verify(session, job, kernels, result, report)
            result.sizes_checked, result.seeds = counts.sizes, counts.seeds
            _time(session, job, kernels, result, report)
            result.message = _summary(job, result, counts)
    except Failure as f:
        result.status = f.status  # type: ignore[assignment]
        result.message = f.message
        result.mismatch = f.mismatch
        result.restart_worker = f.restart
        if f.check:
            result.checks.append(Check(f.check, "fail", f.mismatch.describe() if f.mismatch else f.message))
    except torch.cuda.OutOfMemoryError as e:
        result.status, result.message, result.restart_worker = "oom", f"out of GPU memory: {e}".splitlines()[0], True
    result.seconds = time.perf_counter() - started
    return result


# ------------------------------------------------------------------ verification


def _verify(session: GpuSession, job: EvalJob, kernels: _Kernels, result: EvalResult, report: Report) -> _Counts:
    counts = _Counts()
    ref_usable = bool(job.ref)
    for index, plan in enumerate(job.sizes):
        usable = True
        for j in range(job.seeds_per_size):
            seed = _seed(job, index, j)
            report(f"checking {plan.label} (seed {seed})")
            inputs = _inputs(session, plan, seed)
            expected = _run(session, kernels.original, plan.original, plan, inputs, "A", "original", report)
            again = _run(session, kernels.original, plan.original, plan, inputs, "B", "original", report)
            problem = _oracle_problem(session, plan, inputs, expected, again)
            if problem:
                if plan.role == "edge":
                    result.warnings.append(f"edge size {plan.label} skipped: the original {problem}")
                    usable = False
                    break
                raise Failure("spec_error", f"the original kernel cannot serve as the oracle at {plan.label}: {problem}")
            reference = None
            if ref_usable:
                reference, ref_problem = _reference(session, job, plan, inputs, expected, seed)
                if ref_problem:
                    result.warnings.append(ref_problem)
                    ref_usable = False
                    reference = None
                else:
                    counts.ref_compared += 1
            if kernels.candidate is not None:
                _check_candidate(session, kernels.candidate, plan, inputs, expected, reference, seed, report)
            counts.seeds.append(seed)
        if usable:
            counts.sizes.append(plan.label)
    n = len(counts.sizes)
    detail = f"{n} sizes x {job.seeds_per_size} seeds"
    who = "candidate" if kernels.candidate else "original"
    if kernels.candidate:
        result.checks += [
            Check("matches original", "pass", detail),
            Check("every output written", "pass", "outputs poisoned with NaN and a byte pattern before each run"),
            Check("inputs unchanged", "pass", "in buffers compared bit for bit after each run"),
            Check("repeatable", "pass", "two runs per input agree (no race or uninitialised read seen)"),
        ]
    else:
        result.checks.append(Check("original self-consistent", "pass", f"{detail}: writes every output, same result twice"))
    if job.ref:
        status = "pass" if ref_usable else "skip"
        result.checks.append(Check(f"{who} matches ref", status, f"{counts.ref_compared} runs" if ref_usable else "ref disagrees with the original"))
    if any(p.role == "edge" for p in job.sizes):
        edge = next(p for p in job.sizes if p.role == "edge")
        state = "pass" if edge.label in counts.sizes else "skip"
        result.checks.append(Check("non-multiple size", state, edge.label))
    return counts


def _seed(job: EvalJob, size_index: int, j: int) -> int:
    return (job.base_seed + 7919 * size_index + j) % (1 << 62)


def _inputs(session: GpuSession, plan: SizePlan, seed: int) -> dict[str, Any]:
    """Pristine input buffers (in and inout) for one seed."""
    gen = session.torch.Generator(device=session.device)
    gen.manual_seed(seed)
    return {a.name: generate(session.torch, session.device, a, gen)
            for a in plan.args if a.kind == "buffer" and a.direction != "out"}


def _run(session: GpuSession, kernel: LoadedKernel, launch: LaunchPlan, plan: SizePlan, inputs: dict[str, Any],
         which: str, who: str, report: Report) -> dict[str, Any]:
    """Launch once on copies of the inputs and poisoned outputs; returns every buffer after."""
    torch = session.torch
    buffers = {a.name: (inputs[a.name].clone() if a.direction != "out" else poisoned(torch, session.device, a, which))
               for a in plan.args if a.kind == "buffer"}
    args = [buffers[a.name].data_ptr() if a.kind == "buffer" else a.value for a in plan.args]
    _guarded(session, who, plan.label, lambda: kernel.launch(args, launch))
    return buffers


def _guarded(session: GpuSession, who: str, where: str, launch: Callable[[], None]) -> None:
    """Run a launch and wait for it; a CUDA error becomes a verdict on whoever launched."""
    try:
        launch()
        session.synchronize()
    except Exception as e:
        if isinstance(e, session.torch.cuda.OutOfMemoryError):
            raise
        status = "crashed" if who == "candidate" else "spec_error"
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise Failure(status, f"the {who} kernel failed at {where}: {text}", check=f"{who} runs",
                      restart=True) from None


def _outputs(plan: SizePlan) -> list[ArgPlan]:
    return [a for a in plan.args if a.kind == "buffer" and a.direction != "in"]


def _inputs_only(plan: SizePlan) -> list[ArgPlan]:
    return [a for a in plan.args if a.kind == "buffer" and a.direction == "in"]


def _oracle_problem(session: GpuSession, plan: SizePlan, inputs: dict, first: dict, second: dict) -> str | None:
    torch = session.torch
    for a in _inputs_only(plan):
        if not torch.equal(first[a.name], inputs[a.name]):
            return f"modifies {a.name}, which the spec declares in (declare it inout)"
    for a in _outputs(plan):
        m = describe(torch, "oracle", plan.label, 0, a, second[a.name], first[a.name], None)
        if m is not None:
            if a.direction == "out":
                return (f"does not write every element of {a.name} or is not deterministic ({m.bad} of {m.total} "
                        f"elements differ between two runs; declare {a.name} inout if the kernel updates only part of it)")
            return f"is not deterministic: {m.bad} of {m.total} elements of {a.name} differ between two runs"
    return None


def _reference(session: GpuSession, job: EvalJob, plan: SizePlan, inputs: dict, expected: dict,
               seed: int) -> tuple[dict | None, str | None]:
    try:
        reference = eval_ref(session.torch, job.ref, plan, inputs)
    except RefError as e:
        return None, f"ref not used: {e}"
    args = {a.name: a for a in plan.args}
    for name, value in reference.items():
        m = describe(session.torch, "ref", plan.label, seed, args[name], expected[name], value, None)
        if m is not None:
            return None, f"ref not used: the original disagrees with ref.{name} at {plan.label} ({m.describe()})"
    return reference, None


def _check_candidate(session: GpuSession, kernel: LoadedKernel, plan: SizePlan, inputs: dict, expected: dict,
                     reference: dict | None, seed: int, report: Report) -> None:
    torch = session.torch
    first = _run(session, kernel, plan.candidate, plan, inputs, "A", "candidate", report)
    _compare(session, "matches original", plan, first, expected, seed, "A")
    for a in _inputs_only(plan):
        if not torch.equal(first[a.name], inputs[a.name]):
            changed = int((first[a.name] != inputs[a.name]).sum().item())
            raise Failure("wrong", f"the candidate modifies input {a.name} ({changed} elements) at {plan.label}",
                          check="inputs unchanged")
    second = _run(session, kernel, plan.candidate, plan, inputs, "B", "candidate", report)
    args = {a.name: a for a in plan.args}
    for a in _outputs(plan):
        if describe(torch, "repeatable", plan.label, seed, a, second[a.name], first[a.name], None) is not None:
            m = describe(torch, "repeatable", plan.label, seed, a, second[a.name], expected[a.name], "B")
            detail = m.describe() if m else ""
            raise Failure("wrong", f"the candidate gives different results on the same input at {plan.label}: "
                                   f"a race, or a read of memory nothing wrote ({detail})", check="repeatable", mismatch=m)
    if reference is not None:
        for name, value in reference.items():
            m = describe(torch, "matches ref", plan.label, seed, args[name], first[name], value, None)
            if m is not None:
                raise Failure("wrong", f"the candidate disagrees with ref.{name}: {m.describe()}", check="matches ref", mismatch=m)


def _compare(session: GpuSession, check: str, plan: SizePlan, got: dict, expected: dict, seed: int, which: str) -> None:
    for a in _outputs(plan):
        m = describe(session.torch, check, plan.label, seed, a, got[a.name], expected[a.name], which)
        if m is not None:
            check_name = "every output written" if m.unwritten == m.bad and m.unwritten > 0 else check
            raise Failure("wrong", f"the candidate's output differs from the original's: {m.describe()}",
                          check=check_name, mismatch=m)


# ------------------------------------------------------------------ timing


@dataclass
class _Contender:
    name: str
    launch: Callable[[list[Any]], None] | None  # None for the ref (a torch expression)
    buffers: dict[str, Any]  # fixed working buffers: new contents every run, same addresses
    times: list[tuple[Any, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)


def _time(session: GpuSession, job: EvalJob, kernels: _Kernels, result: EvalResult, report: Report) -> None:
    """Interleaved timing on inputs that are new for every repetition.

    Each repetition draws fresh inputs, copies them into every contender's fixed buffers,
    and times each contender once (the order alternates so drift cancels). The candidate's
    outputs are compared with the original's from the same repetition: a kernel that caches
    results by address, counts launches or skips work once timed gives stale outputs here.
    """
    torch = session.torch
    bench = next(p for p in reversed(job.sizes) if p.role == "bench")
    cfg = job.timing
    report(f"timing at {bench.label}")
    buffer_args = [a for a in bench.args if a.kind == "buffer"]
    outputs = _outputs(bench)
    pristine = _inputs(session, bench, _seed(job, len(job.sizes) + 1, 0))

    def working() -> dict[str, Any]:
        return {a.name: torch.empty(a.numel, dtype=storage_dtype(torch, a.dtype), device=session.device)
                for a in buffer_args}

    def kernel_launch(kernel: LoadedKernel, launch: LaunchPlan) -> Callable[[list[Any]], None]:
        return lambda args: kernel.launch(args, launch)

    contenders = [_Contender("original", kernel_launch(kernels.original, bench.original), working())]
    if kernels.candidate:
        contenders.append(_Contender("candidate", kernel_launch(kernels.candidate, bench.candidate), working()))
    if job.ref and not any(w.startswith("ref not used") for w in result.warnings):
        contenders.append(_Contender("ref", None, {}))
    bad = {c.name: torch.zeros((), dtype=torch.int64, device=session.device) for c in contenders}
    touched = torch.zeros((), dtype=torch.int64, device=session.device)
    generator = torch.Generator(device=session.device)
    generator.manual_seed(_seed(job, len(job.sizes) + 2, 0))

    def once(c: _Contender, timed: bool) -> None:
        if c.launch is not None:
            for a in buffer_args:
                if a.direction == "out":
                    poison(torch, c.buffers[a.name], a, "A")
                else:
                    c.buffers[a.name].copy_(pristine[a.name])
        if cfg.flush_l2:
            session.flush_l2()
        session.hold_gpu()  # keeps the GPU busy while Python submits the launch: no host latency in the time
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        if c.launch is not None:
            c.launch([c.buffers[a.name].data_ptr() if a.kind == "buffer" else a.value for a in bench.args])
            c.outputs = c.buffers
        else:
            c.outputs = eval_ref(torch, job.ref, bench, pristine)
        end.record()
        if timed:
            c.times.append((start, end))

    def repetition(r: int, timed: bool) -> None:
        for a in buffer_args:
            if a.name in pristine:
                pristine[a.name].copy_(generate(torch, session.device, a, generator))
        for c in (contenders if r % 2 == 0 else list(reversed(contenders))):
            once(c, timed)
        expected = contenders[0].outputs
        for c in contenders[1:]:
            for a in outputs:
                bad[c.name] += count_bad(torch, c.outputs[a.name], expected[a.name], a)
        for c in contenders:
            if c.launch is not None:
                for a in _inputs_only(bench):
                    touched.add_((c.buffers[a.name] != pristine[a.name]).sum())

    def sync(where: str) -> None:
        _guarded(session, "candidate" if kernels.candidate else "original", where, lambda: None)

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
            report(f"timing at {bench.label}: {r + 1}/{reps} runs")
    sync("timing")
    stats = {c.name: _stats([s.elapsed_time(e) for s, e in c.times]) for c in contenders}
    counts = {name: int(v.item()) for name, v in bad.items()}
    if int(touched.item()):
        who = "candidate" if kernels.candidate else "original"
        raise Failure("wrong" if kernels.candidate else "spec_error",
                      f"an in buffer was modified during the timed runs ({who})", check="inputs unchanged")
    if kernels.candidate:
        if counts["candidate"]:
            raise Failure("wrong", f"{counts['candidate']} output elements of the timed runs differ from the original's "
                                   "on the same fresh inputs: the candidate caches results across launches, skips work, "
                                   "or depends on state left by earlier runs", check="timed runs verified")
        result.checks.append(Check("timed runs verified", "pass",
                                   f"{reps + cfg.warmup} runs, each on freshly generated inputs"))
    if counts.get("ref"):
        result.warnings.append(f"ref disagreed with the original on {counts['ref']} elements of its timed runs")
    result.bench_size = bench.label
    result.original_time = stats["original"]
    result.candidate_time = stats.get("candidate")
    result.ref_time = stats.get("ref")
    if result.candidate_time:
        result.speedup = result.original_time.median_ms / result.candidate_time.median_ms
    if result.ref_time:
        base = result.candidate_time or result.original_time
        result.speedup_vs_ref = result.ref_time.median_ms / base.median_ms


def _stats(times: list[float]) -> TimingStats:
    s = sorted(times)
    n = len(s)

    def q(p: float) -> float:
        x = p * (n - 1)
        lo = int(x)
        hi = min(lo + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (x - lo)

    return TimingStats(median_ms=q(0.5), min_ms=s[0], max_ms=s[-1], p25_ms=q(0.25), p75_ms=q(0.75), reps=n)


def _summary(job: EvalJob, result: EvalResult, counts: _Counts) -> str:
    gpu = result.gpu.name if result.gpu else "GPU"
    checked = f"verified at {len(counts.sizes)} sizes x {job.seeds_per_size} seeds"
    o = result.original_time
    if result.candidate_time and o and result.speedup:
        c = result.candidate_time
        return f"{result.speedup:.2f}x ({o.median_ms:.4g} ms -> {c.median_ms:.4g} ms on {gpu}; {checked})"
    if o:
        return f"original: {o.median_ms:.4g} ms at {result.bench_size} on {gpu} ({checked})"
    return checked


def _sanitize_runs(session: GpuSession, job: EvalJob, kernels: _Kernels, report: Report) -> None:
    """One launch per size on buffers of exactly the spec's length, each its own cuMemAlloc:
    torch's caching allocator would hide an access just past the end inside a larger block."""
    kernel = kernels.candidate or kernels.original
    who = "candidate" if kernels.candidate else "original"
    cuda = session.cuda
    for index, plan in enumerate(job.sizes):
        inputs = _inputs(session, plan, _seed(job, index, 0))
        launch = plan.candidate if kernels.candidate else plan.original
        exact: list[Any] = []
        args: list[Any] = []
        for a in plan.args:
            if a.kind == "scalar":
                args.append(a.value)
                continue
            source = inputs[a.name] if a.direction != "out" else poisoned(session.torch, session.device, a, "A")
            nbytes = source.numel() * source.element_size()
            exact.append(cuda.mem_alloc(nbytes))
            cuda.memcpy_dtod(exact[-1], source.data_ptr(), nbytes)
            args.append(int(exact[-1]))
        session.synchronize()
        _guarded(session, who, plan.label, lambda: kernel.launch(args, launch))
