"""The matrix-product recogniser and its family of tiled rewrites: the shapes it applies to
(guard by `if` or by `return`, the factors in either order, an epilogue with alpha and beta, x
and y swapped, column-major operands, a batch), the ones it must leave alone, which index of
each operand is adjacent, the space's constraints, and, where nvcc is here, that what it writes
compiles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.evaluator.compile.compiler import CompileOptions, compile_kernel, find_nvcc
from fsr_lsp.evaluator.job.prepare import kernel_ref
from fsr_lsp.kernels import find_kernel
from fsr_lsp.search.generators.structural import patterns, structural_proposals
from fsr_lsp.search.generators.structural.matmul.layout import adjacent
from fsr_lsp.search.generators.structural.matmul.product import read_product
from fsr_lsp.search.generators.structural.matmul.tile_space import TileConfig, configurations, ranked, valid
from fsr_lsp.search.generators.structural.tiles import FIRST_GUESSES, GENERATOR
from fsr_lsp.search.generators.tuner import BuiltinGenerator
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.search_helpers import context

SGEMM = Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "sgemm.cu"
SPEC = """/* @fsr
bench = { M = 512, N = 256, K = 300 }
tests = [ { M = 1, N = 1, K = 1 }, { M = 33, N = 17, K = 65 } ]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
block = [16, 16]
[args]
A = "in[M * K]"
B = "in[K * N]"
C = "inout[M * N]"
M = "M"
N = "N"
K = "K"
alpha = 1.5
beta = 0.5
*/
"""
HEAD = "__global__ void gemm(const float* A, const float* B, float* C, int M, int N, int K, float alpha, float beta) {\n"
SHAPES = {
    "an if guard, alpha and beta": HEAD + """
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float tmp = 0.0f;
        for (int i = 0; i < K; ++i) { tmp += A[row * K + i] * B[i * N + col]; }
        C[row * N + col] = alpha * tmp + beta * C[row * N + col];
    }
}
""",
    "a return guard, the factors in the other order": HEAD + """
    int r = threadIdx.y + blockIdx.y * blockDim.y;
    int c = blockDim.x * blockIdx.x + threadIdx.x;
    if (r >= M || c >= N) return;
    float s = 0.f;
    for (int k = 0; k < K; k++)
        s += B[k * N + c] * A[r * K + k];
    C[r * N + c] = alpha * s + beta * C[r * N + c];
}
""",
}
NOT_PRODUCTS = {
    "a pointer to the thread's row": HEAD + """
    int row = blockIdx.y * blockDim.y + threadIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x;
    const float* a = A + row * K;
    if (row < M && col < N) { float s = 0.f; for (int k = 0; k < K; ++k) s += a[k] * B[k * N + col]; C[row * N + col] = s; }
}
""",
    "a guard mixing row and column": HEAD + """
    int row = blockIdx.y * blockDim.y + threadIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row * N + col < M * N) { float s = 0.f; for (int k = 0; k < K; ++k) s += A[row * K + k] * B[k * N + col]; C[row * N + col] = s; }
}
""",
    "a second statement in the loop": HEAD + """
    int row = blockIdx.y * blockDim.y + threadIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) { float s = 0.f; for (int k = 0; k < K; ++k) { s += A[row * K + k] * B[k * N + col]; C[k] = s; } }
}
""",
    "a factor that is no product's": HEAD + """
    int row = blockIdx.y * blockDim.y + threadIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) { float s = 0.f; for (int k = 0; k < K; ++k) s += A[row * K + k] * B[k]; C[row * N + col] = s; }
}
""",
    "a loop that does not start at zero": HEAD + """
    int row = blockIdx.y * blockDim.y + threadIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) { float s = 0.f; for (int k = 1; k < K; ++k) s += A[row * K + k] * B[k * N + col]; C[row * N + col] = s; }
}
""",
    "shared memory already": HEAD + """
    __shared__ float t[16];
    int row = blockIdx.y * blockDim.y + threadIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) { float s = 0.f; for (int k = 0; k < K; ++k) s += A[row * K + k] * B[k * N + col]; C[row * N + col] = s; }
}
""",
    "half operands into a float sum": HEAD.replace("const float* A", "const __half* A") + """
    int row = blockIdx.y * blockDim.y + threadIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) { float s = 0.f; for (int k = 0; k < K; ++k) s += A[row * K + k] * B[k * N + col]; C[row * N + col] = s; }
}
""",
}


def tiled(text: str, name: str):
    ctx = context(text, name)
    return [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition) if p.generator == GENERATOR]


def vetted_and_compiled(text: str, name: str, source: str):
    src = SourceText(text)
    kernel = find_kernel(src, name)
    spec = parse_spec(src, kernel).spec
    vetted = check_candidate(src, kernel, spec, source)
    assert vetted.ok, vetted.reason
    assert vetted.launch_changed and len(vetted.spec.block) == 1 and vetted.spec.args == spec.args
    if find_nvcc() is not None:
        compiled = compile_kernel(vetted.source, kernel_ref(kernel, spec), CompileOptions(arch="sm_90a", compiler="nvcc"))
        assert compiled.ok, compiled.log
    return vetted


def product_of(text: str, name: str):
    ctx = context(text, name)
    return read_product(ctx.kernel, ctx.spec, ctx.definition), ctx


def test_the_naive_sgemm_gets_the_tiled_family_each_guess_a_different_shape():
    text = SGEMM.read_text()
    out = tiled(text, "sgemm_naive")
    assert len(out) == FIRST_GUESSES
    shapes = {re.search(r"(\d+x\d+) outputs a block, (\d+x\d+) a thread", p.note).groups() for p in out}
    assert len(shapes) == len(out), [p.note for p in out]
    for p in out:
        assert 'grid = ["cdiv((cdiv(N, 16)) * 16, ' in p.source and "__launch_bounds__(" in p.source
        assert "fsr_in[fsr_e] = ((row < M)) && k < (K);" in p.source and "fsr_at[fsr_e] = &A[row * K + k];" in p.source
        vetted_and_compiled(text, "sgemm_naive", p.source)
    ctx = context(text, "sgemm_naive")
    assert any("matrix product" in found for found in patterns(ctx.kernel, ctx.spec, ctx.definition))


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_shapes_of_a_matrix_product_are_recognised(case):
    text = SPEC + SHAPES[case]
    out = tiled(text, "gemm")
    assert out
    vetted = vetted_and_compiled(text, "gemm", out[0].source)
    assert "beta * C[" in vetted.source  # the original's epilogue, per output
    if "return" in case:
        assert "if (!(r >= M || c >= N))" in out[0].source and "fsr_in[fsr_e] = (!(r >= M)) && k < (K);" in out[0].source


@pytest.mark.parametrize("case", sorted(NOT_PRODUCTS))
def test_what_is_no_matrix_product_is_left_alone(case):
    assert tiled(SPEC + NOT_PRODUCTS[case], "gemm") == [], case


FORMS = Path(__file__).parent.parent.parent / "bench" / "matmul_forms"


def test_the_forms_real_code_uses_are_read_with_the_factor_that_walks_each_index():
    """x walking C's rows (the worklog form, unsigned indices), a column-major B, BLAS's column-major
    double product with leading dimensions, and a batch in grid z."""
    xrows, _ = product_of((FORMS / "sgemm_xrows.cu").read_text(), "gemm_naive")
    assert (xrows.p.name, xrows.p.type, xrows.q.name, xrows.a, xrows.b) == ("x", "unsigned int", "y", "A[x * K + i]",
                                                                            "B[i * N + y]")
    assert xrows.swapped and xrows.extent == ("(cdiv(M, 32)) * 32", "(cdiv(N, 32)) * 32")
    bt, _ = product_of((FORMS / "sgemm_colmajor_b.cu").read_text(), "matmul_bt")
    assert (bt.a, bt.b) == ("A[row * K + k]", "Bt[col * K + k]")
    assert adjacent(bt.a, "row", "k") == "k" and adjacent(bt.b, "col", "k") == "k"
    dcm, _ = product_of((FORMS / "dgemm_colmajor.cu").read_text(), "dgemm_cm")
    assert dcm.acc_type == "double" and dcm.guard == "!(i >= M || j >= N)"
    assert adjacent(dcm.a, "i", "l") == "index" and adjacent(dcm.b, "j", "l") == "k"
    batched, _ = product_of((FORMS / "sgemm_batched.cu").read_text(), "bmm")
    assert batched.batch == "batch" and len(batched.before) == 3 and batched.a == "a[row * K + k]"
    out = tiled((FORMS / "sgemm_batched.cu").read_text(), "bmm")
    assert out and '"batch"]' in out[0].source and "block = [" in out[0].source


def test_an_index_this_module_cannot_read_gets_no_layout_and_a_cast_is_read_through():
    assert adjacent("A[f(row) + k]", "row", "k") is None
    assert adjacent("A[(size_t)row * lda + k]", "row", "k") == "k"
    assert adjacent("A[k * lda + row]", "row", "k") == "index"
    assert adjacent("A[row / 2 + k]", "row", "k") is None
    assert adjacent("A[row * K + 2 * k]", "row", "k") is None  # strided: neither


def test_the_space_keeps_only_what_the_renderer_can_write_and_the_gpu_can_run():
    assert valid(TileConfig(128, 128, 8, 8, 8))
    assert valid(TileConfig(128, 128, 8, 8, 8), element=8)  # a double 8x8 tile: 224-248 registers on an H100, no spills
    assert not valid(TileConfig(128, 128, 32, 8, 8, pad=2), element=8)  # with a deeper slice staged: past 255
    assert not valid(TileConfig(128, 128, 6, 8, 8))  # k not in whole vectors
    assert not valid(TileConfig(256, 256, 8, 4, 4))  # 4096 threads
    assert not valid(TileConfig(128, 128, 64, 8, 8))  # 64 KiB of static shared memory
    assert not valid(TileConfig(128, 128, 8, 8, 8, pad=2))  # rows no longer whole vectors apart
    assert all(valid(c) for c in configurations())
    # a register cap the tile cannot fit would spill: the prior never ranks it
    assert all(not c.min_blocks or c.registers(8) <= 65536 // (c.min_blocks * c.threads) for c in ranked(2048, 2048, 1, 132, 8))


def test_the_builtin_generator_proposes_the_tiles_first_and_alone():
    ctx = context(SGEMM.read_text(), "sgemm_naive")
    out = BuiltinGenerator().propose(ctx, 4)
    assert [p.generator for p in out] == [GENERATOR] * 4  # four tile shapes, measured side by side
