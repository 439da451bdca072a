"""Two workers a GPU (backends/local.py `gpu_workers`): a job's checks share the GPU and only its
timed runs have it alone, so the second worker checks one candidate while the first times
another. It takes requests only once it is up (a batch never waits for its start) and only for
kernels whose original is quick to run again (its first job of a kernel makes the original's
runs anew)."""

from __future__ import annotations

import time

from fsr_lsp.evaluator import EvalOptions
from fsr_lsp.evaluator.backends import EvalRequest, LocalBackend, local
from fsr_lsp.evaluator.backends.local import gpu_workers
from fsr_lsp.evaluator.records import EvalJob, EvalResult, KernelBinary, LaunchPlan, SizePlan, TimingStats
from fsr_lsp.evaluator.worker.worker_client import Evaluator

from ..support import fake_workers

LAUNCH = LaunchPlan((1, 1, 1), (1, 1, 1))


class Prepared:
    def __init__(self, candidate: str) -> None:
        self.job = EvalJob(kernel="k", original=KernelBinary(b"", "k", "nvcc", "sm_90a"), candidate=None,
                           sizes=[SizePlan("n=1", "bench", {"n": 1}, [], LAUNCH, LAUNCH)])
        self.candidate = candidate


def requests(n: int, source: str = "// the original") -> list[EvalRequest]:
    return [EvalRequest(source, "k", f"// candidate {i}", EvalOptions()) for i in range(n)]


def backend(monkeypatch, baseline_ms: float) -> LocalBackend:
    """Two scripted workers on GPU 0 (the first 1.5 s of start, the second 4 s; half a second a job);
    the baseline answers `baseline_ms`."""
    monkeypatch.setattr(local, "prepare", lambda source, kernel, candidate, arch, options: Prepared(candidate))
    monkeypatch.setattr(local, "run_prepared", lambda evaluator, prepared, control=None: evaluator.run(prepared.job))
    monkeypatch.setattr(local, "evaluate_one", lambda evaluator, *a, **kw: EvalResult(
        kernel="k", status="verified", message="baseline", original_time=TimingStats(baseline_ms, 0, 0, 0, 0, 1)))
    monkeypatch.setattr(local.LocalBackend, "_keep_warm", lambda self, e: None)  # no sanitizer children here
    return LocalBackend([Evaluator(0, timeout=20, start_timeout=60, target=target)
                         for target in (fake_workers.slow_start_slow_jobs, fake_workers.slower_start_slow_jobs)])


def pids(results: list[EvalResult]) -> set[int]:
    return {int(r.message.split()[-1]) for r in results}


def test_the_second_worker_takes_half_a_quick_kernels_candidates_once_it_is_up(monkeypatch):
    b = backend(monkeypatch, baseline_ms=0.5)
    try:
        assert b.gpus == 1 and b.evaluate([EvalRequest("// the original", "k", None, EvalOptions())])[0].verified
        began = time.monotonic()
        first = b.evaluate(requests(2))  # the second starts in the background meanwhile: not waited for
        assert pids(first) == {b.evaluators[0]._proc.pid} and time.monotonic() - began < 3.5
        deadline = time.monotonic() + 30
        while not b.evaluators[1].alive and time.monotonic() < deadline:
            time.sleep(0.1)
        started = time.monotonic()
        both = b.evaluate(requests(6))
        assert all(r.status == "verified" for r in both) and len(pids(both)) == 2
        assert time.monotonic() - started < 6 * 0.5 * 0.8  # side by side, not one after the other
    finally:
        b.close()


def test_a_slow_originals_candidates_stay_on_the_first_worker(monkeypatch):
    """Its kept runs (seconds of the original's timed runs) live in the first worker: the second
    would make them again."""
    b = backend(monkeypatch, baseline_ms=275.0)
    try:
        b.evaluate([EvalRequest("// the original", "k", None, EvalOptions())])
        b.evaluate(requests(1))
        deadline = time.monotonic() + 30
        while not b.evaluators[1].alive and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pids(b.evaluate(requests(4))) == {b.evaluators[0]._proc.pid}
        other = b.evaluate(requests(4, source="// another kernel, no baseline seen"))  # unknown: quick
        assert len(pids(other)) == 2
    finally:
        b.close()


def test_the_backends_that_fsr_builds_have_two_workers_a_gpu_the_first_with_a_spare():
    workers = gpu_workers([0, 1], timeout=30)
    try:
        assert [(e.device_index, e.spare) for e in workers] == [(0, True), (0, False), (1, True), (1, False)]
        b = LocalBackend(workers)
        assert b.gpus == 2 and [e.device_index for e in b.firsts] == [0, 1]
    finally:
        for e in workers:
            e.close()


def test_a_profile_has_the_gpu_alone(monkeypatch):
    """A job's checks share the GPU now; Nsight Compute times the kernels it replays, so a profile
    waits for the GPU alone, as a timed run does."""
    from types import SimpleNamespace

    from fsr_lsp.evaluator.records import GpuInfo
    from fsr_lsp.evaluator.worker.gpu_gate import gate

    seen = []
    monkeypatch.setattr(local, "prepare", lambda *a: SimpleNamespace(job=object(), result=None))
    monkeypatch.setattr(local, "profile", lambda job, index, who: seen.append(gate(index).state) or "profiled")

    class Up:
        device_index = 13

        def start(self, stop=None):
            return GpuInfo(13, "test", "9.0", 1, 1, 1)

    assert LocalBackend(Up()).profile(EvalRequest("// the original", "k", None, EvalOptions())) == "profiled"  # type: ignore[arg-type]
    assert seen == [(True, 0)]
