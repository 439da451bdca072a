"""One call from source text to verdict: prepare on the CPU, run on the GPU worker."""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from dataclasses import dataclass

from .worker.worker_client import Evaluator, EvaluatorUnavailable, StageCallback
from .job.prepare import EvalOptions, Prepared, prepare
from .records import Check, CompileResult, EvalJob, EvalResult
from .worker.gpu_gate import gate
from .sanitize.early import EarlySanitizers
from .sanitize.batch import Leader, sanitize_many
from .sanitize.sanitizer import TOOLS, Prewarm, sanitize
from .support import predicted_arch

RANGE_RERUNS = 12  # at most this many range sets left out of one job, one a run (there are ten)


@dataclass(frozen=True)
class JobControl:
    """How one evaluation is steered from outside: its time limit, each stage said as it starts,
    a cancel, and sanitizer children already loading (with `sanitize_winner`)."""

    timeout: float | None = None
    on_stage: StageCallback | None = None
    cancel: threading.Event | None = None
    prewarm: Prewarm | None = None
    early: EarlySanitizers | None = None  # the sanitizers' test sizes, run while the worker started


def evaluate(evaluator: Evaluator, source: str, kernel: str, candidate: str | None = None,
             options: EvalOptions | None = None, *, sanitize_winner: bool = False,
             control: JobControl | None = None) -> EvalResult:
    """Verify and time `candidate` (device code for `kernel`) against the kernel in `source`;
    without a candidate, check that the original can serve as the oracle and time it. With
    `sanitize_winner`, a verified candidate then runs under the sanitizers, whose children
    (`control.prewarm`, else started here) load while the GPU works."""
    options = options or EvalOptions()
    control = control or JobControl()
    cancel, prewarm = control.cancel, control.prewarm
    # The sanitizers' children load while the worker starts, compiles, verifies and times.
    if prewarm is None and sanitize_winner and candidate is not None:
        prewarm = Prewarm(TOOLS, evaluator.device_index)
    sanitizers: EarlySanitizers | None = None
    try:
        early = _compile_early(evaluator, source, kernel, candidate, options)
        if early is not None and prewarm is not None and sanitize_winner:  # a cold worker: its start is theirs
            sanitizers = EarlySanitizers(lambda: _compiled_job(early), prewarm, evaluator.device_index)
        try:
            gpu = evaluator.start(cancel)
        except EvaluatorUnavailable as e:
            return _not_started(kernel, e, cancel)
        prepared = early.result() if early is not None and early.arch == gpu.arch else None
        if prepared is None:
            prepared = prepare(source, kernel, candidate, gpu.arch, options)
        return run_prepared(evaluator, prepared, sanitize_winner=sanitize_winner,
                            control=dataclasses.replace(control, prewarm=prewarm, early=sanitizers))
    finally:
        if prewarm is not None:
            prewarm.close()
        if sanitizers is not None:
            sanitizers.close()


class _Early(threading.Thread):
    """`prepare` for the arch nvidia-smi predicts, on a thread, while the worker starts."""

    def __init__(self, arch: str, *args: object) -> None:
        super().__init__(daemon=True, name="fsr-compile-early")
        self.arch, self._args = arch, args
        self._prepared: Prepared | None = None

    def run(self) -> None:
        try:
            self._prepared = prepare(*self._args[:3], self.arch, *self._args[3:])  # type: ignore[arg-type]
        except Exception:  # the same call on the worker's arch says what went wrong
            self._prepared = None

    def result(self) -> Prepared | None:
        self.join()
        return self._prepared


def _compiled_job(early: _Early) -> tuple[EvalJob, int | None] | None:
    """The early compile's job and its candidate's static shared memory (None: ptxas did not say)."""
    prepared = early.result()
    if prepared is None or prepared.job is None or prepared.result is None:
        return None
    compiled = prepared.result.compile.get("candidate")
    resources = compiled.resources if compiled is not None else None
    return prepared.job, resources.shared_bytes if resources is not None else None


def _compile_early(evaluator: Evaluator, source: str, kernel: str, candidate: str | None,
                   options: EvalOptions) -> _Early | None:
    """Compiling overlaps the worker's start where the worker is not up yet and the GPU's arch
    can be told without it (evaluator.start() takes about 5 s: torch, the CUDA context)."""
    if getattr(evaluator, "alive", True):  # up already (or a stand-in that cannot say)
        return None
    arch = predicted_arch(evaluator.device_index)
    if arch is None:
        return None
    early = _Early(arch, source, kernel, candidate, options)
    early.start()
    return early


