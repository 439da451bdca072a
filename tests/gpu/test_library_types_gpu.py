"""Library types as element types on the GPU: cuRAND states are compared as their bytes, so a
rewrite that draws the same numbers but does not advance the state is caught."""

from __future__ import annotations

import pytest

from fsr_lsp.evaluator import evaluate

from .conftest import QUICK, kernel_text

pytestmark = pytest.mark.gpu
STATES = kernel_text("curand_states.cu")


@pytest.mark.parametrize("kernel", ["seed_states", "draw_uniform"])
def test_kernels_taking_curand_states_are_their_own_oracles(evaluator, kernel):
    r = evaluate(evaluator, STATES, kernel, None, QUICK)
    assert r.status == "verified", r.message


def test_a_rewrite_that_draws_without_advancing_the_state_is_wrong(evaluator):
    forgets = """
__global__ void draw_uniform(float* out, curandState_t* state, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { curandState_t local = state[i]; out[i] = curand_uniform(&local); }
}"""
    r = evaluate(evaluator, STATES, "draw_uniform", forgets, QUICK)
    assert r.status == "wrong" and r.mismatch is not None and "state" in r.message, r.message
