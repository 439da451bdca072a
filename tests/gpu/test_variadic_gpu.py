"""A variadic elementwise template on the GPU, through the commands: a program launches
`apply<Twice, float, float, __half>` (a functor by value, one `in` per element of the pack), `fsr
capture` then `fsr spec --check` proves the spec of that instantiation (`in_0`, `in_1`, the
functor as the run passed it), and `fsr eval` verifies a vectorised rewrite and calls wrong one
that reads its inputs the other way round."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.programs import captured_and_proven, evaluated, workspace_with

pytestmark = pytest.mark.gpu

KERNEL = r"""
#include <cuda_fp16.h>
#include <cstdio>

struct Twice {
    __device__ float operator()(float a, __half b) const { return 2.f * a + __half2float(b); }
};

template <typename F, typename R, typename... IN>
__global__ void apply(F f, int n, R* out, const IN*... in)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f(in[i]...);
}
"""
PROGRAM = KERNEL + r"""
int main()
{
    const int n = 1 << 20;
    float *out, *a;
    __half* b;
    cudaMalloc(&out, n * sizeof(float));
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(__half));
    float* ha = new float[n];
    __half* hb = new __half[n];
    for (int i = 0; i < n; ++i) {
        ha[i] = (i % 1000) * 0.01f - 5.f;
        hb[i] = __float2half((i % 37) * 0.25f);
    }
    cudaMemcpy(a, ha, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb, n * sizeof(__half), cudaMemcpyHostToDevice);
    apply<Twice, float, float, __half><<<(n + 255) / 256, 256>>>(Twice(), n, out, a, b);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
"""
GOOD = r"""template <typename F, typename R, typename... IN>
__global__ void apply(F f, int n, R* out, const IN*... in)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f(__ldg(in + i)...);
}
"""
SWAPPED = r"""template <typename F, typename R, typename... IN>
__global__ void apply(F f, int n, R* out, const IN*... in)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f(in[n - 1 - i]...);
}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    return workspace_with(tmp_path_factory, "apply", PROGRAM)


def test_the_captured_instantiation_is_proven_with_one_parameter_per_pack_element(folder: Path):
    data = captured_and_proven(folder, "apply", "apply", "--snapshot-bytes", "64000000")
    print(f"[variadic] {data['proof']['message'][:300]}")
    for line in ('template = "Twice, float, float, __half"', 'f = "captured()"', "in_0 = ", "in_1 = "):
        assert line in data["spec"], data["spec"]


def test_a_rewrite_is_verified_and_one_reading_its_inputs_reversed_is_wrong(folder: Path):
    good = evaluated(folder, "apply.cu", "apply", GOOD)
    assert good.returncode == 0 and "verified" in good.stdout, good.stdout[-2000:]
    wrong = evaluated(folder, "apply.cu", "apply", SWAPPED)
    assert wrong.returncode == 1 and "out" in wrong.stdout, wrong.stdout[-2000:]
