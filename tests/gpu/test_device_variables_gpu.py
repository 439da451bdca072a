"""A reduction into a `__device__` variable on the GPU, through the commands: a program sums into
`__device__ float dResult` (set by `cudaMemcpyToSymbol`, read back by `cudaMemcpyFromSymbol`).
`fsr capture` then `fsr spec --check` proves it (the variable compiled as a pointer the evaluator
points at a buffer of its own); `fsr eval` verifies a rewrite with one atomic per warp, and calls
wrong one that skips the atomic and one that stores its block's sum instead of adding it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.doubles import fsr
from ..support.programs import built, captured_and_proven, evaluated, workspace_with

pytestmark = pytest.mark.gpu

KERNEL = r"""
__device__ float dResult;

__global__ void reduce_atomic(const float* __restrict input, int N)
{
    int id = threadIdx.x + blockIdx.x * blockDim.x;
    if (id < N) atomicAdd(&dResult, input[id]);
}
"""
PROGRAM = KERNEL + r"""
#include <cstdio>
int main()
{
    const int n = 1 << 20;
    float* d;
    cudaMalloc(&d, n * sizeof(float));
    float* h = new float[n];
    for (int i = 0; i < n; ++i) h[i] = (i % 1000) * 0.001f;
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    float zero = 0.f, result = 0.f;
    cudaMemcpyToSymbol(dResult, &zero, sizeof(float));
    reduce_atomic<<<(n + 255) / 256, 256>>>(d, n);
    cudaMemcpyFromSymbol(&result, dResult, sizeof(float));
    printf("sum %f\n", result);
    return 0;
}
"""
WARP = r"""
__device__ float dResult;

__global__ void reduce_atomic(const float* __restrict input, int N)
{
    int id = threadIdx.x + blockIdx.x * blockDim.x;
    float v = id < N ? input[id] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(&dResult, v);
}
"""
SKIPS = KERNEL.replace("if (id < N) atomicAdd(&dResult, input[id]);", "(void)id;")
STORES = WARP.replace("atomicAdd(&dResult, v);", "dResult = v;")


@pytest.fixture(scope="module")
def folder(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    return workspace_with(tmp_path_factory, "reduce_atomic", PROGRAM)


def test_a_reduction_into_a_device_variable_is_proven(folder: Path):
    data = captured_and_proven(folder, "reduce_atomic", "reduce_atomic")
    print(f"[device variable] {data['proof']['message'][:300]}")


def test_a_rewrite_is_verified_and_ones_that_skip_or_store_are_wrong(folder: Path):
    good = evaluated(folder, "reduce_atomic.cu", "reduce_atomic", WARP)
    assert good.returncode == 0 and "verified" in good.stdout, good.stdout[-2000:]
    for bad in (SKIPS, STORES):
        wrong = evaluated(folder, "reduce_atomic.cu", "reduce_atomic", bad)
        assert wrong.returncode == 1 and "dResult" in wrong.stdout, wrong.stdout[-2000:]


# A count kept in a header's variable: fsr's reading of the kernel's file does not see it, the
# module's symbol table does, and the original's run changes it.
TALLY_H = "__device__ unsigned int tally;\n"
COUNTS = r"""#include "tally.h"
__global__ void doubles(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { y[i] = 2.f * x[i]; atomicAdd(&tally, 1u); }
}
"""
COUNTING_PROGRAM = COUNTS + r"""
#include <cstdio>
int main()
{
    const int n = 100000;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemset(x, 0, n * sizeof(float));
    doubles<<<(n + 255) / 256, 256>>>(x, y, n);
    unsigned int seen = 0;
    cudaMemcpyFromSymbol(&seen, tally, sizeof(seen));
    printf("%u elements\n", seen);
    return 0;
}
"""
UNCOUNTED = COUNTS.replace(" atomicAdd(&tally, 1u);", "")


@pytest.fixture(scope="module")
def counting(tmp_path_factory, evaluator) -> Path:
    out = tmp_path_factory.mktemp("tally")
    (out / ".git").mkdir()
    (out / "tally.h").write_text(TALLY_H)
    built(out, "doubles", COUNTING_PROGRAM)
    return out


def test_a_count_kept_in_a_headers_variable_refuses_the_spec_and_no_rewrite_skipping_it_passes(counting: Path):
    r = fsr("capture", "--", "./doubles", cwd=counting)
    assert r.returncode == 0 and "doubles" in r.stdout, r.stdout + r.stderr
    r = fsr("spec", "doubles.cu", "--kernel", "doubles", "--json", "--check", cwd=counting)
    print(f"[header variable] {r.stdout[-1500:]}")
    assert "changes `tally`" in r.stdout and '"proven"' not in r.stdout, r.stdout + r.stderr
    skipped = evaluated(counting, "doubles.cu", "doubles", UNCOUNTED)
    said = skipped.stdout + skipped.stderr  # a spec that fails its proof is said on stderr, exit 2
    assert skipped.returncode != 0 and "changes `tally`" in said, said[-2000:]