def run_prepared(evaluator: Evaluator, prepared: Prepared, *, sanitize_winner: bool = False,
                 control: JobControl | None = None) -> EvalResult:
    """The GPU half: run a prepared job (if any) and merge the CPU-side checks into its result.
    Callers that compile many candidates in parallel call `prepare` themselves, then this.
    With `sanitize_winner`, a verified candidate then runs under the sanitizers (their children
    already loading when `control.prewarm` is given), beside each other but never beside a timed run."""
    control = control or JobControl()
    timeout, on_stage, cancel, prewarm = control.timeout, control.on_stage, control.cancel, control.prewarm
    base = prepared.result
    assert base is not None
    base.gpu = evaluator.gpu
    if prepared.job is None:
        base.compile = _without_binaries(base.compile)
        return base
    result = _run_within_range(evaluator, prepared, timeout, on_stage, cancel)
    if result.reference_failed:  # the double-precision build crashed: the job again without it
        why = f"its double-precision build failed ({result.reference_failed})"
        prepared.job = dataclasses.replace(prepared.job, wide=None, wide_why=why)
        result = evaluator.run(prepared.job, timeout=timeout, on_stage=on_stage, stop=cancel)
    result.screened = prepared.job.screen
    result.checks = base.checks + result.checks
    result.compile = _without_binaries(base.compile)
    result.warnings = base.warnings + result.warnings
    if prepared.launch_changed:
        result.warnings.append("the candidate changes the launch configuration (grid, block or smem)")
    if sanitize_winner and result.verified and prepared.job.candidate is not None:
        if cancel is not None and cancel.is_set():
            return result
        if on_stage:
            on_stage("compute-sanitizer memcheck and racecheck")
        resources = result.resources.get("candidate")
        early = control.early
        if early is not None:  # its runs end (or stop at their limit) before this takes the gate
            early.join()
        with gate(evaluator.device_index).shared():
            checks = sanitize(prepared.job, evaluator.device_index, native_ms=result.native_ms,
                              static_shared=resources.shared_bytes if resources else None, cancel=cancel,
                              prewarm=early or prewarm)
        _sanitized(result, checks)
    return result


def _not_started(kernel: str, e: EvaluatorUnavailable, cancel: threading.Event | None) -> EvalResult:
    """The answer where the worker did not start: cancelled (the start was) or unavailable."""
    status = "cancelled" if cancel is not None and cancel.is_set() else "unavailable"
    return EvalResult(kernel=kernel, status=status, message=str(e))  # type: ignore[arg-type]


def _sanitized(result: EvalResult, checks: list[Check]) -> None:
    """The sanitizers' checks into a verified candidate's result: a failure is its verdict, a
    run not cancelled confirms it."""
    result.checks += checks
    failed = [c for c in checks if c.status == "fail"]
    if failed:
        spec = failed[0].name.endswith("(spec)")
        result.status = "spec_error" if spec else "wrong"
        result.message = failed[0].detail if spec else f"{failed[0].name} found errors: {failed[0].detail}"
    elif not any(c.status == "skip" and c.detail == "cancelled" for c in checks):
        result.confirmed = True


def confirm_together(evaluator: Evaluator, requests: list[tuple[str, str, str, EvalOptions]],
                     control: JobControl | None = None) -> list[EvalResult]:
    """Several candidates' stricter verification (each request: source, kernel, candidate,
    options), as `evaluate` with `sanitize_winner` gives each, but the sanitizers of every one
    verified run in one child per tool (sanitize/batch.py): a round's leaders pay for one tool
    start, not one each. Each is still judged on its own."""
    control = control or JobControl()
    cancel, prewarm = control.cancel, control.prewarm
    try:
        try:
            gpu = evaluator.start(cancel)
        except EvaluatorUnavailable as e:
            return [_not_started(r[1], e, cancel) for r in requests]
        results, leaders, verified = [], [], []
        for source, kernel, candidate, options in requests:
            prepared = prepare(source, kernel, candidate, gpu.arch, options)
            result = run_prepared(evaluator, prepared, control=dataclasses.replace(control, prewarm=None))
            results.append(result)
            if result.verified and prepared.job is not None and prepared.job.candidate is not None:
                resources = result.resources.get("candidate")
                leaders.append(Leader(prepared.job, result.native_ms, resources.shared_bytes if resources else None))
                verified.append(result)
        if leaders and not (cancel is not None and cancel.is_set()):
            if control.on_stage:
                control.on_stage("compute-sanitizer memcheck and racecheck")
            with gate(evaluator.device_index).shared():
                checks = sanitize_many(leaders, evaluator.device_index, cancel=cancel, prewarm=prewarm)
            prewarm = None  # closed by sanitize_many
            for result, own in zip(verified, checks):
                _sanitized(result, own)
        return results
    finally:
        if prewarm is not None:
            prewarm.close()


_FAULTED_ON: dict[str, list[str]] = {}  # an original's digest -> the range sets it faulted on, in this process


def _run_within_range(evaluator: Evaluator, prepared: Prepared, timeout: float | None,
                      on_stage: StageCallback | None, cancel: threading.Event | None) -> EvalResult:
    """Run the job; where the original faults on an input set that probes the range (its domain
    ends there, and the CUDA context with it), run it again without that set, and leave the
    set out of later jobs of the same original."""
    assert prepared.job is not None
    digest = hashlib.sha256(prepared.job.original.cubin + prepared.job.original.entry.encode()).hexdigest()
    for _ in range(RANGE_RERUNS):
        skip = sorted(set(prepared.job.range_skip) | set(_FAULTED_ON.get(digest, ())))
        if skip != prepared.job.range_skip:
            prepared.job = dataclasses.replace(prepared.job, range_skip=skip)
        result = evaluator.run(prepared.job, timeout=timeout, on_stage=on_stage, stop=cancel)
        if not result.range_failed or result.range_failed in skip:
            return result
        _FAULTED_ON.setdefault(digest, []).append(result.range_failed)
    return result


def _without_binaries(compiled: dict[str, CompileResult]) -> dict[str, CompileResult]:
    """Result records carry no cubins: they are stored and sent as they are."""
    return {k: dataclasses.replace(c, binary=None) for k, c in compiled.items()}
