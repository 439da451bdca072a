"""The original's runs made once per input set (gpu/oracle_cache.py), on the CPU test double: a
search's later jobs take a slow original's bench-size runs and timed runs from its first job,
never a wrong candidate's pass from them, and never the kept times for a candidate too close to
the original to be compared with times taken in another job."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fsr_lsp.evaluator.gpu.oracle_cache import OracleCache  # noqa: E402
from fsr_lsp.evaluator.gpu.run import run_job  # noqa: E402
from fsr_lsp.evaluator.job.plan import build_plans  # noqa: E402
from fsr_lsp.evaluator.records import EvalJob, TimingConfig  # noqa: E402
from fsr_lsp.kernels import find_kernel  # noqa: E402
from fsr_lsp.source import SourceText  # noqa: E402
from fsr_lsp.specs import parse_spec  # noqa: E402

from ..support import fake_kernels  # noqa: E402,F401  (registers the Python kernels)
from ..support.cuda_on_cpu import EmulatedSession, compiling_on_cpu, cxx  # noqa: E402
from ..support.fake_gpu import FakeSession, binary, kernel, view  # noqa: E402

BENCH = 4096
SOURCE = f"""/* @fsr
bench = {{ n = {BENCH} }}
tests = [ {{ n = 1 }}, {{ n = 1000 }} ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
a = 1.5
x = "in[n]"
y = "inout[n]"
*/
__global__ void axpy(int n, float a, const float* x, float* y) {{ }}
"""
SLOW_S = 0.03  # one run of the slow original at the bench size: past the 20 ms that keeps its timed runs
BENCH_RUNS: dict[str, int] = {}  # launches at the bench size, per kernel


def _axpy(n, a, x, y):
    view(y, n)[:] = a * view(x, n) + view(y, n)


def _counted(name: str, n: int) -> None:
    if n == BENCH:
        BENCH_RUNS[name] = BENCH_RUNS.get(name, 0) + 1


@kernel("slow_axpy")
def slow_axpy(n, a, x, y):
    _counted("slow_axpy", n)
    if n == BENCH:
        time.sleep(SLOW_S)
    _axpy(n, a, x, y)


@kernel("slow_axpy_too")
def slow_axpy_too(n, a, x, y):
    """As slow as the original: a speedup too small to compare with times from another job."""
    _counted("slow_axpy_too", n)
    if n == BENCH:
        time.sleep(SLOW_S * 0.8)
    _axpy(n, a, x, y)


@kernel("quick_axpy")
def quick_axpy(n, a, x, y):
    _counted("quick_axpy", n)
    _axpy(n, a, x, y)


_calls = {"n": 0}


@kernel("quick_axpy_idle_once_timed")
def quick_axpy_idle_once_timed(n, a, x, y):
    """Correct through verification, then does nothing at the bench size (a rewrite that skips work
    once it is being timed): only the timed runs, compared with the original's kept outputs, see it."""
    if n == BENCH:
        _calls["n"] += 1
        if _calls["n"] > 6:
            return
    _axpy(n, a, x, y)


def job(original: str, candidate: str | None, bench_seed: int | None, base_seed: int,
        seeds_shared: bool = False) -> EvalJob:
    src = SourceText(SOURCE)
    k = find_kernel(src, "axpy")
    return EvalJob(kernel="axpy", original=binary(original), candidate=binary(candidate) if candidate else None,
                   sizes=build_plans(k, parse_spec(src, k).spec), seeds_per_size=2, base_seed=base_seed,
                   bench_seed=bench_seed, seeds_shared=seeds_shared,
                   timing=TimingConfig(warmup=1, min_reps=8, max_reps=8, target_seconds=0.0))


SIZES_RUN: dict[int, int] = {}  # the counted original's launches, by n


@kernel("counted_axpy")
def counted_axpy(n, a, x, y):
    SIZES_RUN[n] = SIZES_RUN.get(n, 0) + 1
    _axpy(n, a, x, y)


@kernel("axpy_wrong_at_1000")
def axpy_wrong_at_1000(n, a, x, y):
    """Right at every size but n = 1000, where it drops the last element's update."""
    _axpy(n, a, x, y)
    if n == 1000:
        view(y, n)[-1] -= a * view(x, n)[-1]


def round_jobs(candidates: list[str], seeds_shared: bool = True) -> tuple[list, list[dict[int, int]]]:
    """A search's round on one worker: each candidate's job with the round's one base seed (or,
    `seeds_shared` False, each its own fresh one); the original's launches by size in each."""
    session = FakeSession()
    results, runs = [], []
    for i, candidate in enumerate(candidates):
        SIZES_RUN.clear()
        seed = 7 if seeds_shared else 100 + i
        results.append(run_job(session, job("counted_axpy", candidate, 11, base_seed=seed, seeds_shared=seeds_shared)))
        runs.append(dict(SIZES_RUN))
    return results, runs


