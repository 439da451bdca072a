"""Element types, templates, nvcc-only names and memory exhaustion on the real GPU."""

from __future__ import annotations

import pytest

from fsr_lsp.evaluator import EvalOptions, compile_kernel, evaluate
from fsr_lsp.evaluator.compile.compiler import CompileOptions, KernelRef, nvrtc_available

from .conftest import QUICK, kernel_text

pytestmark = pytest.mark.gpu
TYPES = kernel_text("types.cu")


@pytest.mark.parametrize("kernel", ["haxpy", "hash_u32", "scale", "clamp_inf"])
def test_each_type_is_a_valid_oracle(evaluator, kernel):
    r = evaluate(evaluator, TYPES, kernel, None, QUICK)
    assert r.status == "verified", r.message


def test_unsigned_outputs_are_compared_exactly(evaluator):
    off_by_one = """
__global__ void hash_u32(unsigned int n, unsigned int key, const unsigned int* x, unsigned int* out)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = ((x[i] ^ key) * 2654435761u) + (i == 2 ? 1u : 0u);
}"""
    r = evaluate(evaluator, TYPES, "hash_u32", off_by_one, QUICK)
    assert r.status == "wrong" and r.mismatch is not None and r.mismatch.first_index == 2, r.message


def test_half_candidate_with_float_math_is_within_half_tolerance(evaluator):
    cand = """
__global__ void haxpy(int n, __half a, const __half* __restrict__ x, __half* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(__half2float(a) * __half2float(x[i]) + __half2float(y[i]));
}"""
    r = evaluate(evaluator, TYPES, "haxpy", cand, QUICK)
    assert r.status == "verified", r.message


def test_template_candidate(evaluator):
    cand = """
template <typename T, int B>
__global__ void scale(int n, const T* __restrict__ x, T* __restrict__ y)
{
    int i = blockIdx.x * B + threadIdx.x;
    if (i < n) y[i] = x[i] + x[i] + x[i];
}"""
    r = evaluate(evaluator, TYPES, "scale", cand, QUICK)
    assert r.status == "verified", r.message


def test_out_of_memory_is_reported_and_survived(evaluator):
    r = evaluate(evaluator, TYPES, "too_big", None, QUICK)
    assert r.status == "oom", r.message
    again = evaluate(evaluator, TYPES, "haxpy", None, QUICK)
    assert again.status == "verified", again.message


@pytest.mark.skipif(not nvrtc_available(), reason="cuda-python's NVRTC not installed")
def test_nvrtc_is_the_fast_path_and_nvcc_only_names_still_compile(evaluator, tmp_path):
    arch = evaluator.gpu.arch
    opts = CompileOptions(arch=arch, cache_dir=str(tmp_path))
    vadd = kernel_text("vadd.cu")
    fast = compile_kernel(vadd, KernelRef("vadd"), opts)
    assert fast.ok and fast.compiler == "nvrtc", fast.log
    quiet = compile_kernel("__global__ void k(float* x) { x[0] = 1.0f; }", KernelRef("k"), opts)
    assert quiet.ok and quiet.compiler == "nvrtc"
    assert bytes([32])[0] == 32 and b" "[0] == 32  # NVRTC never wrote into Python's interned b" "
    inf = compile_kernel(TYPES, KernelRef("clamp_inf"), opts)
    assert inf.ok, inf.log
    r = evaluate(evaluator, TYPES, "clamp_inf", None, EvalOptions(timing=QUICK.timing, cache_dir=str(tmp_path)))
    assert r.status == "verified", r.message


def test_an_edge_size_the_original_cannot_do_is_skipped_and_said(evaluator):
    r = evaluate(evaluator, TYPES, "scale4", None, QUICK)
    assert r.status == "verified", r.message
    assert any("edge size n=257 skipped" in w and "does not write every element of y" in w for w in r.warnings), r.warnings
    assert {c.name: c.status for c in r.checks}["non-multiple size"] == "skip"
    assert "n=257" not in r.sizes_checked


def test_kernels_that_launch_kernels_are_linked_with_the_device_runtime(evaluator):
    text = kernel_text("launches_kernels.cu")
    for name in ("recursive_scale", "plain_scale"):  # the file compiles only as relocatable code
        r = evaluate(evaluator, text, name, None, QUICK)
        assert r.status == "verified", r.message
    off_by_one = """
__global__ void recursive_scale(float* y, const float* x, float alpha, int depth)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (depth == 0) return;
    if (depth == 1) y[i] = alpha * x[i] + (i == 5 ? 1.f : 0.f);
    if (threadIdx.x == 0 && depth > 1)
        recursive_scale<<<1, blockDim.x>>>(y + blockIdx.x * blockDim.x, x + blockIdx.x * blockDim.x, alpha, depth - 1);
}"""
    wrong = evaluate(evaluator, text, "recursive_scale", off_by_one, QUICK)
    assert wrong.status == "wrong", wrong.message
