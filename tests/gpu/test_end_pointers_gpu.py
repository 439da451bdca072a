"""A pointer just past another parameter's buffer on the GPU, through the commands: a program
launches an elementwise kernel over packs of four with its tail given as `r + n` and `x + n`
(nothing left over), as frameworks' launchers do. `fsr capture` then `fsr spec --check` proves a
spec passing the tails as `end(...)` of the packs' buffers; `fsr eval` verifies a rewrite, and
calls wrong one that writes before the tail (into the packs). And a program that calls a kernel
in place (`twice(a, a, n)`): its spec passes `y` as `same(x)`, and a rewrite that is right only
for buffers apart (it clears `y` before reading `x`) is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.programs import captured_and_proven, evaluated, workspace_with

pytestmark = pytest.mark.gpu

KERNEL = r"""
__global__ void scale_packs(long n_pack, float4* pack_r, const float4* pack_x, long n_tail, float* tail_r,
                            const float* tail_x)
{
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n_pack) {
        float4 v = pack_x[i];
        pack_r[i] = make_float4(2.f * v.x, 2.f * v.y, 2.f * v.z, 2.f * v.w);
    }
    if (i < n_tail) tail_r[i] = 2.f * tail_x[i];
}
"""
PROGRAM = KERNEL + r"""
#include <cstdio>
int main()
{
    // not a multiple of the driver's 2 MiB: `r + n` is then no other allocation's start (which the
    // capture would take it for: an address both ends one allocation and starts the next)
    const long n = (1 << 20) + 4096;
    float *r, *x;
    cudaMalloc(&r, n * sizeof(float));
    cudaMalloc(&x, n * sizeof(float));
    float* hx = new float[n];
    for (long i = 0; i < n; ++i) hx[i] = (i % 1000) * 0.01f - 5.f;
    cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice);
    const long n_pack = n / 4, n_tail = n - n_pack * 4;
    scale_packs<<<(n_pack + 255) / 256, 256>>>(n_pack, (float4*)r, (const float4*)x, n_tail, r + n_pack * 4,
                                               x + n_pack * 4);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
"""
GOOD = KERNEL.replace("float4 v = pack_x[i];", "float4 v = __ldg(pack_x + i);")
# the tails walked from their ends back to the packs' start: a rewrite that took `tail_r` for a
# buffer of its own (null, or apart) could not know where the packs are; here it writes them twice
BACKWARDS = KERNEL.replace("if (i < n_tail) tail_r[i] = 2.f * tail_x[i];",
                           "if (i < n_tail) tail_r[i] = 2.f * tail_x[i];\n"
                           "    if (i == 0) tail_r[-1] = 0.f;")


@pytest.fixture(scope="module")
def folder(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    return workspace_with(tmp_path_factory, "scale_packs", PROGRAM)


def test_the_tails_past_the_packs_are_their_ends_and_proven(folder: Path):
    data = captured_and_proven(folder, "scale_packs", "scale_packs")
    print(f"[end] {data['proof']['message'][:300]}")
    assert 'tail_r = "end(pack_r)"' in data["spec"] and 'tail_x = "end(pack_x)"' in data["spec"], data["spec"]


def test_a_rewrite_is_verified_and_one_writing_before_the_tail_is_wrong(folder: Path):
    good = evaluated(folder, "scale_packs.cu", "scale_packs", GOOD)
    assert good.returncode == 0 and "verified" in good.stdout, good.stdout[-2000:]
    wrong = evaluated(folder, "scale_packs.cu", "scale_packs", BACKWARDS)
    assert wrong.returncode == 1 and "pack_r" in wrong.stdout, wrong.stdout[-2000:]


TWICE = r"""
__global__ void twice(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}
"""
TWICE_PROGRAM = TWICE + r"""
#include <cstdio>
int main()
{
    const int n = 1 << 20;
    float* a;
    cudaMalloc(&a, n * sizeof(float));
    float* h = new float[n];
    for (int i = 0; i < n; ++i) h[i] = (i % 1000) * 0.01f - 5.f;
    cudaMemcpy(a, h, n * sizeof(float), cudaMemcpyHostToDevice);
    twice<<<(n + 255) / 256, 256>>>(a, a, n);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
"""
CLEARS_FIRST = TWICE.replace("if (i < n) y[i] = 2.f * x[i];", "if (i < n) { y[i] = 0.f; y[i] += 2.f * x[i]; }")


@pytest.fixture(scope="module")
def in_place(tmp_path_factory, evaluator) -> Path:
    return workspace_with(tmp_path_factory, "twice", TWICE_PROGRAM)


def test_one_pointer_passed_twice_is_one_buffer_and_a_rewrite_for_buffers_apart_is_wrong(in_place: Path):
    data = captured_and_proven(in_place, "twice", "twice")
    assert 'y = "same(x)"' in data["spec"] and 'x = "inout[' in data["spec"], data["spec"]
    wrong = evaluated(in_place, "twice.cu", "twice", CLEARS_FIRST)
    assert wrong.returncode == 1 and "x" in wrong.stdout and "wrong" in wrong.stdout, wrong.stdout[-2000:]
