"""A check kernel printing each mismatch: on random inputs the size a run had, it would print
millions of lines, past the device's printf buffer, where every printf stalls (a launch took
minutes on the H200). The test sizes say so first, the size is refused before it runs, and the
way out, `bench_inputs = "captured"`, gives the bench size the run's own inputs while the test
sizes stay random (so a rewrite dropping the printf is still wrong). On the CPU test double;
the GPU counterpart is in tests/gpu/test_print_flood_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

from fsr_lsp.drafting.origin import requested_inputs
from fsr_lsp.drafting.relax import relax
from fsr_lsp.evaluator.gpu.print_flood import FLOOD_LINES, PrintRate
from fsr_lsp.evaluator.gpu.printed import Printed
from fsr_lsp.evaluator.job.captured_buffers import bench_captured, with_captured_sources
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.evaluator.records import Defences, EvalJob, TimingConfig
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec, render_spec

torch = pytest.importorskip("torch")

from fsr_lsp.evaluator.gpu.run import run_job  # noqa: E402

from ..support.fake_gpu import FakeSession, binary, device_printf, kernel, view  # noqa: E402

BENCH = 262_144
CHECK = f"""/* @fsr
bench = {{ n = {BENCH} }}
tests = [ {{ n = 1000 }}, {{ n = 4096 }} ]
grid = "cdiv(n, 256)"
block = 256
edge = false
[args]
n = "n"
expected = 3.0
x = "in[n]"
*/
__global__ void check(int n, float expected, const float* x) {{ }}
"""


def _mismatches(n, expected, x) -> str:
    values = view(x, n)
    return "".join(f"ERROR at {i}: {v:.4f}\n" for i in np.flatnonzero(values != np.float32(expected))
                   for v in (values[i],))


@kernel("check_prints")
def check_prints(n, expected, x):
    device_printf(_mismatches(n, expected, x))


@kernel("check_silent")
def check_silent(n, expected, x):
    pass


@kernel("check_prints_first_only")
def check_prints_first_only(n, expected, x):
    device_printf(_mismatches(n, expected, x)[:40].rpartition("\n")[0] + "\n")


@kernel("check_skips_the_bench_size")
def check_skips_the_bench_size(n, expected, x):
    """Right at every test size; at the bench size, where the run's own data has nothing to
    print, it skips the work."""
    if n != BENCH:
        device_printf(_mismatches(n, expected, x))


SCALE = CHECK.replace("void check(int n, float expected, const float* x)",
                      "void check(int n, float expected, const float* x, float* y)").replace(
    'x = "in[n]"', 'x = "in[n]"\ny = "out[n]"')
_cache: dict[int, np.ndarray] = {}


@kernel("scale_and_check")
def scale_and_check(n, expected, x, y):
    view(y, n)[:] = 2 * view(x, n)
    device_printf(_mismatches(n, expected, x))


@kernel("scale_and_check_cached")
def scale_and_check_cached(n, expected, x, y):
    """Keeps its bench-size result and gives it again: right while the inputs repeat."""
    if n == BENCH and n in _cache:
        view(y, n)[:] = _cache[n]
    else:
        view(y, n)[:] = 2 * view(x, n)
        if n == BENCH:
            _cache[n] = view(y, n).copy()
    device_printf(_mismatches(n, expected, x))


@kernel("check_prints_a_header")
def check_prints_a_header(n, expected, x):
    device_printf("checking the results\n")


def spec_of(text: str):
    src = SourceText(text)
    k = find_kernel(src, "check")
    result = parse_spec(src, k)
    assert result.spec is not None, result.problems
    return k, result.spec


def saved(tmp_path, value: float = 3.0) -> dict[str, str]:
    """What `fsr capture --snapshot-bytes` saved for `x`: the run's data, where nothing differs."""
    path = tmp_path / "inputs-1-0-2.bin"
    path.write_bytes(np.full(BENCH, value, dtype=np.float32).tobytes())
    return {"x": f"0:{path}"}


def job(text: str, original: str, candidate: str | None, real: dict[str, str] | None = None) -> EvalJob:
    k, spec = spec_of(text)
    sizes, why = with_captured_sources(build_plans(k, spec), real or {}, spec.bench_inputs == "captured")
    assert not why, why
    return EvalJob(kernel="check", original=binary(original), candidate=binary(candidate) if candidate else None,
                   sizes=sizes, seeds_per_size=2, base_seed=7, real_inputs=real or {},
                   timing=TimingConfig(warmup=1, min_reps=4, max_reps=4, target_seconds=0.0),
                   defences=Defences(input_ranges=False, unmapped_pages=False))


