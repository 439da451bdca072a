"""Performance on save on a GPU: the real worker times a compute-bound kernel's edit against its
stored version in one run; doubling its work is a regression beyond the noise, a comment is
not timed at all, and the numbers are printed (docs/benchmarks.md)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fsr_lsp.evaluator.backends import EvalRequest
from fsr_lsp.evaluator.backends.local import LocalBackend
from fsr_lsp.evaluator.worker.worker_client import Evaluator
from fsr_lsp.kernels import discover_kernels, kernel_source
from fsr_lsp.profiling.timings import Timings
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText
from fsr_lsp.workflows.perf_check import check_performance

pytestmark = pytest.mark.gpu
POLY = """/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
y = "out[n]"
x = "in[n]"
a = 0.999
n = "n"
*/
__global__ void poly(float* y, const float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < ITERS; ++k) v = v * a + 0.5f;
    y[i] = v;
}
"""
BEFORE = POLY.replace("ITERS", "1024")
DOUBLED = POLY.replace("ITERS", "2048")
COMMENTED = BEFORE.replace("    y[i] = v;", "    y[i] = v;  // the result")


@pytest.fixture(scope="module")
def backend(evaluator):  # the evaluator fixture skips without a GPU
    b = LocalBackend(Evaluator(0))
    yield b
    b.close()


def test_doubling_the_work_warns_and_a_comment_is_not_timed(backend, tmp_path: Path):
    path = tmp_path / "poly.cu"
    settings = Settings()
    first = backend.evaluate([EvalRequest(BEFORE, "poly", None, settings.eval_options(path))])[0]
    assert first.original_time is not None, first.message
    src = SourceText(BEFORE)
    (k,) = discover_kernels(src)
    gpu = backend.start().name
    with Timings(tmp_path) as t:
        t.record(str(path), "poly", BEFORE, kernel_source(src, k).definition, first.original_time.median_ms, gpu, "saved")
    (slower,) = check_performance(backend, DOUBLED, path, tmp_path, settings, threading.Event())
    print(f"[perf] {slower.message}")
    assert slower.kind == "slower" and "% slower than at " in slower.message
    assert check_performance(backend, COMMENTED, path, tmp_path, settings, threading.Event()) == []
