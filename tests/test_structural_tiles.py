"""The matrix-product recogniser and its rewrite (shared tiles, a register tile a thread): the
shapes it applies to (guard by `if` or by `return`, the factors in either order, an epilogue
with alpha and beta, x and y swapped), the ones it must leave alone, and, where nvcc is here,
that what it writes compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.evaluator.compile.compiler import CompileOptions, compile_kernel, find_nvcc
from fsr_lsp.evaluator.job.prepare import kernel_ref
from fsr_lsp.kernels import find_kernel
from fsr_lsp.search.generators.structural import patterns, structural_proposals
from fsr_lsp.search.generators.tuner import BuiltinGenerator
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from .search_helpers import context

SGEMM = Path(__file__).parent.parent / "bench" / "naive_kernels" / "sgemm.cu"
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
    return [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition) if p.generator == "builtin:shared-tiles"]


def vetted_and_compiled(text: str, name: str, source: str):
    src = SourceText(text)
    kernel = find_kernel(src, name)
    spec = parse_spec(src, kernel).spec
    vetted = check_candidate(src, kernel, spec, source)
    assert vetted.ok, vetted.reason
    assert vetted.launch_changed and vetted.spec.block == (16, 16) and vetted.spec.args == spec.args
    if find_nvcc() is not None:
        compiled = compile_kernel(vetted.source, kernel_ref(kernel, spec), CompileOptions(arch="sm_90a", compiler="nvcc"))
        assert compiled.ok, compiled.log
    return vetted


def test_the_naive_sgemm_gets_shared_tiles_and_a_register_tile():
    text = SGEMM.read_text()
    p, small = tiled(text, "sgemm_naive")
    assert small.note.startswith("shared-memory tiles: 32x32 outputs a block, 2x2 a thread")
    assert 'grid = ["cdiv((cdiv(N, 16)) * 16, 32)", "cdiv((cdiv(M, 16)) * 16, 32)"]' in small.source
    vetted_and_compiled(text, "sgemm_naive", small.source)
    assert p.note.startswith("shared-memory tiles: 64x64 outputs a block, 4x4 a thread")
    assert 'grid = ["cdiv((cdiv(N, 16)) * 16, 64)", "cdiv((cdiv(M, 16)) * 16, 64)"]' in p.source
    assert "__shared__ float fsr_a[16][64 + 1]" in p.source and "float fsr_sum[4][4]" in p.source
    assert "((row < M) && k < (K)) ? A[row * K + k]" in p.source and "((col < N) && k < (K)) ? B[k * N + col]" in p.source
    vetted_and_compiled(text, "sgemm_naive", p.source)
    ctx = context(text, "sgemm_naive")
    assert any("matrix product" in found for found in patterns(ctx.kernel, ctx.spec, ctx.definition))


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_shapes_of_a_matrix_product_are_recognised(case):
    text = SPEC + SHAPES[case]
    p, small = tiled(text, "gemm")
    vetted_and_compiled(text, "gemm", small.source)
    vetted = vetted_and_compiled(text, "gemm", p.source)
    assert "beta * C[" in vetted.source  # the original's epilogue, per output
    if "return" in case:
        assert "if (!(r >= M || c >= N))" in p.source and "(!(r >= M) && k < (K)) ? A[r * K + k]" in p.source


@pytest.mark.parametrize("case", sorted(NOT_PRODUCTS))
def test_what_is_no_matrix_product_is_left_alone(case):
    assert tiled(SPEC + NOT_PRODUCTS[case], "gemm") == [], case


def test_the_builtin_generator_proposes_the_tiles_first_and_alone():
    ctx = context(SGEMM.read_text(), "sgemm_naive")
    out = BuiltinGenerator().propose(ctx, 4)
    assert [p.generator for p in out] == ["builtin:shared-tiles"] * 2  # two tile shapes, measured side by side
