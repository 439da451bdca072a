"""Sizes a run held equal, tested apart on a GPU, through the commands: a square program is
captured, `fsr spec --check` proves its spec with the sizes apart, and under that spec a rewrite
assuming the run's equalities (A's rows strided by N, a matrix's width read for its stride) is
wrong while a correct one is verified."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..drafting.test_untied_sizes import HOST, MATMUL, STRIDE_BY_N
from ..support.programs import built, captured_and_proven, evaluated
from .test_struct_params_gpu import DATA

pytestmark = pytest.mark.gpu

UNROLLED = MATMUL.replace("for (int k = 0;", "#pragma unroll 4\n        for (int k = 0;")


@pytest.fixture()
def folder(tmp_path, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_a_captured_square_matmul_is_tested_apart(folder: Path):
    built(folder, "mm", MATMUL + HOST.replace("M = 96, N = 96, K = 96", "M = 256, N = 256, K = 256"))
    spec = captured_and_proven(folder, "mm", "matmul")["spec"]
    assert "N = 37, M = 53, K = 71" in spec or "M = 37, N = 53, K = 71" in spec, spec
    bad = evaluated(folder, "mm.cu", "matmul", STRIDE_BY_N)
    assert bad.returncode == 1 and "wrong" in bad.stdout
    good = evaluated(folder, "mm.cu", "matmul", UNROLLED)
    assert good.returncode == 0 and "verified" in good.stdout


def test_a_captured_matrix_struct_width_for_stride_is_wrong(folder: Path):
    """The CUDA guide's matmul over `Matrix` structs, run with width = height = stride: the
    capture's spec moves the nine sizes apart, so reading `width` for `stride` is wrong."""
    source = (DATA / "matmul_struct.cu").read_text()
    built(folder, "mms", source[:source.index("/* @fsr")] + source[source.index("*/") + 3:])
    captured_and_proven(folder, "mms", "MatMulKernel")
    good = evaluated(folder, "mms.cu", "MatMulKernel", (DATA / "matmul_struct_good.cu").read_text())
    assert good.returncode == 0 and "verified" in good.stdout
    bad = evaluated(folder, "mms.cu", "MatMulKernel", (DATA / "matmul_struct_width_for_stride.cu").read_text())
    assert bad.returncode == 1 and "C.elements" in bad.stdout
