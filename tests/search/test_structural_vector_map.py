"""The element-wise map recogniser and its rewrite (one element a thread -> four through 128-bit
loads and stores, a scalar path for unaligned pointers): the maps it applies to (GELU, SAXPY, a
vector add, an early return, int buffers, an output written under a condition), the kernels it
must leave alone, that its `@fsr` block is a candidate's launch over the original spec, and,
with nvcc, that what it writes compiles. tests/gpu/test_structural_vector_gpu.py verifies it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator.compile.compiler import CompileOptions, compile_kernel
from fsr_lsp.evaluator.job.prepare import kernel_ref
from fsr_lsp.kernels import discover_kernels, find_kernel
from fsr_lsp.search.generators.structural import patterns, structural_proposals
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.search_helpers import context, relaunched

GELU = Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "gelu.cu"
SPEC = """/* @fsr
bench = { N = 1048576 }
tests = [ { N = 1 }, { N = 1000 }, { N = 65537 } ]
grid = "cdiv(N, 256)"
block = 256
[args]
{args}
N = "N"
*/
"""
SAXPY_ARGS = 'x = "in[N]"\ny = "inout[N] normal()"\na = 2.0'
ADD_ARGS = 'a = "in[N]"\nb = "in[N]"\nc = "out[N]"'
MAPS = {
    "saxpy": (SPEC.replace("{args}", SAXPY_ARGS) +
              "__global__ void saxpy(const float* x, float* y, float a, int N)\n{\n"
              "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    if (i < N) y[i] = a * x[i] + y[i];\n}\n", "saxpy"),
    "vector add, an early return": (SPEC.replace("{args}", ADD_ARGS) +
                                    "__global__ void add(const float* __restrict__ a, const float* __restrict__ b, "
                                    "float* __restrict__ c, int N)\n{\n"
                                    "    const int idx = threadIdx.x + blockDim.x * blockIdx.x;\n"
                                    "    if (idx >= N) return;\n    c[idx] = a[idx] + b[idx];  // the sum\n}\n", "add"),
    "int buffers, an output written under a condition": (
        SPEC.replace("{args}", 'x = "in[N] randint(-9, 9)"\ny = "inout[N] randint(-9, 9)"') +
        "__global__ void relu_into(const int* x, int* y, int N)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < N) {\n        if (x[i] > 0)\n            y[i] = x[i];\n    }\n}\n", "relu_into"),
}
GELU_ARGS = 'out = "out[N]"\ninp = "in[N] normal(0, 3)"'
GELU_BODY = ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < N) {{\n        float xi = {load};\n"
             "        float cube = 0.044715f * xi * xi * xi;\n"
             "        out[i] = {store}(0.5f * xi * (1.0f + tanhf(0.7978845608f * (xi + cube))));\n    }}\n}}\n")
MAPS.update({
    # named coefficients declared before the thread's index, as real code writes them
    "GELU with constants before the index, an early return": (
        SPEC.replace("{args}", GELU_ARGS) + "__global__ void gelu_named(float* out, const float* inp, int N)\n{\n"
        "    const float COEF = 0.044715f;\n    const float SCALE = 0.5f * (1.0f + 0.0f);\n"
        "    const int i = blockDim.x*blockIdx.x + threadIdx.x;\n    if (i >= N) {\n        return;\n    }\n"
        "    float xi = inp[i];\n    out[i] = SCALE*xi*(1.0f + tanhf(0.7978845608f*xi*(1.0f + COEF*xi*xi)));\n}\n",
        "gelu_named"),
    "GELU over __half": ("#include <cuda_fp16.h>\n" + SPEC.replace("{args}", GELU_ARGS) +
                         "__global__ void gelu_half(__half* out, const __half* inp, int N)\n{\n" +
                         GELU_BODY.format(load="__half2float(inp[i])", store="__float2half"), "gelu_half"),
    # the packed idiom of training code: a typedef'd 16-bit type, cast to float and back
    "GELU over __nv_bfloat16 through a typedef": (
        "#include <cuda_bf16.h>\ntypedef __nv_bfloat16 floatX;\n" + SPEC.replace("{args}", GELU_ARGS) +
        "__global__ void gelu_bf16(floatX* out, const floatX* inp, int N)\n{\n" +
        GELU_BODY.format(load="(float)inp[i]", store="(floatX)"), "gelu_bf16"),
})
HEAD = "__global__ void k(const float* x, float* y, int N)\n{\n"
INDEX = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
TWO_D_SPEC = """/* @fsr
bench = { N = 1024 }
grid = ["cdiv(N, 16)", "cdiv(N, 16)"]
block = [16, 16]
[args]
x = "in[N * N]"
y = "out[N * N]"
N = "N"
*/
"""
NOT_MAPS = {
    "a 2-D kernel": (TWO_D_SPEC, HEAD + "    int c = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "    int r = blockIdx.y * blockDim.y + threadIdx.y;\n"
                     "    if (r < N && c < N) y[r * N + c] = 2.0f * x[r * N + c];\n}\n"),
    "a neighbour read": (None, HEAD + INDEX + "    if (i < N - 1) y[i] = x[i + 1] - x[i];\n}\n"),
    "a neighbour read under the guard": (None, HEAD + INDEX + "    if (i < N) y[i] = x[i + 1] - x[i];\n}\n"),
    "a fixed element read beside its own": (None, HEAD + INDEX + "    if (i < N) y[i] = x[i] * x[0];\n}\n"),
    "the last element read beside its own": (None, HEAD + INDEX + "    if (i < N) y[i] = x[i] - x[N - 1];\n}\n"),
    "a fixed element written": (None, HEAD + INDEX + "    if (i < N) y[0] = x[i];\n}\n"),
    "a write at another index": (None, HEAD + INDEX + "    if (i < N / 2) y[2 * i] = x[i];\n}\n"),
    "a strided write under the guard": (None, HEAD + INDEX + "    if (i < N) y[2 * i] = x[i];\n}\n"),
    "a loop over elements": (None, HEAD + INDEX + "    if (i < N) {\n        float s = 0.0f;\n"
                             "        for (int j = 0; j < N; ++j) s += x[j];\n        y[i] = s;\n    }\n}\n"),
    "an atomic": (None, HEAD + INDEX + "    if (i < N) atomicAdd(&y[0], x[i]);\n}\n"),
    "an atomic at its own element": (None, HEAD + INDEX + "    if (i < N) atomicAdd(&y[i], x[i]);\n}\n"),
    "a barrier": (None, HEAD + INDEX + "    if (i < N) y[i] = x[i];\n    __syncthreads();\n}\n"),
    "a barrier under the guard": (None, HEAD + INDEX + "    if (i < N) { y[i] = x[i]; __syncthreads(); }\n}\n"),
    "shared memory": (None, HEAD + "    __shared__ float t[256];\n" + INDEX +
                      "    if (i < N) { t[threadIdx.x] = x[i]; y[i] = t[threadIdx.x]; }\n}\n"),
    "the index in the arithmetic": (None, HEAD + INDEX + "    if (i < N) y[i] = x[i] * i;\n}\n"),
    "the pointer moved": (None, HEAD + INDEX + "    if (i < N) { const float* p = x + i; y[i] = *p; }\n}\n"),
    "no guard": (None, HEAD + INDEX + "    y[i] = x[i];\n}\n"),
    "a read of the input after the output is written (in place it would differ)":
        (None, HEAD + INDEX + "    if (i < N) { y[i] = 1.0f; y[i] += x[i]; }\n}\n"),
    "a float input and a __half output (one 128-bit access holds 4 of one, 8 of the other)": (
        "#include <cuda_fp16.h>\n" + SPEC.replace("{args}", 'x = "in[N]"\ny = "out[N]"'),
        "__global__ void k(const float* x, __half* y, int N)\n{\n" + INDEX +
        "    if (i < N) y[i] = __float2half(x[i]);\n}\n"),
    "a constant computed from a parameter before the index": (
        None, "__global__ void k(const float* x, float* y, int N)\n{\n    const float half_n = N * 0.5f;\n" + INDEX +
        "    if (i < N) y[i] = x[i] * half_n;\n}\n"),
    "a double output": (SPEC.replace("{args}", 'x = "in[N]"\ny = "out[N]"'),
                        HEAD.replace("float* y", "double* y") + INDEX + "    if (i < N) y[i] = x[i];\n}\n"),
    "a launch that leaves elements out": (SPEC.replace("{args}", 'x = "in[N]"\ny = "out[N]"').replace(
        "cdiv(N, 256)", "cdiv(N, 512)"), HEAD + INDEX + "    if (i < N) y[i] = x[i];\n}\n"),
}
PLAIN = SPEC.replace("{args}", 'x = "in[N + 1]"\ny = "out[2 * N]"')


def mapped(text: str, name: str):
    ctx = context(text, name)
    return [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
            if p.generator == "builtin:vector-map"]


def vetted(text: str, name: str, source: str):
    """The candidate checked as a search checks it: its `@fsr` block, over the original spec,
    changes the launch (a quarter of the threads, 256 a block) and nothing else."""
    _, spec, checked = relaunched(text, name, source)
    placed = text[:text.index("/* @fsr")] + source  # in the file's unit: its includes and typedefs above it
    (own,) = [k for k in discover_kernels(placed) if k.name == name]
    block = parse_spec(SourceText(placed), own, base=spec)
    assert block.spec is not None and not block.errors, block.problems
    assert block.spec.grid == checked.spec.grid and block.spec.without_launch() == spec.without_launch()
    return checked


def cases():
    return [(GELU.read_text(), "gelu_forward")] + list(MAPS.values())


def test_the_naive_gelu_gets_four_elements_a_thread_through_float4():
    text = GELU.read_text()
    (p,) = mapped(text, "gelu_forward")
    assert p.note == ("four elements a thread through float4 loads and stores, grid-stride, scalar tail; "
                      "scalar path when a pointer is not 16-byte aligned")
    assert 'grid = "cdiv(N, 1024)"\nblock = 256\n' in p.source
    assert "__device__ __forceinline__ void fsr_gelu_forward_element(float& out_i, const float inp_i)" in p.source
    assert "    out_i = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));" in p.source
    assert "const float4 inp4 = reinterpret_cast<const float4*>(inp)[v];" in p.source
    assert "reinterpret_cast<float4*>(out)[v] = out4;" in p.source and "float4 out4;" in p.source
    assert "(reinterpret_cast<size_t>(out) | reinterpret_cast<size_t>(inp)) % 16 == 0" in p.source
    assert p.source.count("fsr_gelu_forward_element(out[i], inp[i]);") == 2  # the unaligned path and the tail
    assert p.source.index("/* @fsr") > p.source.index("__device__")  # the block stands above the kernel itself
    checked = vetted(text, "gelu_forward", p.source)
    assert checked.spec.grid == ("cdiv(N, 1024)",)
    ctx = context(text, "gelu_forward")
    assert any("element-wise map" in f and "`out`, `inp`" in f for f in patterns(ctx.kernel, ctx.spec, ctx.definition))


def test_saxpy_loads_the_output_it_updates_and_passes_its_scalar():
    (p,) = mapped(*MAPS["saxpy"])
    assert "void fsr_saxpy_element(const float x_i, float& y_i, float a)" in p.source
    assert "    y_i = a * x_i + y_i;" in p.source
    assert "float4 y4 = reinterpret_cast<const float4*>(y)[v];" in p.source
    assert "fsr_saxpy_element(x4.w, y4.w, a);" in p.source
    vetted(*MAPS["saxpy"], p.source)


@pytest.mark.parametrize("case", sorted(MAPS))
def test_element_wise_maps_are_recognised(case):
    text, name = MAPS[case]
    (p,) = mapped(text, name)
    vetted(text, name, p.source)
    if case.startswith("vector add"):
        assert "for (int idx = first; idx < N; idx += stride)" in p.source and "float4 c4;" in p.source
        assert "c_idx = a_idx + b_idx;  // the sum" in p.source
    if case.startswith("GELU with constants"):  # the helper declares them; the kernel's vectors need none
        assert "    const float COEF = 0.044715f;\n    const float SCALE = 0.5f * (1.0f + 0.0f);\n" in p.source
        assert p.source.count("const float COEF") == 1
    if case.startswith("GELU over"):  # eight 16-bit elements a 128-bit access, each by reference into it
        scalar = "__half" if "__half" in case else "__nv_bfloat16"  # the type the typedef names
        assert 'grid = "cdiv(N, 2048)"' in p.source and "const int vectors = N / 8;" in p.source
        assert f"const {scalar}* inp_lanes = reinterpret_cast<const {scalar}*>(&inp8);" in p.source, p.source
        assert "out_lanes[7], inp_lanes[7]);" in p.source and "reinterpret_cast<uint4*>(out)[v] = out8;" in p.source
        assert p.note.startswith("eight elements a thread through uint4 loads and stores (eight ")
    if case.startswith("int buffers"):
        # a lane the statements may leave alone keeps what memory held: the output is loaded first
        assert "int4 y4 = reinterpret_cast<const int4*>(y)[v];" in p.source and "float4" not in p.source


@pytest.mark.parametrize("case", sorted(NOT_MAPS))
def test_what_is_no_element_wise_map_is_left_alone(case):
    spec, kernel = NOT_MAPS[case]
    assert mapped((spec or PLAIN) + kernel, "k") == [], case


def test_names_the_kernel_uses_are_not_taken():
    text, _ = MAPS["saxpy"]
    text = text.replace("int i =", "int v =").replace("[i]", "[v]").replace("(i < N)", "(v < N)")
    text = text.replace("float a,", "float first,").replace("a = 2.0", "first = 2.0").replace("a * x", "first * x")
    (p,) = mapped(text, "saxpy")
    assert "const int fsr_first = " in p.source and "for (int fsr_v = fsr_first;" in p.source
    assert "void fsr_saxpy_element(const float x_v, float& y_v, float first)" in p.source
    vetted(text, "saxpy", p.source)


@pytest.mark.nvcc
@pytest.mark.parametrize("index", range(len(MAPS) + 1))
def test_the_rewrite_compiles(index):
    text, name = cases()[index]
    (p,) = mapped(text, name)
    checked = vetted(text, name, p.source)
    src = SourceText(text)
    kernel = find_kernel(src, name)
    compiled = compile_kernel(checked.source, kernel_ref(kernel, parse_spec(src, kernel).spec),
                              CompileOptions(arch="sm_90a", compiler="nvcc"))
    assert compiled.ok, compiled.log
