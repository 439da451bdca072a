"""Every compile of a candidate runs under limits; a limit hit is a clear rejection, and the
next compile works (the search goes on)."""

import dataclasses
import time

import pytest

from fsr_lsp.evaluator.compile.compiler import CompileOptions, KernelRef, compile_kernel
from fsr_lsp.evaluator.compile.limits import CompileLimits, limit_hit, run_limited
from fsr_lsp.evaluator.job.prepare import EvalOptions, prepare
from fsr_lsp.evaluator.compile.sandbox import LimitHit, Sandbox

from ..conftest import EXAMPLES

SAXPY = (EXAMPLES / "saxpy.cu").read_text()


def test_the_limits_name_what_was_exceeded():
    limits = CompileLimits(memory_bytes=4 << 30, cpu_seconds=30, output_bytes=64 << 20, wall_seconds=60)
    assert limits.describe("memory") == "the compiler used more than 4 GB of memory (its limit for a candidate)"
    assert "30 s of CPU time" in limits.describe("cpu")
    assert "more than 64 MB" in limits.describe("output")
    assert "within 60 s" in limits.describe("wall")


@pytest.mark.parametrize("code, log, limit", [
    (-24, "", "cpu"), (-25, "", "output"), (1, "nvcc error   : 'cicc' died due to signal 24", "cpu"),
    (1, "catastrophic error: out of memory", "memory"), (1, "nvcc error : 'cicc' died due to signal 11", "memory"),
    (1, "terminate called after throwing an instance of 'std::bad_alloc'", "memory"),
    (1, 'kernel.cu(3): error: identifier "x" is undefined', ""), (0, "", ""),
])
def test_a_compilers_exit_says_which_limit_stopped_it(code, log, limit):
    assert limit_hit(code, log) == limit


def test_a_command_past_its_wall_clock_is_killed_with_its_children(tmp_path):
    started = time.monotonic()
    run = run_limited(["/bin/sh", "-c", "sleep 30 & sleep 30"], CompileLimits(wall_seconds=1), str(tmp_path))
    assert run.limit == "wall" and time.monotonic() - started < 10


def test_a_command_that_writes_too_much_is_stopped_and_its_log_read_bounded(tmp_path):
    limits = CompileLimits(output_bytes=1 << 20, log_bytes=4096)
    run = run_limited(["/bin/sh", "-c", "yes error: | head -c 5000000"], limits, str(tmp_path))
    assert run.limit == "output" or run.truncated
    assert len(run.log) < 5000


def test_a_command_over_its_cpu_time_is_stopped(tmp_path):
    run = run_limited(["/bin/sh", "-c", "while :; do :; done"], CompileLimits(cpu_seconds=1, wall_seconds=30),
                      str(tmp_path))
    assert run.limit == "cpu"


def test_the_sandbox_answers_and_survives_each_limit():
    sandbox = Sandbox("tests.support.sandbox_targets:add", CompileLimits(memory_bytes=512 << 20, cpu_seconds=2, wall_seconds=20))
    try:
        assert sandbox.call(2, 3) == 5 and sandbox.call(4, 5) == 9
    finally:
        sandbox.close()
    # Each case with room under the other limits: a busy machine accrues CPU time slower than the
    # clock, and page faults count as CPU time.
    for target, args, limit, cpu, wall in (("grow", (2048,), "memory", 60, 120), ("spin", (90,), "cpu", 1, 120),
                                           ("hang", (), "wall", 60, 2)):
        limits = CompileLimits(memory_bytes=512 << 20, cpu_seconds=cpu, wall_seconds=wall)
        sandbox = Sandbox(f"tests.support.sandbox_targets:{target}", limits)
        try:
            with pytest.raises(LimitHit) as hit:
                sandbox.call(*args)
            assert hit.value.limit == limit, target
        finally:
            sandbox.close()
    sandbox = Sandbox("tests.support.sandbox_targets:fail", CompileLimits(wall_seconds=60))
    with pytest.raises(RuntimeError, match="^broken$"):
        sandbox.call()
    sandbox.close()


@pytest.mark.nvcc
def test_a_candidate_compile_over_its_memory_limit_is_a_clear_rejection(cache_dir):
    tiny = CompileLimits(memory_bytes=128 << 20)
    options = CompileOptions(arch="sm_90a", cache_dir=cache_dir, compiler="nvcc", limits=tiny)
    r = compile_kernel(SAXPY, KernelRef("saxpy"), options)
    assert not r.ok and r.limit == "memory"
    assert r.log == "the compiler used more than 128 MB of memory (its limit for a candidate)"
    again = compile_kernel(SAXPY, KernelRef("saxpy"), dataclasses.replace(options, limits=CompileLimits()))
    assert again.ok, again.log  # the same text under the default limits: the next compile goes on


@pytest.mark.nvcc
def test_prepare_rejects_a_candidate_that_hits_a_limit_and_names_it(cache_dir):
    candidate = SAXPY[SAXPY.index("__global__"):].replace("a * x[i]", "x[i] * a")
    options = EvalOptions(compiler="nvcc", cache_dir=cache_dir, limits=CompileLimits(memory_bytes=128 << 20))
    prepared = prepare(SAXPY, "saxpy", candidate, "sm_90a", options)
    assert prepared.job is None and prepared.result.status == "rejected"
    assert "the compiler used more than 128 MB of memory" in prepared.result.message