def search_jobs(candidate: str, bench_seed: int | None = 11, later_seed: int | None = 11, session=None):
    """A search's baseline, then one candidate's job on the same worker (fresh test-size seeds)."""
    session = session or FakeSession()
    BENCH_RUNS.clear()
    baseline = run_job(session, job("slow_axpy", None, bench_seed, base_seed=1))
    assert baseline.status == "verified", baseline.message
    first = dict(BENCH_RUNS)
    BENCH_RUNS.clear()
    result = run_job(session, job("slow_axpy", candidate, later_seed, base_seed=2))
    return baseline, first, result, dict(BENCH_RUNS)


def timed_detail(result) -> str:
    return next(c.detail for c in result.checks if c.name == "timed runs verified")


def test_a_later_job_runs_the_slow_original_at_the_bench_size_never_again():
    baseline, first, result, runs = search_jobs("quick_axpy")
    assert first["slow_axpy"] >= 4 + 8  # its own checks there, then its timing
    assert result.status == "verified", result.message
    assert runs.get("slow_axpy", 0) == 0, runs
    assert runs["quick_axpy"] >= 4 + 8
    assert "from its own timing in an earlier job" in timed_detail(result)
    # the original's side is the baseline's own timed runs: the same times
    assert result.original_time == baseline.original_time
    assert result.speedup and result.speedup > 2


def test_another_bench_seed_or_none_runs_the_original_again():
    for bench_seed, later in ((11, 12), (None, None)):
        _, _, result, runs = search_jobs("quick_axpy", bench_seed, later)
        assert result.status == "verified", result.message
        assert runs["slow_axpy"] >= 4 + 8, (bench_seed, later, runs)
        assert "earlier job" not in timed_detail(result)


def test_a_candidate_too_close_to_the_original_is_timed_beside_it_again():
    _, _, result, runs = search_jobs("slow_axpy_too")
    assert result.status == "verified", result.message
    assert runs["slow_axpy"] >= 8, runs  # the timing ran the original again, side by side
    assert "earlier job" not in timed_detail(result)
    assert result.speedup is not None and result.speedup < 2


def test_kept_runs_still_fail_a_candidate_that_skips_work():
    _, _, result, _ = search_jobs("axpy_skips_when_done")
    assert result.status == "wrong", result.message
    assert any(c.name == "chained launches" and c.status == "fail" for c in result.checks), result.checks


def test_kept_timed_outputs_still_fail_a_candidate_idle_once_timed():
    _calls["n"] = 0
    _, _, result, runs = search_jobs("quick_axpy_idle_once_timed")
    assert runs.get("slow_axpy", 0) == 0  # judged by the kept runs alone
    assert result.status == "wrong", result.message
    assert any(c.name == "timed runs verified" and c.status == "fail" for c in result.checks), result.checks


def test_a_rounds_later_candidates_run_a_quick_original_at_no_test_size_again():
    """A round's seeds are shared: the original's runs on every input set (the spec's and the
    range sets) are made by the first candidate's job, however quick, and met by the next."""
    results, runs = round_jobs(["quick_axpy", "quick_axpy"])
    assert all(r.status == "verified" for r in results), [r.message for r in results]
    assert runs[0].get(1, 0) >= 4 and runs[0].get(1000, 0) >= 4, runs[0]  # two seeds, two runs each, range sets
    assert runs[1].get(1, 0) == 0 and runs[1].get(1000, 0) == 0, runs[1]
    assert results[1].range_sets == results[0].range_sets and results[1].range_sets


def test_fresh_seeds_run_the_original_at_every_test_size_each_job():
    results, runs = round_jobs(["quick_axpy", "quick_axpy"], seeds_shared=False)
    assert all(r.status == "verified" for r in results), [r.message for r in results]
    assert runs[1].get(1, 0) >= 4 and runs[1].get(1000, 0) >= 4, runs[1]


def test_a_candidate_wrong_at_one_test_size_fails_against_the_kept_runs():
    results, runs = round_jobs(["quick_axpy", "axpy_wrong_at_1000"])
    assert runs[1].get(1000, 0) == 0, runs[1]  # judged by the first job's runs alone
    assert results[1].status == "wrong", results[1].message
    assert "n=1000" in results[1].message, results[1].message


def test_kept_outputs_hold_their_own_memory_not_the_runs_buffers():
    """A run's last outputs are views of one allocation holding every buffer and its bands: kept
    as views, the cache would hold all of it while counting only the outputs' bytes."""
    session = FakeSession()
    run_job(session, job("counted_axpy", "quick_axpy", 11, base_seed=7, seeds_shared=True))
    kept = [v for v, _ in session.oracle_cache._entries.values() if hasattr(v, "expected")]
    assert len(kept) >= 3  # both test sizes and the bench size
    for runs in kept:
        for t in [*(e["y"] for e in runs.expected), runs.again["y"]]:
            assert t.untyped_storage().nbytes() == t.nbytes


