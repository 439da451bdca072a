"""The original promoted to double precision (evaluator/job/widening.py): what is promoted, what is
left alone, what is refused, and that the result compiles (nvcc) with the kernel's entry."""

from __future__ import annotations

import pytest

from fsr_lsp.evaluator.compile.compiler import CompileOptions, KernelRef, compile_kernel, find_nvcc
from fsr_lsp.evaluator.job.widening import NotWidenable, widen

LAYERNORM = """#define EPS 1e-5f
// float in a comment stays: expf(1.0f)
__global__ void ln(float* out, const float* inp, int C, float scale)
{
    const char* note = "float expf";
    float4 v = make_float4(1.0f, .5f, 2.f, 3e2f);
    float m = 0.0f;
    for (int c = 0; c < C; c++) m += __expf(inp[c]) + sqrtf(inp[c]) * 0x1f;
    out[0] = __fdividef(m, (float)C) * rsqrtf(m + EPS) * scale + v.x;
}
"""
REF = KernelRef("ln", None, ("float*", "const float*", "int", "float"))


def test_types_literals_math_and_intrinsics_are_promoted_and_nothing_else():
    w = widen(LAYERNORM, REF)
    text = w.source
    assert "// float in a comment stays: expf(1.0f)" in text
    assert '"float expf"' in text
    assert "fsr_double4 v = fsr_make_double4(1.0, .5, 2., 3e2);" in text  # double4_16a from CUDA 13 on
    assert "double m = 0.0;" in text
    assert "exp(inp[c]) + sqrt(inp[c]) * 0x1f" in text  # a hex integer ending in f is no float literal
    assert "fsr_wide_div(m, (double)C) * rsqrt(m + EPS)" in text
    assert "#define EPS 1e-5\n" in text
    assert "__global__ void ln(double* out, const double* inp, int C, double scale)" in text
    assert "fsr_wide_div(double a, double b)" in text and "fsr_wide_saturate" not in text
    assert w.ref.param_types == ("double*", "const double*", "int", "double")


def test_template_arguments_are_promoted():
    w = widen("template <typename T> __global__ void k(T* x) { x[0] = T(1.5f); }",
              KernelRef("k", "float, 256", ("float*",)))
    assert w.ref.template_args == "double, 256" and w.ref.param_types == ("double*",)


@pytest.mark.parametrize("code", [
    "__global__ void k(float* x) { int b = __float_as_int(x[0]); x[1] = __int_as_float(b | 1); }",
    "__global__ void k(cudaTextureObject_t t, float* x) { x[0] = tex2D<float>(t, 0.5f, 0.5f); }",
    "__global__ void k(float* x) { int* bits = reinterpret_cast<int*>(x); bits[0] ^= 1; }",
])
def test_code_that_depends_on_a_floats_bits_or_the_texture_unit_is_refused(code):
    with pytest.raises(NotWidenable):
        widen(code, KernelRef("k", None, ("float*",)))


def test_a_kernel_without_float_is_refused():
    with pytest.raises(NotWidenable):
        widen("__global__ void k(int* x) { x[0] = 1; }", KernelRef("k", None, ("int*",)))


@pytest.mark.nvcc
def test_the_promoted_kernel_compiles_and_its_entry_takes_doubles():
    if find_nvcc() is None:
        pytest.skip("nvcc not found")
    w = widen(LAYERNORM, REF)
    result = compile_kernel(w.source, w.ref, CompileOptions(arch="sm_90a", compiler="nvcc"))
    assert result.ok, result.log
    assert result.binary is not None and result.binary.entry == "_Z2lnPdPKdid"
    assert "deprecated" not in result.log and "fsr_wide" not in result.log  # no unused helper, no deprecated type
    assert "kernel.cu(5)" in result.log  # the file's own line numbers after the helpers


@pytest.mark.nvcc
def test_prepare_gives_a_full_job_the_double_build_and_says_why_when_there_is_none(tmp_path):
    import dataclasses

    from fsr_lsp.evaluator import EvalOptions, prepare

    if find_nvcc() is None:
        pytest.skip("nvcc not found")
    spec = ('/* @fsr\nbench = { n = 4096 }\ntests = [ { n = 100 } ]\ngrid = "cdiv(n, 256)"\nblock = 256\n[args]\n'
            'y = "out[n]"\nx = "in[n]"\nn = "n"\n*/\n')
    kernel = "__global__ void k(float* y, const float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n" \
             "  if (i < n) y[i] = expf(x[i]) * 0.5f;\n}\n"
    options = EvalOptions(cache_dir=str(tmp_path), compiler="nvcc")
    job = prepare(spec + kernel, "k", None, "sm_90a", options).job
    assert job is not None and job.wide is not None and job.wide.entry == "_Z1kPdPKdi" and job.wide_why == ""
    for quick in (dataclasses.replace(options, screen=True), dataclasses.replace(options, time_only=True)):
        assert prepare(spec + kernel, "k", None, "sm_90a", quick).job.wide is None
    bits = kernel.replace("expf(x[i]) * 0.5f", "__int_as_float(__float_as_int(x[i]) & 0x7fffffff)")
    job = prepare(spec + bits, "k", None, "sm_90a", options).job
    assert job.wide is None and "__int_as_float" in job.wide_why and "bits" in job.wide_why
    explicit = spec.replace("block = 256\n", "block = 256\nrtol = 1e-3\natol = 1e-3\n")
    assert prepare(explicit + kernel, "k", None, "sm_90a", options).job.wide is None  # the spec's own tolerance
    huge = spec.replace("bench = { n = 4096 }", "bench = { n = 1073741824 }")  # 8 GiB of float buffers
    job = prepare(huge + kernel, "k", None, "sm_90a", options).job
    assert job.wide is None and "8.0 GiB at the bench size" in job.wide_why
