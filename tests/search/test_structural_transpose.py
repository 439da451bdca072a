"""The transpose recogniser and its rewrite (one element copied to a transposed index -> the
copy staged through a shared tile): the shapes naive transposes are written in, what it must
leave alone, and, where nvcc is here, that what it writes compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.kernels import find_kernel
from fsr_lsp.search.generators.structural import patterns, structural_proposals
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.search_helpers import context
from .test_structural_block_sum import vetted_and_compiled

NAIVE = Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "transpose.cu"
SPEC = """/* @fsr
bench = { N = 2048 }
tests = [ { N = 1 }, { N = 33 }, { N = 100 } ]
grid = ["cdiv(N, 32)", "cdiv(N, 32)"]
block = [32, 32]
[args]
A = "in[N * N]"
B = "out[N * N]"
N = "N"
*/
"""
HEAD = "__global__ void tr(const float *A, float *B, const int N)\n{\n"
KERNELS = {
    "the book's": HEAD + "    const int nx = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    const int ny = blockIdx.y * blockDim.y + threadIdx.y;\n"
                         "    if (nx < N && ny < N)\n    {\n        B[nx * N + ny] = A[ny * N + nx];\n    }\n}\n",
    "a macro index, column-major, a return at the end":
        "#define INDX( row, col, ld ) ( ( (col) * (ld) ) + (row) )\n" + HEAD +
        "  const int myRow = blockDim.x * blockIdx.x + threadIdx.x;\n"
        "  const int myCol = blockDim.y * blockIdx.y + threadIdx.y;\n"
        "  if( myRow < N && myCol < N )\n  {\n    B[INDX( myRow, myCol, N )] = A[INDX( myCol, myRow, N )];\n  }\n"
        "  return;\n}\n",
    "an early return": HEAD + "    int y = threadIdx.y + blockIdx.y * blockDim.y;\n"
                              "    int x = threadIdx.x + blockIdx.x * blockDim.x;\n"
                              "    if (x >= N || y >= N) return;\n    B[x * N + y] = A[y * N + x];\n}\n",
}
NOT_TRANSPOSES = {
    "a copy": HEAD + "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
                     "    if (x < N && y < N) B[y * N + x] = A[y * N + x];\n}\n",
    "a scaled copy": HEAD + "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
                            "    if (x < N && y < N) B[x * N + y] = 2.0f * A[y * N + x];\n}\n",
    "two statements": HEAD + "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
                             "    if (x < N && y < N) { B[x * N + y] = A[y * N + x]; B[0] = 1.0f; }\n}\n",
    "x only": HEAD + "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n    int y = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "    if (x < N) B[x * N] = A[x];\n}\n",
}


def transposed(text: str, name: str = "tr"):
    ctx = context(text, name)
    return [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
            if p.generator.startswith("builtin:transpose-tile")]


@pytest.mark.parametrize("case", sorted(KERNELS))
def test_a_naive_transpose_is_staged_through_a_padded_tile_either_access_exchanged(case):
    """Which of the two accesses walks down a column depends on the layout (the book's reads
    rows, the macro's column-major read walks columns): one variant exchanges the write, the
    other the read, and the search measures both."""
    text = SPEC + KERNELS[case]
    write, read = transposed(text)
    assert (write.generator, read.generator) == ("builtin:transpose-tile-write", "builtin:transpose-tile-read")
    for p in (write, read):
        assert "__shared__ float fsr_tile[32][32 + 1];" in p.source and p.source.count("__syncthreads();") == 1
        assert "blockIdx.x * blockDim.x + threadIdx.y" in p.source and "blockIdx.y * blockDim.y + threadIdx.x" in p.source
        vetted_and_compiled(text, "tr", p.source)
    assert "fsr_tile[threadIdx.y][threadIdx.x] = A[" in write.source and "= fsr_tile[threadIdx.x][threadIdx.y];" in write.source
    assert "fsr_tile[threadIdx.x][threadIdx.y] = A[" in read.source and "= fsr_tile[threadIdx.y][threadIdx.x];" in read.source
    # the exchanged access's declarations take the other axis's thread index, the other keeps its own
    before, after = read.source.split("__syncthreads();")
    assert "blockIdx.x * blockDim.x + threadIdx.y" in before and "blockIdx.x * blockDim.x + threadIdx.y" not in after
    before, after = write.source.split("__syncthreads();")
    assert "blockIdx.x * blockDim.x + threadIdx.y" in after and "blockIdx.x * blockDim.x + threadIdx.y" not in before
    ctx = context(text, "tr")
    assert any("transposed index" in f for f in patterns(ctx.kernel, ctx.spec, ctx.definition))


def test_the_naive_kernels_transpose_of_16x16_blocks_gets_a_16_tile():
    p, _ = transposed(NAIVE.read_text(), "transpose_naive")
    assert "fsr_tile[16][16 + 1]" in p.source and "if (row < rows && col < cols)" in p.source
    vetted_and_compiled(NAIVE.read_text(), "transpose_naive", p.source)


@pytest.mark.parametrize("case", sorted(NOT_TRANSPOSES))
def test_what_is_no_transpose_is_left_alone(case):
    assert transposed(SPEC + NOT_TRANSPOSES[case]) == [], case


@pytest.mark.parametrize("block", ["[32, 8]", "[16, 32]", "[8, 8]"])
def test_a_block_that_is_no_square_tile_becomes_32x32_blocks_over_what_the_guard_bounds(block):
    """A 32x8 block (common in real code) cannot be transposed through a tile of its own shape:
    the candidate asks for 32x32 blocks in its @fsr block, the grid over the guard's bounds."""
    text = SPEC.replace("block = [32, 32]", f"block = {block}") + KERNELS["the book's"]
    write, read = transposed(text)
    for p in (write, read):
        assert p.source.startswith('/* @fsr\ngrid = ["cdiv(N, 32)", "cdiv(N, 32)"]\nblock = [32, 32]\n*/\n')
        assert "fsr_tile[32][32 + 1]" in p.source and "blocks of 32x32 threads" in p.note
        src = SourceText(text)
        kernel = find_kernel(src, "tr")
        vetted = check_candidate(src, kernel, parse_spec(src, kernel).spec, p.source)
        assert vetted.ok and vetted.launch_changed, vetted.reason


def test_what_cannot_be_relaunched_is_left_alone():
    """A 1-D block, a guard that is not `x < size && y < size`, or launch bounds that a 32x32
    block would break: nothing."""
    early = SPEC.replace("block = [32, 32]", "block = [32, 8]") + KERNELS["an early return"]
    bounded = SPEC.replace("block = [32, 32]", "block = [32, 8]") + KERNELS["the book's"].replace(
        "__global__ void", "__global__ void __launch_bounds__(256)")
    for text in (SPEC.replace("block = [32, 32]", "block = 256") + KERNELS["the book's"], early, bounded):
        assert transposed(text) == []


def test_the_naive_transpose_also_gets_tiles_of_several_elements_a_thread():
    """32x32 tiles of 32x8 threads and 64x64 of 64x8 (four and eight elements a thread, the
    measured fastest on an H100: 94-96% of a copy), each access exchanged, their grid over the
    guard's bounds; the indices are the kernel's own, declared for each element."""
    text = NAIVE.read_text()
    ctx = context(text, "transpose_naive")
    rows = [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
            if p.generator.startswith("builtin:transpose-rows")]
    assert [p.generator for p in rows] == ["builtin:transpose-rows-write", "builtin:transpose-rows-read"] * 2
    first = rows[0].source
    assert 'grid = ["cdiv(cols, 32)", "cdiv(rows, 32)"]\nblock = [32, 8]' in first
    assert "for (int fsr_j = 0; fsr_j < 32; fsr_j += 8)" in first and "__shared__ float fsr_tile[32][32 + 1];" in first
    assert "int col = blockIdx.x * 32 + threadIdx.y + fsr_j;" in first and "int row = blockIdx.y * 32 + threadIdx.x;" in first
    assert "block = [64, 8]" in rows[2].source
