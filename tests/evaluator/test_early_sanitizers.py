"""The sanitizers' test sizes run while a cold worker starts (evaluator/sanitize/early.py): what
they finished is not run again, what they found still decides, and nothing is checked less.
GPU-free: the tools' children are stand-ins that answer as compute-sanitizer prints."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from fsr_lsp.evaluator import api
from fsr_lsp.evaluator.job.prepare import Prepared
from fsr_lsp.evaluator.records import EvalResult, GpuInfo, KernelBinary
from fsr_lsp.evaluator.sanitize import early, sanitizer
from fsr_lsp.evaluator.worker.gpu_gate import gate

from ..support.sanitizer_outputs import CLEAN, MAP, X_AT_65537, invalid, stand_in
from .test_verification_cost import NATIVE, small_job

TEST_SIZES = ["n=1", "n=1000", "n=65537"]
HAZARD = (86, "========= Error: Race reported between Write access at k+0x90\n"
              "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")


class Ahead:
    """A head start whose runs already ended."""

    def __init__(self, done) -> None:
        self.done = done

    def take(self, tool):
        return None

    def done_for(self, job):
        return self.done

    def close(self) -> None:
        pass


class NoChildren:
    """A Prewarm that starts no process."""

    def __init__(self, tools=sanitizer.TOOLS, device_index=0) -> None:
        self.tools = tools

    def take(self, tool):
        return None

    def done_for(self, job):
        return {}

    def close(self) -> None:
        pass


def recording_tools(monkeypatch, answer=lambda tool, job: CLEAN[tool]):
    """Every tool run, in both modules, recorded as (tool, size labels, original?, when, gate state)."""
    calls = []

    def run_children(work, tool_path, device_index, timeout, cancel=None, prewarm=None):
        out = {}
        for tool, job in work:
            calls.append((tool, [p.label for p in job.sizes], job.sanitize_original, time.monotonic(),
                          gate(device_index).state))
            out[tool] = answer(tool, job)
        return out

    stand_in(monkeypatch, run_children, (early,))
    return calls


def test_sizes_a_head_start_finished_are_not_run_again_and_its_passes_count(monkeypatch):
    calls = recording_tools(monkeypatch)
    done = {t: (frozenset(TEST_SIZES), CLEAN[t]) for t in sanitizer.TOOLS}
    memcheck, racecheck = sanitizer.sanitize(small_job(), native_ms=NATIVE, static_shared=1024, prewarm=Ahead(done))
    assert [(c[0], c[1]) for c in calls] == [("memcheck", ["n=16777216"])]  # only what the plan adds: the bench size
    assert memcheck.status == racecheck.status == "pass"
    assert memcheck.detail == "0 errors at n=1, n=1000, n=65537, n=16777216 (exact allocations)"


def test_a_fault_an_early_run_found_fails_the_candidate_and_names_the_buffer(monkeypatch):
    recording_tools(monkeypatch)
    early_out = (86, MAP + invalid("read", 4, X_AT_65537 + 262148 + 8) + "========= ERROR SUMMARY: 1 error\n")
    done = {"memcheck": (frozenset(TEST_SIZES), early_out), "racecheck": (frozenset(TEST_SIZES), HAZARD)}
    memcheck, racecheck = sanitizer.sanitize(small_job(), native_ms=NATIVE, static_shared=1024, prewarm=Ahead(done))
    assert memcheck.status == "fail" and "past the end of `x` at n=65537" in memcheck.detail
    assert racecheck.status == "fail" and "Race reported" in racecheck.detail


def test_a_run_the_early_limit_stopped_is_run_again(monkeypatch):
    calls = recording_tools(monkeypatch)
    done = {"memcheck": (frozenset(TEST_SIZES), CLEAN["memcheck"])}  # racecheck did not finish: not in done
    sanitizer.sanitize(small_job(), native_ms=NATIVE, static_shared=1024, prewarm=Ahead(done))
    assert sorted((c[0], tuple(c[1])) for c in calls) == [("memcheck", ("n=16777216",)),
                                                         ("racecheck", tuple(TEST_SIZES))]


def compiled(job):
    return lambda: (job, 1024)


def test_early_runs_check_the_test_sizes_sharing_the_gpu_and_keep_only_what_ended(monkeypatch):
    stopped = {"racecheck": (None, "did not finish within 5 s")}
    calls = recording_tools(monkeypatch, lambda tool, job: stopped.get(tool, CLEAN[tool]))
    monkeypatch.setattr(early, "Prewarm", NoChildren)
    job = small_job()
    runs = early.EarlySanitizers(compiled(job), NoChildren(), device_index=5)  # type: ignore[arg-type]
    runs.join(timeout=10)
    assert sorted((c[0], tuple(c[1])) for c in calls) == [("memcheck", tuple(TEST_SIZES)),
                                                         ("racecheck", tuple(TEST_SIZES))]
    assert all(c[4] == (False, 1) for c in calls)  # shared, never beside a timed run
    assert set(runs.done_for(job)) == {"memcheck"}  # racecheck was stopped: run again later
    other = dataclasses.replace(job, candidate=KernelBinary(b"another arch", "saxpy", "nvcc", "sm_80"))
    assert runs.done_for(other) == {}  # built for another arch than the worker's: dropped
    assert runs.later is not None and runs.later.tools == ("memcheck", "racecheck")
    runs.close()


def test_nothing_runs_early_without_a_candidate_or_once_closed(monkeypatch):
    calls = recording_tools(monkeypatch)
    monkeypatch.setattr(early, "Prewarm", NoChildren)
    alone = dataclasses.replace(small_job(), candidate=None)
    early.EarlySanitizers(compiled(alone), NoChildren()).join(timeout=10)  # type: ignore[arg-type]
    slow = threading.Event()
    runs = early.EarlySanitizers(lambda: (slow.wait(), (small_job(), 1024))[1], NoChildren())  # type: ignore[arg-type]
    runs.close()
    slow.set()
    runs.join(timeout=10)
    assert calls == [] and runs.later is None


class ColdWorker:
    """A worker that takes a while to start, then verifies (or not) in a job under its gate."""

    device_index = 0

    def __init__(self, verdict: str = "verified") -> None:
        self.gpu, self.alive, self.verdict, self.started_at, self.job_at = None, False, verdict, 0.0, 0.0

    def start(self, stop=None) -> GpuInfo:
        time.sleep(0.5)
        self.started_at = time.monotonic()
        self.gpu, self.alive = GpuInfo(0, "test", "9.0", 1, 1, 1), True
        return self.gpu

    def run(self, job, timeout=None, on_stage=None, stop=None) -> EvalResult:
        with gate(0).exclusive():
            self.job_at = time.monotonic()
            return EvalResult(kernel=job.kernel, status=self.verdict, message=self.verdict, native_ms=dict(NATIVE))


@pytest.fixture
def cold(monkeypatch):
    """`api.evaluate` on a cold worker, prepare and the sanitizer children stood in for."""
    monkeypatch.setattr(api, "prepare", lambda *a: Prepared(job=small_job(), result=EvalResult("saxpy", "verified", "")))
    monkeypatch.setattr(api, "predicted_arch", lambda index: "sm_90a")
    monkeypatch.setattr(api, "Prewarm", NoChildren)
    monkeypatch.setattr(early, "Prewarm", NoChildren)
    return recording_tools(monkeypatch)


def test_a_cold_evaluation_sanitizes_the_test_sizes_while_the_worker_starts(cold):
    worker = ColdWorker()
    result = api.evaluate(worker, "src", "saxpy", "cand", sanitize_winner=True)  # type: ignore[arg-type]
    before = sorted((c[0], tuple(c[1])) for c in cold if c[3] < worker.started_at)
    assert before == [("memcheck", tuple(TEST_SIZES)), ("racecheck", tuple(TEST_SIZES))]  # beside the start
    after = [(c[0], c[1]) for c in cold if c[3] > worker.job_at]
    assert after == [("memcheck", ["n=16777216"])] and len(before) + len(after) == len(cold)  # none run twice
    checks = {c.name: c for c in result.checks}
    assert result.status == "verified" and result.confirmed
    assert checks["sanitizer memcheck"].detail == "0 errors at n=1, n=1000, n=65537, n=16777216 (exact allocations)"


def test_a_candidate_that_fails_verification_says_so_and_nothing_runs_after(cold):
    worker = ColdWorker("wrong")
    result = api.evaluate(worker, "src", "saxpy", "cand", sanitize_winner=True)  # type: ignore[arg-type]
    assert result.status == "wrong" and all(c[3] < worker.job_at for c in cold)
    assert not any(c.name.startswith("sanitizer") for c in result.checks)


def test_a_warm_worker_sanitizes_after_the_verification_as_before(cold):
    worker = ColdWorker()
    worker.start()
    result = api.evaluate(worker, "src", "saxpy", "cand", sanitize_winner=True)  # type: ignore[arg-type]
    assert cold and all(c[3] > worker.job_at for c in cold) and result.confirmed
