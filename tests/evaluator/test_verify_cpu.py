"""Verification and timing logic on the CPU test double (tests/support/fake_gpu.py): each defence
shown failing a deliberately broken "kernel", and a correct one passing. The same defences run
on the GPU in tests/gpu/test_defences.py with real CUDA kernels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fsr_lsp.evaluator.gpu.run import run_job  # noqa: E402
from fsr_lsp.evaluator.job.plan import build_plans  # noqa: E402
from fsr_lsp.kernels import find_kernel  # noqa: E402
from fsr_lsp.source import SourceText  # noqa: E402
from fsr_lsp.specs import parse_spec  # noqa: E402

from ..support.cpu_jobs import AXPY, failed, job, run, states  # noqa: E402
from ..support.fake_gpu import FakeSession  # noqa: E402

SHIFT = AXPY.replace('y = "inout[n]"', 'y = "out[n]"').replace("axpy", "shift")


def test_a_correct_candidate_passes_every_check_and_gets_an_interval():
    r = run(AXPY, "axpy", "axpy", "axpy_fast")
    assert r.status == "verified", r.message
    s = states(r)
    for name in ("matches original", "every output written", "inputs unchanged", "repeatable", "chained launches",
                 "guard bands", "timed runs verified"):
        assert s[name] == "pass", (name, r.checks)
    assert s["shared memory poisoned"] == "skip" and s["unmapped pages"] == "skip"
    low, high = r.speedup_ci
    assert low <= r.speedup <= high
    assert "interval" in r.message


def test_a_kernel_that_skips_work_it_takes_for_done_fails_the_chained_launches():
    r = run(AXPY, "axpy", "axpy", "axpy_skips_when_done")
    assert r.status == "wrong", r.message
    assert failed(r).name == "chained launches"
    assert "after launch 2 of 3 back to back on the same buffers" in r.message
    assert r.mismatch is not None and r.mismatch.buffer == "y"


def test_one_launch_would_not_have_caught_it():
    r = run(AXPY, "axpy", "axpy", "axpy_skips_when_done", chained_launches=1)
    assert r.status == "verified", r.message


@pytest.mark.parametrize("candidate, needle", [
    ("axpy_writes_past_end", "writes up to 12 bytes past the end of `y` at n=1"),
    ("axpy_writes_before_start", "writes up to 8 bytes before the start of `y` at n=1"),
])
def test_writes_outside_a_buffer_hit_its_guard_band_and_name_it(candidate, needle):
    r = run(AXPY, "axpy", "axpy", candidate)
    assert r.status == "wrong", r.message
    assert failed(r).name == "guard bands"
    assert needle in r.message and "(guard bands)" in r.message


def test_an_original_that_writes_past_a_buffer_is_a_spec_problem_on_that_argument():
    r = run(AXPY, "axpy", "axpy_writes_past_end", None)
    assert r.status == "spec_error", r.message
    assert "writes up to 12 bytes past the end of `y`" in r.message
    assert "the spec's length for `y` is too small" in r.message


def test_a_read_past_a_float_buffer_that_feeds_a_result_brings_in_the_nan_canary():
    r = run(SHIFT, "shift", "shift", "shift_reads_past_end")
    assert r.status == "wrong", r.message
    assert failed(r).name == "matches original"
    assert "got nan" in r.message and "NaN canaries" in r.message


def test_the_original_against_itself_is_verified_with_an_interval_around_one():
    r = run(AXPY, "axpy", "axpy", "axpy")
    assert r.status == "verified", r.message
    low, high = r.speedup_ci
    assert low <= 1.0 + 0.5 and high >= 1.0 - 0.5  # CPU timings are noisy; the GPU bench measures the bias


def test_a_job_goes_through_the_worker_process_and_back_with_every_check():
    from fsr_lsp.evaluator import Evaluator, run_prepared
    from fsr_lsp.evaluator.job.prepare import Prepared
    from fsr_lsp.evaluator.records import EvalResult

    from ..support.fake_workers import cpu_session

    with Evaluator(target=cpu_session, timeout=60) as ev:
        ev.start()
        for candidate, status in (("axpy_fast", "verified"), ("axpy_skips_when_done", "wrong")):
            base = EvalResult(kernel="axpy", status="verified", message="", checks=[])
            r = run_prepared(ev, Prepared(job=job(AXPY, "axpy", "axpy", candidate), result=base))
            assert r is not None and r.status == status, r
            assert r.speedup_ci is not None or status == "wrong"


def test_guard_bands_keep_the_buffer_256_byte_aligned_and_grow_with_it():
    from fsr_lsp.evaluator.gpu.guards import ALIGN, band_bytes, guarded, placements
    from fsr_lsp.evaluator.records import ArgPlan

    assert band_bytes(4) == 4096 and band_bytes(64 << 20) == 1 << 20 and band_bytes(1 << 20) == 128 << 10
    for n in (1, 3, 1000, 65537):
        arg = ArgPlan("x", "buffer", "float32", length=n, direction="in")
        g = guarded(torch, torch.device("cpu"), arg, "A", torch.ones(n))
        offset = g.tensor.data_ptr() - g.whole.data_ptr()
        assert offset % ALIGN == 0 and g.tensor.numel() == n and torch.equal(g.tensor, torch.ones(n))
        assert int(g.violations()) == 0 and g.whole[g.before + g.nbytes:].view(torch.float32).isnan().all()
    assert placements(1024) == ["start", "end"] and placements(4000) == ["start"]


@pytest.mark.parametrize("dtype, init, low, high", [
    ("uint32", ("randint", 0, 4294967296), -(1 << 31), (1 << 31) - 1),  # unsigned in signed storage: wraps
    ("int8", ("randint", -100, 100), -100, 99),
    ("float16", ("uniform", -2, 2), -2, 2),
    ("int32", ("fill", 7, 7), 7, 7),
])
def test_timed_inputs_are_refilled_in_place_within_the_specs_range(dtype, init, low, high):
    from fsr_lsp.evaluator.gpu.buffers import refill, storage_dtype
    from fsr_lsp.evaluator.records import ArgPlan
    from fsr_lsp.specs.model import Init

    t = torch.empty(20000, dtype=storage_dtype(torch, dtype))
    before = t.data_ptr()
    gen = torch.Generator()
    gen.manual_seed(3)
    refill(torch, t, ArgPlan("x", "buffer", dtype, length=20000, init=Init(*init)), gen)
    values = t.double()
    assert t.data_ptr() == before and low <= values.min() and values.max() <= high
    if init[0] != "fill":
        assert values.unique().numel() > 50


def captured(tmp_path, values, offset: int = 16) -> dict[str, str]:
    """A snapshot of `x` as `fsr capture --snapshot-bytes` saves it: the whole allocation, the
    argument `offset` bytes into it."""
    path = tmp_path / "inputs-1-0-2.bin"
    path.write_bytes(b"\0" * offset + np.asarray(values, dtype=np.float32).tobytes())
    return {"x": f"{offset}:{path}"}


def test_captured_inputs_join_the_checks_and_catch_what_noise_misses(tmp_path):
    # without the sets that probe the range, noise never exceeds 100 ...
    assert run(AXPY, "axpy", "axpy", "axpy_clamps_large_inputs", input_ranges=False).status == "verified"
    # ... and those sets find it on their own (inputs scaled x100 pass 100) ...
    r = run(AXPY, "axpy", "axpy", "axpy_clamps_large_inputs")
    assert r.status == "wrong" and failed(r).name == "input range" and "inputs scaled x100" in r.message, r.message
    # ... as do a run's captured inputs
    j = job(AXPY, "axpy", "axpy", "axpy_clamps_large_inputs", input_ranges=False)
    j.real_inputs = captured(tmp_path, np.full(4096, 1000.0))
    r = run_job(FakeSession(), j)
    assert r.status == "wrong" and failed(r).name == "matches original", r.message
    assert "n=4096" in r.message and r.mismatch.buffer == "y"


def test_the_captured_inputs_are_counted_and_a_short_file_is_said_not_checked(tmp_path):
    j = job(AXPY, "axpy", "axpy", "axpy_fast")
    j.real_inputs = captured(tmp_path, np.linspace(-5, 5, 4096))
    r = run_job(FakeSession(), j)
    assert r.status == "verified" and "the captured inputs among them" in next(
        c.detail for c in r.checks if c.name == "matches original"), r.checks
    j = job(AXPY, "axpy", "axpy", "axpy_fast")
    j.real_inputs = captured(tmp_path, np.ones(100))
    r = run_job(FakeSession(), j)
    assert r.status == "verified"
    assert any("the captured inputs of `x` hold 400 bytes, n=4096 needs 16384: not checked" in w for w in r.warnings)


def test_a_time_only_job_times_both_and_judges_nothing():
    """Performance on save: the user's edit may change what the kernel computes; it is timed
    against the version before it at the bench size alone, and its status says it was not verified."""
    import dataclasses

    timed = dataclasses.replace(job(AXPY, "axpy", "axpy", "writes_half"), mode="time",
                                sizes=build_plans(find_kernel(SourceText(AXPY), "axpy"), parse_spec(
                                    SourceText(AXPY), find_kernel(SourceText(AXPY), "axpy")).spec)[-1:])
    result = run_job(FakeSession(), timed)
    assert result.status == "timed" and not result.verified
    assert result.speedup and result.speedup_ci and result.original_time and result.candidate_time
    assert "timed only" in result.message and result.bench_size == "n=4096"
    full = run(AXPY, "axpy", "axpy", "writes_half")
    assert full.status == "wrong"  # the same pair, judged


READS_ONLY = AXPY.replace('y = "inout[n]"', 'y = "in[n]"').replace("float* y)", "const float* y)")


def test_a_spec_with_nothing_to_compare_verifies_nothing():
    """A kernel whose result is kept where no buffer is, specced with in buffers only: a rewrite
    that does nothing would match it on every output there is (none). The original cannot serve
    as the oracle, and says why."""
    r = run(READS_ONLY, "axpy", "sum_kept_where_no_check_looks", "does_nothing")
    assert r.status == "spec_error", r.message
    assert "no out or inout buffer and it printed nothing" in r.message
    assert "`__device__`" in r.message


def device_variable_run(candidate: str | None):
    """The job prepare() makes for a kernel adding into `__device__ float total`: its spec's
    buffers and one hidden buffer standing for `total`."""
    from fsr_lsp.evaluator.job.plan import variable_plans
    from fsr_lsp.kernels.device_variables import DeviceVariable

    j = job(READS_ONLY, "axpy", "sum_into_device_variable", candidate)
    src = SourceText(READS_ONLY)
    spec = parse_spec(src, find_kernel(src, "axpy")).spec
    extra = variable_plans([DeviceVariable("total", "float", (), True)], spec)
    j.sizes = [dataclasses.replace(p, args=[*p.args, *extra]) for p in j.sizes]
    return run_job(FakeSession(), j)


def test_a_device_variable_is_compared_as_an_output():
    proof = device_variable_run(None)
    assert proof.status == "verified", proof.message
    assert device_variable_run("sum_into_device_variable_fast").status == "verified"
    skipped = device_variable_run("does_nothing")
    assert skipped.status == "wrong" and "total" in skipped.message, skipped.message
    stored = device_variable_run("sum_overwrites_device_variable")
    assert stored.status == "wrong" and "total" in stored.message, stored.message


def test_a_runs_buffers_share_one_arena_whose_bands_are_checked_at_once_and_an_overrun_names_its_buffer():
    from fsr_lsp.evaluator.gpu.guards import ALIGN, guarded_set
    from fsr_lsp.evaluator.records import ArgPlan

    args = [ArgPlan("x", "buffer", "float32", length=1000, direction="in"),
            ArgPlan("y", "buffer", "int32", length=77, direction="out"),
            ArgPlan("z", "buffer", "float16", length=5, direction="inout")]
    arena = guarded_set(torch, torch.device("cpu"), args, "A", {"x": torch.ones(1000),
                                                                  "z": torch.full((5,), 2.0, dtype=torch.float16)})
    starts = {name: g.tensor.data_ptr() - arena.whole.data_ptr() for name, g in arena.guards.items()}
    assert all(s % ALIGN == 0 for s in starts.values()) and len(set(starts.values())) == 3
    assert torch.equal(arena.guards["x"].tensor, torch.ones(1000)) and arena.guards["x"].tensor.numel() == 1000
    assert arena.guards["z"].tensor.tolist() == [2.0] * 5
    assert arena.overrun() is None and int(arena.violations()) == 0
    arena.guards["x"].tensor.fill_(5)  # writes inside the buffers change no band
    arena.guards["y"].tensor.fill_(5)
    assert arena.overrun() is None
    y = arena.guards["y"]
    y.whole[y.before + y.nbytes + 5] = 0  # one byte past the end of y: the 2nd element after it
    found = arena.overrun()
    assert found is not None and found[0] == "y" and found[1].extent() == (0, 8)
    z = arena.guards["z"]
    z.whole[z.before - 1] = 0  # just before z: y is still the first named, both counted
    assert int(arena.violations()) == 2 and arena.overrun()[0] == "y"
    y.whole[y.before + y.nbytes + 5] = arena.guards["y"].band_after[5]
    assert arena.overrun()[0] == "z" and z.extent() == (2, 0)
