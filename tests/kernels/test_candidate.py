"""What a candidate may contain, checked before compiling."""

import pytest

from fsr_lsp.evaluator.job.candidate import check_candidate, host_code
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..conftest import EXAMPLES

ORIGINAL = (EXAMPLES / "saxpy.cu").read_text()
BODY = "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = a * x[i] + y[i];\n}\n"
GOOD = "__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)\n" + BODY


def check(text):
    src = SourceText(ORIGINAL)
    k = find_kernel(src, "saxpy")
    return check_candidate(src, k, parse_spec(src, k).spec, text)


def test_a_good_candidate_is_spliced_into_the_original_file():
    c = check(GOOD)
    assert c.ok, c.reason
    assert "#include <cuda_runtime.h>" in c.source and "/* @fsr" in c.source  # the rest of the file stays
    assert c.source.count("__global__ void saxpy") == 1 and "__restrict__ y" in c.source
    assert not c.launch_changed


@pytest.mark.parametrize("text, reason", [
    ("", "defines no __global__ kernel"),
    (GOOD.replace("saxpy", "saxpy2"), "renames the kernel"),
    (GOOD.replace("float a,", "double a,"), "changes the parameter list"),
    (GOOD.replace("int n,", ""), "changes the parameter list"),
    (GOOD + GOOD.replace("saxpy", "helper"), "exactly one"),
    ("int main() { return 0; }\n" + GOOD, "host function main"),
    ("void launch() {}\n" + GOOD, "host function launch"),
    ("float table[4];\n" + GOOD, "host variable table"),
    ("#include <iostream>\n" + GOOD, "#include <iostream> is not a device header"),
    (GOOD[:-3], "incomplete"),
])
def test_rejections(text, reason):
    c = check(text)
    assert not c.ok and reason in c.reason, c.reason


def test_device_code_of_every_kind_is_allowed():
    text = """#include <cuda_fp16.h>
#include <cooperative_groups.h>
#define UNROLL 4
constexpr int kTile = 256;
static const int kOther = 3;
__constant__ float coef[4];
__device__ int counter;
struct Pair { float a, b; };
typedef float real;
namespace detail {
template <int N> __device__ __forceinline__ float times(float v) { return v * N; }
__host__ __device__ inline float twice(float v) { return 2 * v; }
}
""" + GOOD
    assert host_code(SourceText(text)) == ""
    assert check(text).ok


def test_the_original_files_own_includes_are_allowed():
    assert check("#include <cuda_runtime.h>\n" + GOOD).ok


def test_a_candidate_spec_may_change_only_the_launch():
    spec = ORIGINAL[ORIGINAL.index("/* @fsr"):ORIGINAL.index("*/") + 2]
    launch = spec.replace('grid  = "cdiv(n, 256)"', 'grid  = "cdiv(n, 512)"').replace("block = 256", "block = 512")
    c = check(launch + "\n" + GOOD)
    assert c.ok and c.launch_changed and c.spec.block == (512,) and c.spec.grid == ("cdiv(n, 512)",)
    assert "@fsr" not in c.source.split("__global__")[-1]
    sizes = spec.replace("bench = { n = 16777216 }", "bench = { n = 1024 }")
    c = check(sizes + "\n" + GOOD)
    assert not c.ok and "changes bench" in c.reason
    args = spec.replace("a = 2.0", "a = 0.0")
    assert "changes args" in check(args + "\n" + GOOD).reason


SPEC_TEXT = ORIGINAL[ORIGINAL.index("/* @fsr"):ORIGINAL.index("*/") + 2]
LAUNCH_512 = SPEC_TEXT.replace('grid  = "cdiv(n, 256)"', 'grid  = "cdiv(n, 512)"').replace("block = 256", "block = 512")
HELPER = "#define SCALE 1\n__device__ __forceinline__ float fma1(float a, float x, float y) { return a * x + y; }\n" \
         "struct Tile { float v[4]; };\nconstexpr int kVec = 4;\n"


@pytest.mark.parametrize("layout", ["above_helpers", "below_kernel", "between_helpers", "inside_body"])
def test_a_candidates_block_sets_its_launch_wherever_it_stands(layout):
    text = {
        "above_helpers": LAUNCH_512 + "\n" + HELPER + GOOD,
        "below_kernel": HELPER + GOOD + "\n" + LAUNCH_512 + "\n",
        "between_helpers": "#define SCALE 1\n" + LAUNCH_512 + "\n" + HELPER.split("\n", 1)[1] + GOOD,
        "inside_body": GOOD.replace("{\n", "{\n" + LAUNCH_512 + "\n", 1),
    }[layout]
    c = check(text)
    assert c.ok, c.reason
    assert c.launch_changed and c.spec.block == (512,) and c.spec.grid == ("cdiv(n, 512)",)
    assert "@fsr" not in c.source[c.source.index("__global__"):]


