"""Which @fsr block belongs to which kernel, and when a kernel is complete: shapes models and
people write (helpers, #defines and structs between a spec and its kernel; pragmas, #if in a
parameter list, attributes, inline PTX, lambdas)."""

from __future__ import annotations

import pytest

from fsr_lsp.kernels import discover, find_kernel, kernel_source
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

SPEC = """/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 128)"
block = 128
[args]
n = "n"
x = "in[n]"
y = "out[n]"
*/"""
KERNEL = """__global__ void k(int n, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = helper(x[i]);
}
"""

BETWEEN_OK = {
    "define": "#define TILE 32\n#define HALF (TILE / 2)\n",
    "device_helper": "__device__ __forceinline__ float helper(float v) { return v * 2.0f; }\n",
    "host_device": "__host__ __device__ inline float twice(float v)\n{\n    return 2 * v;\n}\n",
    "constexpr": "constexpr int kBlock = 128;\nstatic constexpr float kScale = 0.5f;\n",
    "const": "const int TILE_DIM = 32;\n",
    "constant": "__constant__ float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};\n",
    "struct": "struct __align__(16) Pair { float a, b; };\n",
    "typedef": "typedef float real;\nusing vec = float4;\n",
    "template_helper": "template <int N>\n__device__ float unrolled(const float* p) {\n    float s = 0;\n#pragma unroll\n"
                       "    for (int i = 0; i < N; ++i) s += p[i];\n    return s;\n}\n",
    "template_struct": "template <typename T> struct Acc { T v; __device__ void add(T x) { v += x; } };\n",
    "comments": "// the kernel below is naive\n/* a plain block comment */\n",
    "namespace": "namespace detail {\n__device__ float sq(float v) { return v * v; }\n}  // namespace detail\n",
    "prototype_of_itself": "__global__ void k(int n, const float* x, float* y);\n",
    "static_assert": "static_assert(sizeof(float) == 4, \"float\");\n",
    "if_blocks": "#if __CUDA_ARCH__ >= 800\n__device__ float fast(float v) { return v; }\n#else\n"
                 "__device__ float fast(float v) { return v; }\n#endif\n",
}


@pytest.mark.parametrize("name", sorted(BETWEEN_OK))
def test_a_block_attaches_across_device_side_declarations(name):
    text = f"{SPEC}\n{BETWEEN_OK[name]}{KERNEL}"
    found = discover(text)
    (k,) = found.kernels
    assert k.spec is not None and not found.orphan_specs, found.orphan_specs
    src = SourceText(text)
    assert parse_spec(src, k).spec.block == (128,)
    texts = kernel_source(src, k)
    assert texts.definition.startswith("__global__ void k(")
    assert texts.unit.startswith("/* @fsr") and texts.unit.endswith("}")
    assert BETWEEN_OK[name].strip().splitlines()[0] in texts.declarations or name == "define"


BETWEEN_BAD = {
    "host_function": ("int host_count(int n) { return n; }\n", "host code `int host_count(int n) { return n; }`"),
    "host_variable": ("float scale = 2.0f;\n", "host code `float scale = 2.0f;`"),
    "other_prototype": ("__global__ void other(float* p);\n", "a declaration of kernel `other`"),
    "host_in_namespace": ("namespace h {\nvoid run();\n}\n", "host code `void run();`"),
}


@pytest.mark.parametrize("name", sorted(BETWEEN_BAD))
def test_a_block_separated_by_host_code_or_a_kernel_attaches_to_nothing_and_says_why(name):
    between, why = BETWEEN_BAD[name]
    text = f"{SPEC}\n{between}{KERNEL}"
    found = discover(text)
    k = next(k for k in found.kernels if k.name == "k")
    assert k.spec is None
    (orphan,) = found.orphan_specs
    assert why in orphan.reason and "stands between it and kernel `k`" in orphan.reason, orphan.reason
    assert orphan.comment.span.start_byte == 0


def test_a_block_belongs_to_the_next_kernel_even_when_another_follows():
    text = f"{SPEC}\n__global__ void other(float* p) {{ p[0] = 1; }}\n{KERNEL}"
    found = discover(text)
    assert [(k.name, k.spec is not None) for k in found.kernels] == [("other", True), ("k", False)]
    assert not found.orphan_specs


def test_attribute_prefixes_stay_part_of_the_kernel():
    for prefix in ('extern "C" ', "static ", "template <typename T>\n"):
        kernel = KERNEL.replace("const float* x", "const T* x") if "template" in prefix else KERNEL
        text = f"{SPEC}\n{prefix}{kernel}"
        (k,) = discover(text).kernels
        assert k.spec is not None, prefix


