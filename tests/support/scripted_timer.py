"""The timing stand-in for performance on save (FSR_LSP_TIMER): the real CPU half (prepare: an
edit that only touches comments is "unchanged", a broken one does not compile), then a scripted
clock: each `for (int rep` loop in the kernel repeats its work once more, so it takes that much
longer; the interval is +-3%."""

from __future__ import annotations

from fsr_lsp.evaluator.job.prepare import prepare
from fsr_lsp.evaluator.records import EvalResult, TimingStats

BASE_MS = 0.4


def timing(ms: float) -> TimingStats:
    return TimingStats(median_ms=ms, min_ms=ms * 0.98, max_ms=ms * 1.02, p25_ms=ms * 0.99, p75_ms=ms * 1.01, reps=100)


def time_request(request) -> EvalResult:
    prepared = prepare(request.source, request.kernel, request.candidate, "sm_90", request.options)
    if prepared.job is None:
        assert prepared.result is not None
        return prepared.result
    then = BASE_MS * (1 + request.source.count("for (int rep"))
    now = BASE_MS * (1 + (request.candidate or "").count("for (int rep"))
    ratio = then / now
    return EvalResult(kernel=request.kernel, status="timed", message=f"{ratio:.3f}x (timed only)", speedup=ratio,
                      speedup_ci=(ratio * 0.97, ratio * 1.03), original_time=timing(then), candidate_time=timing(now),
                      bench_size=prepared.job.sizes[-1].label)
