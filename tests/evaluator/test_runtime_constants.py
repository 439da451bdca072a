"""`__constant__` data the host sets at run time (a filter, a table): the evaluator fills it per
input set in both modules (job/constants.py, gpu/constant_fill.py). Left as loaded (zeros), a
candidate that ignores the filter would pass. Run through the evaluator's own prepare and
run_job, the kernels built and run on the CPU (tests/cuda_on_cpu); tests/gpu/test_constants_gpu.py
runs the same on CUDA."""

from __future__ import annotations

import shutil

import pytest

from fsr_lsp.evaluator.job.constants import runtime_constants

CONV = """/* @fsr
bench = { n = 2000 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 128)"
block = 128
[args]
n = "n"
x = "in[n + 4]"
y = "out[n]"
*/
#define TAPS 5
__constant__ float c_filter[TAPS];
__constant__ float c_gain = 1.0f;

__global__ void conv(int n, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < TAPS; ++k) s += c_filter[k] * x[i + k];
        y[i] = c_gain * s;
    }
}
"""
KERNEL = CONV[CONV.index("__global__"):]
GOOD = KERNEL.replace("const float* x, float* y", "const float* __restrict__ x, float* __restrict__ y") \
    .replace("for (int k", "#pragma unroll\n        for (int k")
IGNORES_THE_FILTER = KERNEL.replace("s += c_filter[k] * x[i + k];", "s += 0.0f * x[i + k];")
BOX_FILTER = KERNEL.replace("c_filter[k] * x[i + k]", "0.2f * x[i + k]")


def test_constants_the_host_sets_are_read_with_their_type_and_initialised_ones_are_left():
    plans, left = runtime_constants(CONV, {})
    assert [(p.name, p.dtype) for p in plans] == [("c_filter", "float32")]
    assert left == []


def test_types_aliases_and_what_cannot_be_filled():
    text = """typedef unsigned long long u64;
static __constant__ u64 c_m2[64];
__constant__ int c_offsets[3][3];
__constant__ struct Params c_params;
extern __constant__ float c_elsewhere[4];
__global__ void k(float* y) { __constant__ float inside; }
"""
    plans, left = runtime_constants(text, {"u64": "unsigned long long"})
    assert [(p.name, p.dtype) for p in plans] == [("c_m2", "uint64"), ("c_offsets", "int32")]
    assert len(left) == 1 and "`c_params`" in left[0] and "left as loaded" in left[0]


needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None, reason="no C++ compiler")


@needs_cxx
def test_a_candidate_that_ignores_the_hosts_filter_is_wrong():
    from ..support.cuda_on_cpu import evaluate_on_cpu

    result = evaluate_on_cpu(CONV, "conv", IGNORES_THE_FILTER)
    assert result.status == "wrong", result.message
    assert "y" in result.message


@needs_cxx
def test_a_candidate_that_hardcodes_one_filter_is_wrong_and_a_faithful_rewrite_is_verified():
    from ..support.cuda_on_cpu import evaluate_on_cpu

    assert evaluate_on_cpu(CONV, "conv", BOX_FILTER).status == "wrong"
    result = evaluate_on_cpu(CONV, "conv", GOOD)
    assert result.status == "verified", result.message


SEPARABLE = """/* @fsr
bench = { n = 2000 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 128)"
block = 128
[args]
n = "n"
x = "in[n + 2]"
y = "out[n]"
*/
__constant__ float c_row[3];
__constant__ float c_col[3];

__global__ void sep(int n, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < 3; ++k) s += c_row[k] * x[i + k] + 2.0f * c_col[k];
        y[i] = s;
    }
}
"""
SWAPPED = SEPARABLE[SEPARABLE.index("__global__"):].replace("c_row[k] * x[i + k] + 2.0f * c_col[k]",
                                                            "c_col[k] * x[i + k] + 2.0f * c_row[k]")


@needs_cxx
def test_two_tables_of_one_type_hold_different_values_so_reading_one_for_the_other_fails():
    from ..support.cuda_on_cpu import evaluate_on_cpu

    result = evaluate_on_cpu(SEPARABLE, "sep", SWAPPED)
    assert result.status == "wrong", result.message


def test_constants_under_guards_conditionals_and_extern_c_are_file_scope_and_a_namespaced_one_is_said():
    text = """#ifndef FILTER_H
#define FILTER_H
__constant__ float c_guarded[4];
#endif
#if USE_TABLE
__constant__ int c_table[8];
#else
__constant__ short c_other[8];
#endif
extern "C" { __constant__ double c_linked[2]; }
namespace ns { __constant__ float c_ns[2]; }
"""
    plans, left = runtime_constants(text, {})
    assert [(p.name, p.dtype) for p in plans] == [("c_guarded", "float32"), ("c_table", "int32"),
                                                  ("c_other", "int16"), ("c_linked", "float64")]
    assert len(left) == 1 and "`c_ns` (in a namespace)" in left[0]


def test_a_constant_of_a_typedef_the_builds_macro_chooses_is_filled_as_that_type(tmp_path):
    from fsr_lsp.evaluator.job.prepare import EvalOptions, constant_aliases

    (tmp_path / "types.h").write_text("#if defined(ENABLE_BF16)\ntypedef __nv_bfloat16 floatX;\n#else\n"
                                      "typedef float floatX;\n#endif\n")
    source = '#include "types.h"\n__constant__ floatX c_scale[4];\n'
    plain = runtime_constants(source, constant_aliases(source, EvalOptions(include_dirs=(str(tmp_path),))))[0]
    bf16 = runtime_constants(source, constant_aliases(source, EvalOptions(include_dirs=(str(tmp_path),),
                                                                          flags=("-DENABLE_BF16",))))[0]
    assert [p.dtype for p in plain] == ["float32"] and [p.dtype for p in bf16] == ["bfloat16"]
