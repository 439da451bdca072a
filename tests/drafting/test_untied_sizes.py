"""Sizes equal at the bench are tested apart too (drafting/untied.py).

A draft shrinks every size alike, so sizes equal in a run stayed equal in every test: a square
matmul was tested square only, and a rewrite striding A's rows by N where the kernel strides
them by K was verified. These tests fail if the drafts stop moving such sizes apart, or if the
proof stops keeping the apart tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsr_lsp.drafting.draft import draft_specs
from fsr_lsp.drafting.placement import place_spec
from fsr_lsp.drafting.untied import apart_safe, tied_groups, untied_tests

from ..support import cuda_on_cpu
from ..support.captures import i32, ptr, write_capture

needs_cxx = pytest.mark.skipif(cuda_on_cpu.cxx() is None and os.environ.get("FSR_REQUIRE_NVCC") != "1",
                               reason="the CPU test double needs a C++ compiler")

MATMUL = """
__global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
"""

HOST = """
int main()
{
    int M = 96, N = 96, K = 96;
    float *A, *B, *C;
    cudaMalloc(&A, M * K * sizeof(float));
    cudaMalloc(&B, K * N * sizeof(float));
    cudaMalloc(&C, M * N * sizeof(float));
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    matmul<<<grid, block>>>(A, B, C, M, N, K);
    return 0;
}
"""

# strides A's rows by N: the same as the original wherever N == K
STRIDE_BY_N = MATMUL.replace("A[row * K + k]", "A[row * N + k]")


def test_sizes_equal_at_the_bench_are_moved_apart_in_both_orders():
    bench = {"M": 1024, "N": 1024, "K": 1024, "batch": 4, "heads": 4}
    assert tied_groups(bench, {"M", "N", "K"}) == [["M", "N", "K"]]  # batch and heads do not vary
    first, second = untied_tests(bench, {"M", "N", "K"}, ["M * K", "cdiv(N, 16)"])
    assert first == {"M": 37, "N": 53, "K": 71, "batch": 4, "heads": 4}
    assert second == {"M": 71, "N": 53, "K": 37, "batch": 4, "heads": 4}
    assert untied_tests({"M": 1024, "N": 512}, {"M", "N"}, ["M"]) == []  # the bench has them apart already
    assert untied_tests(bench, {"M", "N", "K"}, ["M - 40"]) == [{**second}]  # M = 37 leaves a length empty


def test_small_equal_sizes_still_get_distinct_values():
    (entry, _) = untied_tests({"h": 8, "w": 8}, {"h", "w"}, ["h * w"])
    assert entry["h"] != entry["w"] and max(entry.values()) <= 8


def test_a_length_the_run_cannot_attribute_is_sized_for_the_largest_size():
    groups = [["M", "N", "K"]]
    assert apart_safe("M * M", groups) == "max(M, N, K) * max(M, N, K)"
    assert apart_safe("cdiv(M, 16)", groups) == "cdiv(max(M, N, K), 16)"
    assert apart_safe("Mx * 2", groups) == "Mx * 2"  # whole names only


def test_a_draft_from_the_launch_site_tests_a_square_program_apart():
    (draft,) = draft_specs(MATMUL + HOST).values()
    assert "{ N = 37, M = 53, K = 71 }" in draft.text and "{ N = 71, M = 53, K = 37 }" in draft.text, draft.text


@needs_cxx
def test_a_rewrite_assuming_a_square_program_is_wrong_under_its_draft():
    pytest.importorskip("torch")
    (draft,) = draft_specs(MATMUL + HOST).values()
    source = place_spec(MATMUL + HOST, "matmul", draft.text).text
    result = cuda_on_cpu.evaluate_on_cpu(source, "matmul", STRIDE_BY_N)
    assert result.status == "wrong", result.message
    assert "at N=37, M=53, K=71" in result.message or "at N=71, M=53, K=37" in result.message, result.message
    assert cuda_on_cpu.evaluate_on_cpu(source, "matmul", None).status == "verified"


def matmul_launch(n: int) -> dict:
    return {"id": 0, "kernel": "_Z6matmulPKfS0_Pfiii", "name": "matmul(float const*, float const*, float*, int, int, int)",
            "base": "matmul", "grid": [(n + 15) // 16, (n + 15) // 16, 1], "block": [16, 16, 1], "smem": 0,
            "params": [ptr(4 * n * n), ptr(4 * n * n), ptr(4 * n * n), {"offset": 24, "size": 4, "hex": i32(n)},
                       {"offset": 28, "size": 4, "hex": i32(n)}, {"offset": 32, "size": 4, "hex": i32(n)}]}


@needs_cxx
def test_a_square_capture_is_proven_apart_and_a_rewrite_assuming_it_square_is_wrong(tmp_path: Path):
    """A capture alone (no launch site): which of M, N, K a 96 x 96 allocation follows the run
    cannot tell, so lengths and grid go over the largest, and the proof keeps the apart tests."""
    pytest.importorskip("torch")
    from fsr_lsp.capture import latest_capture
    from fsr_lsp.drafting.resolver import kernel_specs
    from fsr_lsp.drafting.proof import prove

    (tmp_path / "mm.cu").write_text(MATMUL)
    write_capture(tmp_path, [matmul_launch(96)])
    (drafted,) = kernel_specs([tmp_path / "mm.cu"], capture=latest_capture(tmp_path))
    assert 'A = "in[max(M, N, K) * max(M, N, K)]"' in drafted.spec, drafted.spec
    assert "{ M = 37, N = 53, K = 71 }" in drafted.spec
    with cuda_on_cpu.cpu_evaluator() as evaluator:
        proof = prove(evaluator, MATMUL, "matmul", drafted.spec)
    assert proof.proven, proof.message
    assert "{ M = 37, N = 53, K = 71 }" in proof.spec and "{ M = 71, N = 53, K = 37 }" in proof.spec, proof.spec
    source = place_spec(MATMUL, "matmul", proof.spec).text
    result = cuda_on_cpu.evaluate_on_cpu(source, "matmul", STRIDE_BY_N)
    assert result.status == "wrong", result.message


@needs_cxx
def test_a_matrix_struct_captured_with_width_equal_to_stride_catches_width_for_stride(tmp_path: Path):
    """The CUDA guide's matmul over `Matrix` structs, captured with width = height = stride (64):
    under the proven capture's spec, reading rows `width` apart where they are `stride` apart is
    wrong (it passed every test while the nine sizes moved together)."""
    pytest.importorskip("torch")
    from fsr_lsp.capture import latest_capture
    from fsr_lsp.drafting.resolver import kernel_specs
    from fsr_lsp.drafting.proof import prove

    from ..capture.test_capture import DATA
    from ..support.captures import matmul_launch

    source = (DATA / "structs" / "matmul_struct.cu").read_text()
    bare = source[:source.index("/* @fsr")] + source[source.index("*/") + 3:]
    (tmp_path / "mm.cu").write_text(bare)
    write_capture(tmp_path, [matmul_launch(64, 64)])
    (drafted,) = kernel_specs([tmp_path / "mm.cu"], capture=latest_capture(tmp_path))
    with cuda_on_cpu.cpu_evaluator() as evaluator:
        proof = prove(evaluator, bare, "MatMulKernel", drafted.spec)
    assert proof.proven, proof.message
    placed = place_spec(bare, "MatMulKernel", proof.spec).text
    wrong = (DATA / "structs" / "matmul_struct_width_for_stride.cu").read_text()
    assert cuda_on_cpu.evaluate_on_cpu(placed, "MatMulKernel", wrong).status == "wrong"
    good = (DATA / "structs" / "matmul_struct_good.cu").read_text()
    assert cuda_on_cpu.evaluate_on_cpu(placed, "MatMulKernel", good).status == "verified"


def test_tests_that_hold_the_sizes_apart_already_get_no_more():
    bench = {"M": 256, "N": 256, "K": 256}
    drafted = [{"M": 17, "N": 17, "K": 17}, {"N": 37, "M": 53, "K": 71}]
    assert untied_tests(bench, {"M", "N", "K"}, ["M"], drafted) == []
    assert len(untied_tests(bench, {"M", "N", "K"}, ["M"], drafted[:1])) == 2


def test_a_written_spec_testing_sizes_only_together_gets_a_warning():
    from fsr_lsp.kernels import find_kernel
    from fsr_lsp.source import SourceText
    from fsr_lsp.specs import parse_spec

    def problems(tests: str) -> list:
        text = ("/* @fsr\nbench = { M = 256, N = 256, K = 256 }\n" + tests + "\ngrid = [\"cdiv(N, 16)\", \"cdiv(M, 16)\"]\n"
                "block = [16, 16]\n[args]\nA = \"in[M * K]\"\nB = \"in[K * N]\"\nC = \"out[M * N]\"\n"
                "M = \"M\"\nN = \"N\"\nK = \"K\"\n*/\n" + MATMUL)
        kernel = find_kernel(text, "matmul")
        return [p for p in parse_spec(SourceText(text), kernel).problems if p.code == "spec-sizes-tied"]

    (tied,) = problems("tests = [ { M = 17, N = 17, K = 17 }, { M = 100, N = 100, K = 100 } ]")
    assert tied.severity == "warning" and "M, N and K are equal at the bench and in every test" in tied.message
    (pair,) = problems("tests = [ { M = 17, N = 17, K = 5 } ]")
    assert "M and N are equal" in pair.message
    assert problems("tests = [ { M = 17, N = 17, K = 17 }, { M = 37, N = 53, K = 71 } ]") == []
