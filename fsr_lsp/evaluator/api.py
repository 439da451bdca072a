"""One call from source text to verdict: prepare on the CPU, run on the GPU worker."""

from __future__ import annotations

import dataclasses

from .worker_client import Evaluator, EvaluatorUnavailable, StageCallback
from .prepare import EvalOptions, Prepared, prepare
from .records import CompileResult, EvalResult
from .sanitizer import sanitize


def evaluate(evaluator: Evaluator, source: str, kernel: str, candidate: str | None = None,
             options: EvalOptions | None = None, *, sanitize_winner: bool = False,
             timeout: float | None = None, on_stage: StageCallback | None = None) -> EvalResult:
    """Verify and time `candidate` (device code for `kernel`) against the kernel in `source`;
    without a candidate, check that the original can serve as the oracle and time it."""
    options = options or EvalOptions()
    try:
        gpu = evaluator.start()
    except EvaluatorUnavailable as e:
        return EvalResult(kernel=kernel, status="unavailable", message=str(e))
    prepared = prepare(source, kernel, candidate, gpu.arch, options)
    return run_prepared(evaluator, prepared, sanitize_winner=sanitize_winner, timeout=timeout, on_stage=on_stage)


def run_prepared(evaluator: Evaluator, prepared: Prepared, *, sanitize_winner: bool = False,
                 timeout: float | None = None, on_stage: StageCallback | None = None) -> EvalResult:
    """The GPU half: run a prepared job (if any) and merge the CPU-side checks into its result.
    Callers that compile many candidates in parallel call `prepare` themselves, then this."""
    base = prepared.result
    assert base is not None
    base.gpu = evaluator.gpu
    if prepared.job is None:
        base.compile = _without_binaries(base.compile)
        return base
    result = evaluator.run(prepared.job, timeout=timeout, on_stage=on_stage)
    result.screened = prepared.job.screen
    result.checks = base.checks + result.checks
    result.compile = _without_binaries(base.compile)
    result.warnings = base.warnings + result.warnings
    if prepared.launch_changed:
        result.warnings.append("the candidate changes the launch configuration (grid, block or smem)")
    if sanitize_winner and result.verified and prepared.job.candidate is not None:
        if on_stage:
            on_stage("compute-sanitizer memcheck and racecheck at every test size")
        checks = sanitize(prepared.job, evaluator.device_index)
        result.checks += checks
        failed = [c for c in checks if c.status == "fail"]
        if failed:
            spec = failed[0].name.endswith("(spec)")
            result.status = "spec_error" if spec else "wrong"
            result.message = failed[0].detail if spec else f"{failed[0].name} found errors: {failed[0].detail}"
        else:
            result.confirmed = True
    return result


def _without_binaries(compiled: dict[str, CompileResult]) -> dict[str, CompileResult]:
    """Result records carry no cubins: they are stored and sent as they are."""
    return {k: dataclasses.replace(c, binary=None) for k, c in compiled.items()}
