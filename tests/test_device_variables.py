"""A kernel whose results are kept in the file's `__device__`/`__managed__` variables: fsr does
not compare them, so it gives no spec and the evaluator verifies nothing of it, saying why. A
rewrite that skipped the write (an empty kernel) would otherwise pass every check."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.drafting.origin import kernel_specs
from fsr_lsp.evaluator.job.prepare import EvalOptions, prepare
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.device_variables import device_variable_write, device_variables
from fsr_lsp.source import SourceText

FILE = """#include <cooperative_groups.h>
__device__ float dResult;
__managed__ unsigned int mCount = 0;
static __device__ int hist[256][2];
__constant__ float table[4];
__device__ const int limit = 3;
namespace inner { __device__ float total; }
__device__ float helper(float x) { return x; }

__global__ void atomic_sum(const float* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) atomicAdd(&dResult, x[i]); }
__global__ void counts(const int* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { hist[x[i] & 255][0] += 1; mCount++; } }
__device__ void add_total(float v) { inner::total = v; }
__global__ void via_helper(const float* x, float* y) { add_total(x[0]); y[0] = x[0]; }
__global__ void reads_only(const float* x, float* y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * table[0] + dResult + limit; }
__global__ void compares(const float* x, float* y) { y[0] = (dResult == x[0]) ? 1.f : 0.f; /* dResult = 0; */ }
"""


def test_the_files_writable_device_variables_are_named():
    assert device_variables(FILE) == ["dResult", "mCount", "hist", "total"]


@pytest.mark.parametrize("kernel, written", [
    ("atomic_sum", "`dResult`"),
    ("counts", "`mCount` and `hist`"),
    ("via_helper", "`total`"),
    ("reads_only", None),
    ("compares", None),  # `==` and a comment are no writes
])
def test_writes_to_device_variables_are_found_in_the_kernel_and_what_it_calls(kernel, written):
    src = SourceText(FILE)
    got = device_variable_write(src, find_kernel(src, kernel))
    if written is None:
        assert got is None
    else:
        assert got is not None and set(got.replace(" and ", ", ").split(", ")) == set(written.replace(" and ", ", ").split(", "))


def test_such_a_kernel_gets_no_spec_and_says_why(tmp_path: Path):
    (tmp_path / "k.cu").write_text(FILE)
    specs = {s.kernel: s for s in kernel_specs([tmp_path / "k.cu"])}
    assert specs["atomic_sum"].spec is None
    assert any("keeps results in the file's `dResult`" in p and "does not compare" in p
               for p in specs["atomic_sum"].problems), specs["atomic_sum"].problems
    assert specs["reads_only"].spec is not None, specs["reads_only"].problems


def test_the_evaluator_verifies_nothing_of_it_under_a_spec_of_its_own():
    """A spec written by hand (in buffers only) does not get past preparation: no compile, no run."""
    text = FILE.replace("__global__ void atomic_sum", """/* @fsr
bench = { n = 4096 }
grid = "cdiv(n, 256)"
block = 256
[args]
x = "in[n]"
n = "n"
*/
__global__ void atomic_sum""")
    prepared = prepare(text, "atomic_sum", "__global__ void atomic_sum(const float* x, int n) { }", "sm_90",
                       EvalOptions())
    assert prepared.job is None and prepared.result is not None
    assert prepared.result.status == "spec_error"
    assert "atomic_sum cannot be verified" in prepared.result.message and "`dResult`" in prepared.result.message
