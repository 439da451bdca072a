"""A kernel that syncs its whole grid is launched cooperatively, the original and a rewrite
alike; its spec is proven and a wrong rewrite of it still caught."""

from __future__ import annotations

import pytest

from fsr_lsp.drafting.proof import prove
from fsr_lsp.evaluator import evaluate

from .conftest import QUICK, kernel_text

pytestmark = pytest.mark.gpu
GRID_SYNC = kernel_text("grid_sync.cu")
SHUFFLE = """
__global__ void grid_sum(const float* x, float* partial, float* total, int n)
{
    cg::grid_group grid = cg::this_grid();
    float v = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    __shared__ float warp[8];
    if ((threadIdx.x & 31) == 0) warp[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) { float s = 0.f; for (int w = 0; w < 8; ++w) s += warp[w]; partial[blockIdx.x] = s; }
    grid.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) { float t = 0.f; for (int b = 0; b < gridDim.x; ++b) t += partial[b]; total[0] = t; }
}
"""


def test_the_original_is_its_own_oracle_and_its_spec_is_proven(evaluator):
    r = evaluate(evaluator, GRID_SYNC, "grid_sum", None, QUICK)
    assert r.status == "verified", r.message
    proof = prove(evaluator, GRID_SYNC, "grid_sum")
    assert proof.proven, proof.message


def test_a_rewrite_is_launched_cooperatively_and_a_wrong_one_caught(evaluator):
    r = evaluate(evaluator, GRID_SYNC, "grid_sum", SHUFFLE, QUICK)
    assert r.status == "verified", r.message
    last_block_lost = SHUFFLE.replace("b < gridDim.x;", "b < gridDim.x - 1;")
    wrong = evaluate(evaluator, GRID_SYNC, "grid_sum", last_block_lost, QUICK)
    assert wrong.status == "wrong", wrong.message
