"""The built-in generator's rewrites: deterministic, well-formed, and compiling with nvcc."""

import pytest

from fsr_lsp.evaluator import EvalOptions, prepare
from fsr_lsp.search.generators.builtin import BuiltinGenerator

from .search_helpers import context, example

EXAMPLES = [("saxpy.cu", "saxpy"), ("transpose.cu", "transpose"), ("matmul.cu", "matmul"), ("softmax.cu", "softmax"),
            ("layernorm.cu", "layernorm"), ("stencil.cu", "stencil")]


@pytest.mark.nvcc
@pytest.mark.parametrize("file, name", EXAMPLES)
def test_every_rewrite_compiles_with_nvcc(file, name, cache_dir):
    source = example(file)
    proposals = BuiltinGenerator().propose(context(source, name), 40)
    assert len(proposals) >= 4
    for p in proposals:
        options = EvalOptions(compiler="nvcc", candidate_flags=p.flags, cache_dir=cache_dir)
        prepared = prepare(source, name, p.source, "sm_90a", options)
        assert prepared.job is not None, (p.note, prepared.result.message)


def test_proposals_are_deterministic_and_distinct():
    source = example("saxpy.cu")
    first = BuiltinGenerator().propose(context(source, "saxpy"), 20)
    second = BuiltinGenerator().propose(context(source, "saxpy"), 20)
    assert [p.source for p in first] == [p.source for p in second]
    assert len({p.key for p in first}) == len(first)
    notes = [p.note for p in first]
    assert "__restrict__" in notes and "block 128" in notes and "grid-stride over 4 waves" in notes
    assert "-use_fast_math" in notes and ("-use_fast_math",) == next(p.flags for p in first if p.note == "-use_fast_math")


def test_grid_stride_keeps_the_bounds_and_caps_the_grid():
    p = next(p for p in BuiltinGenerator().propose(context(example("saxpy.cu"), "saxpy"), 20)
             if p.note == "grid-stride over 4 waves")
    assert 'grid = "min(cdiv(n, 256), 528)"' in p.source
    assert "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)" in p.source


def test_no_block_change_when_the_body_hard_codes_the_block_size():
    src = """/* @fsr
bench = { n = 4096 }
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
x = "inout[n]"
*/
__global__ void k(int n, float* x)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = s[255 - threadIdx.x];
}
"""
    notes = [p.note for p in BuiltinGenerator().propose(context(src, "k"), 20)]
    assert not any(n.startswith("block") for n in notes)
    assert not any(n.startswith("grid-stride") for n in notes)  # the guarded statement is not alone