def test_the_cache_keeps_within_its_budget_dropping_the_oldest():
    cache = OracleCache(100)
    assert cache.put("a", "A", 60) and cache.put("b", "B", 30)
    assert cache.get("a") == "A"  # a is now the most recently used
    assert cache.put("c", "C", 40)  # b goes to make room
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    assert cache.used == 100
    assert not cache.put("huge", "H", 101) and len(cache) == 2


def test_the_kept_outputs_are_the_originals_on_those_inputs():
    """What a later job compares with: the baseline's kept outputs equal a fresh run's."""
    session = FakeSession()
    run_job(session, job("slow_axpy", None, 11, base_seed=1))
    kept = [v for v, _ in session.oracle_cache._entries.values()]
    verify = next(v for v in kept if hasattr(v, "expected"))
    timed = next(v for v in kept if hasattr(v, "events_ms"))
    assert len(timed.outputs) == len(timed.events_ms) == len(timed.kernel_ms) == 8
    y = verify.expected[0]["y"].numpy()
    assert np.isfinite(y).all() and y.shape == (BENCH,)
    assert not np.array_equal(timed.outputs[0]["y"].numpy(), timed.outputs[1]["y"].numpy())  # fresh inputs each


MATMUL = (Path(__file__).parents[2] / "bench" / "matmul_forms" / "sgemm_xrows.cu").read_text()
# the same sum, its loop counting down: a different kernel that gives the same result to rounding
MATMUL_DOWN = MATMUL.replace("for (int i = 0; i < K; ++i)", "for (int i = K - 1; i >= 0; --i)")


@pytest.mark.skipif(cxx() is None, reason="no C++ compiler for the CPU emulator")
def test_the_runs_are_kept_through_prepare_for_a_real_kernel(monkeypatch):
    """Through the evaluator's own `prepare` (a double-precision build, the module's state, the
    spec's plans): a search's candidate job meets the baseline's kept runs, its double-precision
    run among them. Thresholds at 0: the emulator's matrix product is not slow enough to keep."""
    from fsr_lsp.evaluator.gpu import oracle_runs, timing
    from fsr_lsp.evaluator.job import prepare as preparing

    monkeypatch.setattr(oracle_runs, "WORTH_SECONDS", 0.0)
    monkeypatch.setattr(timing, "KEEP_TIMED_MS", 0.0)
    monkeypatch.setattr(timing, "REPLAY_FACTOR", 1e-9)  # any candidate: the emulator's times mean nothing
    source = MATMUL.replace("bench = { M = 4096, N = 4096, K = 4096 }", "bench = { M = 48, N = 40, K = 24 }")
    options = preparing.EvalOptions(timing=TimingConfig(warmup=1, min_reps=3, max_reps=3, target_seconds=0.0),
                                    bench_seed=5)
    session = EmulatedSession()
    preparing._wide_binary.cache_clear()
    try:
        with compiling_on_cpu():
            jobs = [preparing.prepare(source, "gemm_naive", candidate, "cpu", options).job
                    for candidate in (None, MATMUL_DOWN.split("*/", 1)[1])]
    finally:
        preparing._wide_binary.cache_clear()
    assert all(j is not None for j in jobs) and jobs[0].wide is not None
    baseline = run_job(session, jobs[0])
    assert baseline.status == "verified", baseline.message
    assert len(session.oracle_cache) == 2  # the bench size's runs and the timed runs
    stages: list[str] = []
    result = run_job(session, jobs[1], stages.append)
    assert result.status == "verified", result.message
    assert any("from an earlier job" in s for s in stages if s.startswith("checking M=48")), stages
    assert any("earlier job" in s for s in stages if s.startswith("timing")), stages
    assert session.oracle_cache.hits == 2


def test_a_slow_original_kept_on_a_machine_without_the_kernel_clock_is_kept_by_its_events():
    """No CUPTI (or events asked for): the baseline of a slow original is kept with its events and
    no kernel times, and a later candidate meets it. A KeyError here once ended every such search."""
    session = FakeSession()
    session.clock, session.clock_note = None, "no kernel clock (CUPTI not found)"
    baseline, _, result, runs = search_jobs("quick_axpy", session=session)
    assert baseline.clock.startswith("events: no kernel clock"), baseline.clock
    assert result.status == "verified", result.message
    assert runs.get("slow_axpy", 0) == 0, runs  # met the kept runs
    assert result.original_time == baseline.original_time
