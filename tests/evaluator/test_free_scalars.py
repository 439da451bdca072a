"""A float argument the spec gives as a number is one value of many callers may pass
(evaluator/gpu/input_sets.py, the `scalars` set): a rewrite folding it into a constant is
wrong, one using it is verified, and an argument the spec ties to the sizes keeps its value."""

from __future__ import annotations

import os

import pytest

from fsr_lsp.evaluator.gpu.input_sets import free_scalars, moved_value, scalar_sets, with_scalars_moved
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support import cuda_on_cpu

needs_cxx = pytest.mark.skipif(cuda_on_cpu.cxx() is None and os.environ.get("FSR_REQUIRE_NVCC") != "1",
                               reason="no C++ compiler (g++) to build kernels for the CPU")

SAXPY = """/* @fsr
bench = { n = 4096 }
tests = [ { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
a = 2.0
inv_n = "1.0 / n"
x = "in[n]"
y = "inout[n]"
*/
__global__ void saxpy(int n, float a, float inv_n, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] * inv_n;
}
"""

FOLDED = """__global__ void saxpy(int n, float a, float inv_n, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + y[i] * inv_n;
}
"""

USES_A = """__global__ void saxpy(int n, float a, float inv_n, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i] * inv_n);
}
"""

# uses the relation the spec states (inv_n = 1 / n): right for every caller the spec describes
DIVIDES = USES_A.replace("y[i] * inv_n", "y[i] / (float)n")


def plan():
    kernel = find_kernel(SAXPY, "saxpy")
    return build_plans(kernel, parse_spec(SourceText(SAXPY), kernel).spec)[0]


def test_a_number_is_free_and_an_expression_of_the_sizes_is_not():
    p = plan()
    assert [a.name for a in free_scalars(p)] == ["a"]
    (which,) = scalar_sets(p)
    assert which.key == "scalars" and "a = 2.74 for 2" in which.label
    moved = {a.name: a.value for a in with_scalars_moved(p).args if a.kind == "scalar"}
    assert moved["a"] == pytest.approx(2.74) and moved["inv_n"] == pytest.approx(1 / p.sizes["n"])
    assert moved_value(0.0) == pytest.approx(0.37)  # beta = 0: another value too
    assert scalar_sets(p, ("scalars",)) == []  # a set the original crashed on is skipped on the rerun


@needs_cxx
def test_a_rewrite_folding_a_float_argument_into_a_constant_is_wrong():
    pytest.importorskip("torch")
    folded = cuda_on_cpu.evaluate_on_cpu(SAXPY, "saxpy", FOLDED)
    assert folded.status == "wrong" and "other values of its float arguments" in folded.message, folded.message
    assert cuda_on_cpu.evaluate_on_cpu(SAXPY, "saxpy", FOLDED, ranges=False).status == "verified"  # what it was
    for good in (USES_A, DIVIDES):
        result = cuda_on_cpu.evaluate_on_cpu(SAXPY, "saxpy", good)
        assert result.status == "verified", result.message
        assert "scalars" in result.range_sets