TYPEDEF_FILE = """#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;
/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 1000 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
out = "out[n]"
inp = "in[n] normal()"
n   = "n"
*/
__global__ void relu(floatX* out, const floatX* inp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = inp[i] > floatX(0.0f) ? inp[i] : floatX(0.0f);
}
"""


@pytest.mark.parametrize("where", ["file", "header"])
def test_a_launch_change_keeps_element_types_named_by_the_files_typedef(where, tmp_path):
    from fsr_lsp.kernels.aliases import with_included_aliases

    text = TYPEDEF_FILE
    if where == "header":  # the typedef in a quoted header, as training code has it
        (tmp_path / "common.h").write_text("#include <cuda_bf16.h>\ntypedef __nv_bfloat16 floatX;\n")
        text = text.replace("#include <cuda_bf16.h>\ntypedef __nv_bfloat16 floatX;\n", '#include "common.h"\n')
    src = SourceText(text)
    original = with_included_aliases(find_kernel(src, "relu"), text, [tmp_path])
    spec = parse_spec(src, original).spec
    assert spec is not None
    definition = text[text.index("/* @fsr"):]
    candidate = definition.replace('"cdiv(n, 256)"', '"cdiv(n, 512)"').replace("block = 256", "block = 512")
    c = check_candidate(src, original, spec, candidate)
    assert c.ok, c.reason
    assert c.launch_changed and c.spec.block == (512,) and c.spec.args == spec.args


def test_a_candidate_with_two_blocks_or_an_unusable_block_fails_with_the_reason():
    c = check(LAUNCH_512 + "\n" + HELPER + GOOD + "\n" + SPEC_TEXT + "\n")
    assert not c.ok and "2 @fsr blocks" in c.reason
    broken = LAUNCH_512.replace("block = 512", "block = [512")
    c = check(HELPER + broken + "\n" + GOOD)
    assert not c.ok and "@fsr block is invalid" in c.reason and "TOML" in c.reason


def test_a_pragma_before_an_unbraced_body_is_a_complete_candidate():
    text = """__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    for (int u = 0; u < 4; ++u)
#pragma unroll
        if (base + u < n) y[base + u] = a * x[base + u] + y[base + u];
}
"""
    c = check(LAUNCH_512.replace('"cdiv(n, 512)"', '"cdiv(n, 2048)"') + "\n" + text)
    assert c.ok, c.reason


MACROS = (EXAMPLES.parent / "tests" / "data" / "macros.cu").read_text()


@pytest.mark.parametrize("name", ["via_macro", "clustered", "bounded_by_macro"])
def test_kernels_declared_through_macros_and_attributes_take_candidates(name):
    """`KERNEL void k` (#define KERNEL __global__ in the original file), `__cluster_dims__(2, 1, 1)`
    and an attribute macro: the grammar misreads each signature, the candidate is still device code."""
    from fsr_lsp.kernels import kernel_source

    src = SourceText(MACROS)
    original = find_kernel(src, name)
    definition = kernel_source(src, original).definition
    spec = parse_spec(src, original).spec
    helper = "#define DEV __device__ __forceinline__\nDEV float two() { return 2.0f; }\n"
    c = check_candidate(src, original, spec, helper + definition.replace("float*", "float* __restrict__"))
    assert c.ok, c.reason
    assert "__restrict__" in c.source and c.source.count(f" {name}(") == 1
    c = check_candidate(src, original, spec, definition + "\nvoid launch() {}\n")
    assert not c.ok and "host function launch" in c.reason


def test_a_candidates_block_states_only_what_it_changes():
    """The rest (sizes, arguments, tolerances) comes from the original's spec, as it was read."""
    c = check('/* @fsr\ngrid = "cdiv(n, 1024)"\nblock = 1024\n*/\n' + GOOD)
    assert c.ok, c.reason
    original = check(GOOD).spec
    assert c.launch_changed and c.spec.block == (1024,) and c.spec.grid == ("cdiv(n, 1024)",)
    assert (c.spec.bench, c.spec.tests, c.spec.args) == (original.bench, original.tests, original.args)
    only_smem = check("/* @fsr\nsmem = 1024\n*/\n" + GOOD)
    assert only_smem.ok and only_smem.spec.smem == 1024 and only_smem.spec.block == original.block


def test_a_partial_block_that_changes_more_than_the_launch_is_named_in_the_candidates_terms():
    c = check('/* @fsr\nblock = 512\n[args]\na = 0.5\n*/\n' + GOOD)
    assert not c.ok and "changes args" in c.reason
    c = check('/* @fsr\nblock = 512\ngrid = "cdiv(n, 512) + m"\n*/\n' + GOOD)
    assert not c.ok and "line 3 of the candidate" in c.reason and "m" in c.reason
    c = check('/* @fsr\nblock = 4096\n*/\n' + GOOD)
    assert not c.ok and "line 2 of the candidate" in c.reason