def test_random_inputs_at_the_bench_size_would_flood_and_are_refused_before_they_run(tmp_path):
    result = run_job(FakeSession(), job(CHECK, "check_prints", None, saved(tmp_path)))
    assert result.status == "spec_error", result.message
    failed = next(c for c in result.checks if c.status == "fail")
    assert failed.name == "printing"
    assert f"at n={BENCH}: on random inputs it printed 4,096 lines a launch at the size n=4096" in result.message
    assert f"about {BENCH:,}" in result.message and 'bench_inputs = "captured"' in result.message


def test_with_the_runs_own_inputs_at_the_bench_size_a_faithful_rewrite_is_verified(tmp_path):
    text = CHECK.replace("edge = false", 'edge = false\nbench_inputs = "captured"')
    result = run_job(FakeSession(), job(text, "check_prints", "check_prints", saved(tmp_path)))
    assert result.status == "verified", result.message
    assert result.sizes_checked == ["n=1000", "n=4096", f"n={BENCH}"]
    timed = next(c for c in result.checks if c.name == "timed runs verified")
    assert "each on the captured run's own inputs (`x`), 256 elements of each drawn afresh every run" in timed.detail


def test_and_a_rewrite_that_drops_or_cuts_the_printing_is_still_wrong_at_the_random_test_sizes(tmp_path):
    text = CHECK.replace("edge = false", 'edge = false\nbench_inputs = "captured"')
    for candidate in ("check_silent", "check_prints_first_only"):
        result = run_job(FakeSession(), job(text, "check_prints", candidate, saved(tmp_path)))
        assert result.status == "wrong", (candidate, result.message)
        assert "does not print" in result.message and "at n=1000" in result.message


def test_the_forecast_grows_as_the_lines_grew_between_the_test_sizes():
    k, spec = spec_of(CHECK)
    small, larger, bench = build_plans(k, spec)
    per_element = PrintRate()
    per_element.observe(small, Printed.of("x\n" * 1000))
    per_element.observe(larger, Printed.of("x\n" * 4096))
    assert per_element.forecast(bench) == BENCH > FLOOD_LINES and "at the size n=4096" in per_element.flood(bench)
    fixed = PrintRate()  # a kernel that prints one line a launch (a header, a count) floods nothing
    fixed.observe(small, Printed.of("checking\n"))
    fixed.observe(larger, Printed.of("checking\n"))
    assert fixed.forecast(bench) == 1 and fixed.flood(bench) is None
    one = PrintRate()  # one size that printed: in proportion to the bytes
    one.observe(larger, Printed.of("x\n" * 4096))
    assert one.forecast(bench) == BENCH
    silent = PrintRate()  # nothing printed at the test sizes: nothing to forecast
    silent.observe(small, Printed.of(""))
    silent.observe(larger, Printed.of(""))
    assert silent.forecast(bench) == 0


def test_a_kernel_printing_a_fixed_line_is_not_refused(tmp_path):
    result = run_job(FakeSession(), job(CHECK, "check_prints_a_header", "check_prints_a_header", saved(tmp_path)))
    assert result.status == "verified", result.message


def test_bench_inputs_parses_renders_and_refuses_other_words():
    _, spec = spec_of(CHECK.replace("edge = false", 'edge = false\nbench_inputs = "captured"'))
    assert spec.bench_inputs == "captured" and 'bench_inputs = "captured"' in render_spec(spec)
    _, plain = spec_of(CHECK)
    assert plain.bench_inputs == "random" and "bench_inputs" not in render_spec(plain)
    src = SourceText(CHECK.replace("edge = false", 'edge = false\nbench_inputs = "saved"'))
    problems = parse_spec(src, find_kernel(src, "check")).problems
    assert any('bench_inputs must be "random" or "captured"' in p.message for p in problems)


