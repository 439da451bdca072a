"""captured(): a buffer holding the bytes a captured run had, at every seed, while the other
inputs stay random; refused before anything runs when the bytes are missing or too few."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fsr_lsp.evaluator.job.captured_buffers import with_captured_sources
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import Init, parse_spec, render_spec

OFFSETS = """/* @fsr
bench = { n = 4096 }
grid = "cdiv(n, 256)"
block = 256
edge = false
[args]
n = "n"
a = 1.5
x = "in[n] captured()"
y = "inout[n]"
*/
__global__ void axpy(int n, float a, const float* x, float* y) { }
"""


def plans(text: str = OFFSETS):
    src = SourceText(text)
    k = find_kernel(src, "axpy")
    result = parse_spec(src, k)
    assert result.spec is not None, result.problems
    return build_plans(k, result.spec)


def saved(tmp_path, values, offset: int = 32) -> dict[str, str]:
    path = tmp_path / "inputs-1-0-2.bin"
    path.write_bytes(b"\1" * offset + np.asarray(values, dtype=np.float32).tobytes())
    return {"x": f"{offset}:{path}"}


def test_captured_parses_renders_and_refuses_arguments():
    src = SourceText(OFFSETS)
    spec = parse_spec(src, find_kernel(src, "axpy")).spec
    assert spec.arg("x").init == Init("captured") and 'x = "in[n] captured()"' in render_spec(spec)
    bad = SourceText(OFFSETS.replace("captured()", "captured(3)"))
    problems = parse_spec(bad, find_kernel(bad, "axpy")).problems
    assert any("captured() takes no arguments" in p.message for p in problems)


def test_each_captured_buffer_gets_its_saved_bytes_or_the_spec_is_refused(tmp_path):
    ready, why = with_captured_sources(plans(), saved(tmp_path, np.arange(4096)))
    assert not why and [a.source for a in ready[-1].args if a.name == "x"] == [saved(tmp_path, [])["x"]]
    assert [a.source for a in ready[-1].args if a.name == "y"] == [""]
    none, why = with_captured_sources(plans(), {})
    assert none == [] and "`x` = captured() needs the bytes a captured run saved" in why and "fsr capture" in why
    short, why = with_captured_sources(plans(), saved(tmp_path, np.arange(100)))
    assert short == [] and "fits the captured size only: at n=4096 it needs 16384 bytes, the run saved 400" in why
    smaller = OFFSETS.replace("edge = false", 'tests = [ { n = 17 } ]\nedge = false')
    ready, why = with_captured_sources(plans(smaller), saved(tmp_path, np.arange(4096)))
    assert not why and len(ready) == 2  # a smaller size takes the saved bytes' start; the proof says if it serves
    larger = OFFSETS.replace("edge = false", 'tests = [ { n = 5000 } ]\nedge = false')
    _, why = with_captured_sources(plans(larger), saved(tmp_path, np.arange(4096)))
    assert "at n=5000 it needs 20000 bytes" in why


torch = pytest.importorskip("torch")


def test_every_seed_and_every_timed_refill_sees_the_saved_bytes_and_the_others_stay_random(tmp_path):
    from fsr_lsp.evaluator.gpu.buffers import generate, refill
    from fsr_lsp.evaluator.gpu.common import make_inputs

    from ..support.fake_gpu import FakeSession

    values = np.arange(4096, dtype=np.float32) * 3
    ready, _ = with_captured_sources(plans(), saved(tmp_path, values))
    bench = ready[-1]
    session = FakeSession()
    one, two = make_inputs(session, bench, 1), make_inputs(session, bench, 2)
    assert np.array_equal(one["x"].cpu().numpy(), values) and np.array_equal(two["x"].cpu().numpy(), values)
    assert not torch.equal(one["y"], two["y"])  # random data, real structure
    x = next(a for a in bench.args if a.name == "x")
    t = torch.zeros(4096)
    refill(torch, t, x, torch.Generator())
    assert np.array_equal(t.numpy(), values)
    assert np.array_equal(generate(torch, "cpu", x, None).numpy(), values)


def test_a_rewrite_that_breaks_on_the_real_structure_is_caught_at_every_seed(tmp_path):
    """x holds large values only the run had: noise never reaches the clamp, the saved bytes do."""
    from fsr_lsp.evaluator.gpu.run import run_job
    from fsr_lsp.evaluator.records import EvalJob, TimingConfig

    from ..support import fake_kernels  # noqa: F401  (registers the Python kernels)
    from ..support.fake_gpu import FakeSession, binary

    ready, _ = with_captured_sources(plans(), saved(tmp_path, np.full(4096, 1000.0)))
    job = EvalJob(kernel="axpy", original=binary("axpy"), candidate=binary("axpy_clamps_large_inputs"), sizes=ready,
                  seeds_per_size=2, base_seed=7, timing=TimingConfig(warmup=1, min_reps=8, max_reps=8, target_seconds=0.0))
    r = run_job(FakeSession(), job)
    assert r.status == "wrong" and "seed" in r.message, r.message  # a random set, not one extra captured set
    job = dataclasses.replace(job, candidate=binary("axpy_fast"))
    assert run_job(FakeSession(), job).status == "verified"


@pytest.mark.nvcc
def test_prepare_refuses_a_captured_buffer_without_saved_bytes(cache_dir, tmp_path):
    from fsr_lsp.evaluator import EvalOptions, prepare

    text = OFFSETS.replace("{ }", "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }")
    options = EvalOptions(cache_dir=cache_dir, compiler="nvcc", base_seed=5)
    refused = prepare(text, "axpy", None, "sm_90a", options).result
    assert refused.status == "spec_error" and "captured() needs the bytes" in refused.message
    ready = prepare(text, "axpy", None, "sm_90a", dataclasses.replace(options, real_inputs=tuple(
        saved(tmp_path, np.arange(4096)).items())))
    assert ready.job is not None and [a.source for a in ready.job.sizes[-1].args if a.name == "x"][0].endswith(".bin")


def test_fsr_eval_finds_the_bytes_a_captured_spec_asks_for(tmp_path):
    import struct

    from fsr_lsp.cli.eval_cmd import spec_and_inputs
    from fsr_lsp.settings import Settings

    def _requested_inputs(file, text, kernel):
        return spec_and_inputs(file, text, kernel, Settings())[1]

    from ..support.captures import i32, ptr, write_capture

    (tmp_path / ".git").mkdir()
    text = OFFSETS
    (tmp_path / "k.cu").write_text(text)
    assert _requested_inputs(tmp_path / "k.cu", text, "axpy") == ()  # no capture yet
    record = {"id": 0, "kernel": "_Z4axpyifPKfPf", "name": "axpy(int, float, float const*, float*)", "base": "axpy",
              "grid": [16, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [{"offset": 0, "size": 4, "hex": i32(4096)}, {"offset": 4, "size": 4, "hex": struct.pack("<f", 1.5).hex()},
                         ptr(16384), ptr(16384)], "snapshot": {"2": "x.bin", "3": "y.bin"}}
    folder = write_capture(tmp_path, [record])
    assert _requested_inputs(tmp_path / "k.cu", text, "axpy") == (("x", f"0:{folder / 'x.bin'}"),)  # y is not asked for
    assert _requested_inputs(tmp_path / "k.cu", text, "nope") == ()
