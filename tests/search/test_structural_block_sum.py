"""The block-sum recogniser and its rewrite (a shared-memory tree -> warp shuffles): the tree's
two textbook forms, with a per-block output or an atomic, and what it must leave alone; where
nvcc is here, that what it writes compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.evaluator.compile.compiler import CompileOptions, compile_kernel, find_nvcc
from fsr_lsp.evaluator.records import CompileResult
from fsr_lsp.evaluator.job.prepare import kernel_ref
from fsr_lsp.kernels import find_kernel
from fsr_lsp.search.generators.structural import patterns, structural_proposals
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.search_helpers import context

NAIVE = Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "reduction.cu"
SPEC = """/* @fsr
bench = { blocks = 4096 }
tests = [ { blocks = 1 }, { blocks = 7 } ]
grid = "blocks"
block = 256
[args]
x = "in[blocks * 256]"
partial = "out[blocks]"
*/
"""
HEAD = "__global__ void block_sums(const float* x, float* partial)\n{\n    __shared__ float buf[256];\n" \
       "    unsigned int t = threadIdx.x;\n    buf[t] = x[blockIdx.x * blockDim.x + t];\n    __syncthreads();\n"
TAIL = "    if (t == 0) partial[blockIdx.x] = buf[0];\n}\n"
TREES = {
    "interleaved, doubling": "    for (unsigned int s = 1; s < blockDim.x; s *= 2) {\n"
                             "        if (t % (2 * s) == 0) buf[t] += buf[t + s];\n        __syncthreads();\n    }\n",
    "sequential, halving": "    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
                           "        if (t < s) { buf[t] += buf[t + s]; }\n        __syncthreads();\n    }\n",
}
NOT_TREES = {
    "a max, not a sum": HEAD + "    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
                        "        if (t < s) buf[t] = fmaxf(buf[t], buf[t + s]);\n        __syncthreads();\n    }\n" + TAIL,
    "other elements read after it": HEAD + TREES["sequential, halving"] + "    partial[blockIdx.x] = buf[t];\n}\n",
    "the last warp left to a function": HEAD + "    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {\n"
                                        "        if (t < s) buf[t] += buf[t + s];\n        __syncthreads();\n    }\n" + TAIL,
    "no barrier before it": HEAD.replace("    __syncthreads();\n", "") + TREES["sequential, halving"] + TAIL,
}


def summed(text: str, name: str):
    ctx = context(text, name)
    return [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition) if p.generator == "builtin:block-sum"]


def vetted_and_compiled(text: str, name: str, source: str, launch_changed: bool = False) -> CompileResult | None:
    """The rewrite passes the candidate rules with the original's launch (or its own, where
    `launch_changed`) and, where nvcc is here, compiles: its compile result (None without nvcc)."""
    src = SourceText(text)
    kernel = find_kernel(src, name)
    spec = parse_spec(src, kernel).spec
    vetted = check_candidate(src, kernel, spec, source)
    assert vetted.ok, vetted.reason
    assert vetted.launch_changed == launch_changed
    if find_nvcc() is None:
        return None
    compiled = compile_kernel(vetted.source, kernel_ref(kernel, spec), CompileOptions(arch="sm_90a", compiler="nvcc"))
    assert compiled.ok, compiled.log
    return compiled


def test_the_naive_reduction_gets_warp_shuffles():
    text = NAIVE.read_text()
    (p,) = summed(text, "reduce_sum")
    assert p.note.startswith("block sum by warp shuffles") and "8 barriers" in p.note
    assert "__shfl_down_sync(0xffffffffu, fsr_sum, fsr_offset)" in p.source and "threadIdx.x < 8 ?" in p.source
    assert "atomicAdd(total, sdata[0])" in p.source and "s *= 2" not in p.source
    vetted_and_compiled(text, "reduce_sum", p.source)
    ctx = context(text, "reduce_sum")
    assert any("shared-memory tree sums each block" in f for f in patterns(ctx.kernel, ctx.spec, ctx.definition))


@pytest.mark.parametrize("case", sorted(TREES))
def test_both_textbook_trees_are_recognised(case):
    text = SPEC + HEAD + TREES[case] + TAIL
    (p,) = summed(text, "block_sums")
    assert "partial[blockIdx.x] = buf[0]" in p.source
    vetted_and_compiled(text, "block_sums", p.source)


@pytest.mark.parametrize("case", sorted(NOT_TREES))
def test_what_is_no_block_sum_is_left_alone(case):
    assert summed(SPEC + NOT_TREES[case], "block_sums") == [], case


def test_a_block_that_is_no_power_of_two_is_left_alone():
    text = SPEC.replace("block = 256", "block = 96") + HEAD + TREES["sequential, halving"] + TAIL
    assert summed(text, "block_sums") == []


def test_a_block_written_with_a_y_of_one_is_one_dimension():
    """`dim3 Block(BLOCK_SIZE, 1)` drafts `block = [256, 1]`: still a 1-D block of 256."""
    text = SPEC.replace("block = 256", "block = [256, 1]") + HEAD + TREES["interleaved, doubling"] + TAIL
    (p,) = summed(text, "block_sums")
    vetted_and_compiled(text, "block_sums", p.source)


def test_a_shared_array_of_a_typedef_the_parameters_resolve_is_summed():
    """The book's reduction: `typedef float real;`, `extern __shared__ real s_y[];`, the tree,
    then one atomicAdd a block."""
    text = ("typedef float real;\n/* @fsr\nbench = { N = 100000 }\ngrid = \"cdiv(N, 128)\"\nblock = 128\nsmem = 512\nrtol = 1e-4\n"
            "[args]\nd_x = \"in[N]\"\nd_y = \"inout[1] zeros()\"\nN = \"N\"\n*/\n"
            "void __global__ reduce(const real *d_x, real *d_y, const int N)\n{\n    const int tid = threadIdx.x;\n"
            "    const int n = blockIdx.x * blockDim.x + tid;\n    extern __shared__ real s_y[];\n"
            "    s_y[tid] = (n < N) ? d_x[n] : 0.0;\n    __syncthreads();\n\n"
            "    for (int offset = blockDim.x >> 1; offset > 0; offset >>= 1)\n    {\n        if (tid < offset)\n"
            "        {\n            s_y[tid] += s_y[tid + offset];\n        }\n        __syncthreads();\n    }\n\n"
            "    if (tid == 0)\n    {\n        atomicAdd(d_y, s_y[0]);\n    }\n}\n")
    (p,) = summed(text, "reduce")
    assert "float fsr_sum = s_y[threadIdx.x];" in p.source and "threadIdx.x < 4 ?" in p.source, p.source
    vetted_and_compiled(text, "reduce", p.source)