def test_the_bench_plan_crosses_to_the_worker_with_its_fresh_draw(tmp_path):
    """The worker gets its job as JSON: the spec's own draw for the fresh elements must survive."""
    from fsr_lsp.evaluator.records import SizePlan
    from fsr_lsp.evaluator.worker.serde import from_json, to_json

    k, spec = spec_of(CHECK.replace("edge = false", 'edge = false\nbench_inputs = "captured"'))
    plans, _ = with_captured_sources(build_plans(k, spec), saved(tmp_path), True)
    again = from_json(SizePlan, to_json(plans[-1]))
    assert again == plans[-1] and next(a for a in again.args if a.name == "x").fresh is not None


def test_only_the_bench_size_takes_the_saved_bytes_and_a_spec_without_them_is_refused(tmp_path):
    k, spec = spec_of(CHECK.replace("edge = false", 'edge = false\nbench_inputs = "captured"'))
    plans, why = with_captured_sources(build_plans(k, spec), saved(tmp_path), True)
    assert not why
    x = {p.label: next(a for a in p.args if a.name == "x") for p in plans}
    assert x[f"n={BENCH}"].init.kind == "captured" and x[f"n={BENCH}"].source == saved(tmp_path)["x"]
    assert x["n=1000"].init.kind != "captured" and x["n=4096"].source == ""
    assert bench_captured(plans[-1], saved(tmp_path)) and not bench_captured(plans[0], saved(tmp_path))
    none, why = with_captured_sources(build_plans(k, spec), {}, True)
    assert none == [] and 'bench_inputs = "captured" needs the bytes a captured run saved' in why


def test_a_spec_of_the_users_own_asks_for_every_saved_input_with_it(tmp_path):
    k, spec = spec_of(CHECK.replace("edge = false", 'edge = false\nbench_inputs = "captured"'))

    class Run:
        pass

    from fsr_lsp.drafting import origin

    original = origin.saved_inputs
    origin.saved_inputs = lambda kernel, found, text=None: {"x": "0:/saved/x.bin", "y": "0:/saved/y.bin"}
    try:
        assert requested_inputs(spec, k, lambda: Run()) == {"x": "0:/saved/x.bin"}
        _, plain = spec_of(CHECK)
        assert requested_inputs(plain, k, lambda: Run()) == {}
    finally:
        origin.saved_inputs = original


def test_a_draft_gives_the_bench_size_the_runs_inputs_and_leaves_a_flooding_test_size_out(tmp_path):
    block = CHECK.split("*/")[0] + "*/"
    j = job(CHECK, "check_prints", None, saved(tmp_path))
    message = f"the original kernel cannot serve as the oracle at n={BENCH}: on random inputs it printed ..."
    step = relax(block, j, "printing", "", message)
    assert step is not None and 'bench_inputs = "captured"' in step[0]
    assert "the bench size takes the run's own inputs" in step[1]
    assert relax(step[0], j, "printing", "", message) is None  # given once
    no_run = job(CHECK, "check_prints", None, None)
    assert relax(block, no_run, "printing", "", message) is None  # no run's bytes to give it
    at_test = relax(block, j, "printing", "", "cannot serve as the oracle at n=4096: ...")
    assert at_test is not None and "{ n = 4096 }" not in at_test[0] and "{ n = 1000 }" in at_test[0]
    assert "that size is left out" in at_test[1]


def test_a_rewrite_that_skips_the_bench_sizes_work_is_wrong_there(tmp_path):
    """The run's own data has nothing to print, but a few elements are drawn afresh over it at
    every input set: the original prints for those, a rewrite skipping the bench size does not."""
    text = CHECK.replace("edge = false", 'edge = false\nbench_inputs = "captured"')
    result = run_job(FakeSession(), job(text, "check_prints", "check_skips_the_bench_size", saved(tmp_path)))
    assert result.status == "wrong", result.message
    assert f"at n={BENCH}" in result.message and "does not print" in result.message


def test_a_rewrite_that_caches_the_bench_sizes_result_is_wrong_in_the_timed_runs(tmp_path):
    """Every timed run draws its few elements afresh: a result kept from an earlier launch is
    stale there."""
    _cache.clear()
    text = SCALE.replace("edge = false", 'edge = false\nbench_inputs = "captured"')
    result = run_job(FakeSession(), job(text, "scale_and_check", "scale_and_check_cached", saved(tmp_path)))
    assert result.status == "wrong", result.message
    assert "timed" in result.message, result.message
    assert run_job(FakeSession(), job(text, "scale_and_check", "scale_and_check", saved(tmp_path))).status == "verified"
