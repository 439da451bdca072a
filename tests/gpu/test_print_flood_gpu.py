"""A check kernel printing each mismatch, as a public sample's `check_results_kernel` does, on the
GPU through the commands: on random inputs at the size its program ran (4 M elements) it would
print 4 M lines, minutes a launch (docs/benchmarks.md, session 11). `fsr capture` then `fsr spec
--check` proves its draft in seconds: the test sizes' random inputs print, and forecast the
flood, so the bench size takes the run's own inputs (`bench_inputs = "captured"`). A rewrite
dropping the printf is still wrong, at the random test sizes; a faithful one is verified."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ..support.programs import captured_and_proven, evaluated, workspace_with

pytestmark = pytest.mark.gpu

PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>

__global__ void daxpy_kernel(int n, double a, const double* x, double* y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

__global__ void check_results(int n, double correctvalue, const double* x)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] != correctvalue)
        printf("ERROR at index = %d, expected = %f, actual: %f\n", i, correctvalue, x[i]);
}

int main()
{
    const int n = 1 << 22;
    double *h = new double[n], *x, *y;
    for (int i = 0; i < n; ++i) h[i] = i;
    cudaMalloc(&x, n * sizeof(double));
    cudaMalloc(&y, n * sizeof(double));
    cudaMemcpy(x, h, n * sizeof(double), cudaMemcpyHostToDevice);
    for (int i = 0; i < n; ++i) h[i] = n - i;
    cudaMemcpy(y, h, n * sizeof(double), cudaMemcpyHostToDevice);
    daxpy_kernel<<<4096, 256>>>(n, 1.0, x, y);
    check_results<<<n / 256, 256>>>(n, n, y);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
"""
FAITHFUL = r"""__global__ void check_results(int n, double correctvalue, const double* x)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = __ldg(x + i);
    if (v != correctvalue)
        printf("ERROR at index = %d, expected = %f, actual: %f\n", i, correctvalue, v);
}
"""
SILENT = """__global__ void check_results(int n, double correctvalue, const double* x)
{
}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    return workspace_with(tmp_path_factory, "checks", PROGRAM)


def test_the_check_kernels_draft_is_proven_in_seconds_with_the_runs_own_inputs_at_its_size(folder: Path):
    started = time.monotonic()
    data = captured_and_proven(folder, "checks", "check_results", "--snapshot-bytes", "64000000")
    seconds = time.monotonic() - started
    print(f"[flood] captured and proven in {seconds:.1f} s: {data['proof']['message'][:400]}")
    assert 'bench_inputs = "captured"' in data["spec"], data  # the proof's spec, relaxed
    assert "printf buffer" in data["proof"]["message"]
    assert seconds < 240


def test_a_rewrite_without_the_printf_is_wrong_and_a_faithful_one_verified(folder: Path):
    wrong = evaluated(folder, "checks.cu", "check_results", SILENT)
    assert wrong.returncode == 1 and "does not print" in wrong.stdout, wrong.stdout[-2000:]
    good = evaluated(folder, "checks.cu", "check_results", FAITHFUL)
    assert good.returncode == 0 and "verified" in good.stdout, good.stdout[-2000:]