def test_two_blocks_before_one_kernel_the_nearer_wins_and_the_other_is_reported():
    text = f"{SPEC}\n{SPEC.replace('block = 128', 'block = 64')}\n{KERNEL}"
    found = discover(text)
    (k,) = found.kernels
    assert "block = 64" in k.spec.body
    (orphan,) = found.orphan_specs
    assert orphan.comment.span.start_byte == 0 and "another @fsr block (line 11)" in orphan.reason


def test_blocks_after_the_last_kernel_or_inside_a_body_are_reported():
    inside = KERNEL.replace("{\n", "{\n" + SPEC + "\n", 1)
    found = discover(f"{inside}\n{SPEC}\n")
    assert [o.reason for o in found.orphan_specs] == ["it is inside kernel `k`", "no kernel definition follows it"]


def test_each_kernel_takes_its_own_block():
    text = f"{SPEC}\n{KERNEL}\n{SPEC.replace('block = 128', 'block = 32')}\n" + KERNEL.replace("void k(", "void k2(")
    found = discover(text)
    assert [("block = 32" in k.spec.body) for k in found.kernels] == [False, True]
    assert not found.orphan_specs


def test_a_spec_like_text_in_a_line_comment_or_string_is_not_a_block():
    text = '// /* @fsr bench = { n = 1 } */\nconst char* s = "/* @fsr */";\n' + KERNEL
    found = discover(text)
    assert found.kernels[0].spec is None and not found.orphan_specs


COMPLETE = {
    "pragma_before_unbraced_body": """__global__ void k(int n, const float* x, float* y) {
    float s = 0;
    for (int i = 0; i < n; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            s += x[i * 4 + j];
    y[0] = s;
}""",
    "align_in_shared": """__global__ void k(int n, const float* x, float* y) {
    __shared__ __align__(8) float tile[256];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = tile[255 - threadIdx.x];
}""",
    "asm_lambda_constexpr_macro": """__global__ void k(int n, const float* x, float* y) {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    auto twice = [&](float v) { return 2.f * v; };
    if constexpr (sizeof(float) == 4) { y[0] = twice(x[lane]); }
    CHECK_BOUNDS(n)
    const char* brace = "}";  char c = '{';
}""",
    "launch_bounds_macro": """#define BOUNDS(t) __launch_bounds__(t)
__global__ void BOUNDS(256) k(int n, const float* x, float* y) {
    y[threadIdx.x] = x[threadIdx.x];
}""",
    "cooperative_groups": """__global__ void k(int n, const float* x, float* y) {
    auto block = cooperative_groups::this_thread_block();
    auto warp = cooperative_groups::tiled_partition<32>(block);
    float v = x[threadIdx.x];
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if (warp.thread_rank() == 0) y[blockIdx.x] = v;
}""",
}


@pytest.mark.parametrize("name", sorted(COMPLETE))
def test_a_kernel_whose_braces_balance_is_complete_whatever_the_parse_says(name):
    text = COMPLETE[name] + "\n__global__ void after(float* p) { p[0] = 1; }\n"
    kernels = discover(text).kernels
    assert [k.name for k in kernels] == ["k", "after"]
    k = kernels[0]
    assert k.complete, name
    assert [p.name for p in k.params] == ["n", "x", "y"]
    assert SourceText(text).slice(k.definition_span.start_byte, k.definition_span.end_byte).rstrip().endswith("}")


def test_ifdef_inside_a_parameter_list_takes_the_branch_the_file_selects():
    text = """#define WITH_SCALE
__global__ void k(float* out, const float* in
#ifdef WITH_SCALE
    , float scale
#else
    , int unused
#endif
#if 0
    , int never
#endif
    // a comment in the list
) {
    out[threadIdx.x] = in[threadIdx.x];
}
"""
    (k,) = discover(text).kernels
    assert k.complete and [p.name for p in k.params] == ["out", "in", "scale"]
    without = text.replace("#define WITH_SCALE\n", "")
    assert [p.name for p in find_kernel(without, "k").params] == ["out", "in", "unused"]


def test_unbalanced_braces_are_incomplete_and_do_not_hide_the_next_kernel():
    text = "__global__ void k(int n, float* y) {\n    if (n) {\n        y[0] = 1;\n\n" \
           "__global__ void after(float* p) { p[0] = 1; }\n"
    kernels = discover(text).kernels
    assert [(k.name, k.complete) for k in kernels] == [("k", False), ("after", True)]
