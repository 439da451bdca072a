"""The accuracy criterion with real CUDA kernels: reorderings of float reductions (warp
shuffles, a block tree, Kahan, rsqrtf, fast exp, an online softmax) verified against naive
originals; answers off by one element, one row or a tenth of a percent refused. Each candidate
in tests/gpu/kernels/accuracy/<kernel>/ is named good_* or bad_*."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator import evaluate

from .conftest import QUICK

pytestmark = pytest.mark.gpu
HERE = Path(__file__).parent / "kernels" / "accuracy"
CASES = sorted((p.parent.name, p.name) for p in HERE.glob("*/*.cu"))


@pytest.mark.parametrize("kernel, candidate", CASES)
def test_accuracy_against_the_original_in_double_precision(evaluator, kernel, candidate):
    source = (HERE / f"{kernel}.cu").read_text()
    r = evaluate(evaluator, source, kernel, (HERE / kernel / candidate).read_text(), QUICK)
    checks = [(c.name, c.status, c.detail) for c in r.checks]
    accuracy = next((c.detail for c in r.checks if c.name == "accuracy"), "")
    print(f"\n[accuracy] {kernel}/{candidate}: {r.status}: {r.message[:300]} | {accuracy[:400]}")
    if candidate.startswith("good_"):
        assert r.status == "verified", (r.message, checks, r.warnings)
        assert "double precision" in accuracy, (accuracy, r.warnings)
    else:
        assert r.status == "wrong", (r.message, checks)
        failed = next(c.name for c in r.checks if c.status == "fail")
        assert failed in ("accuracy", "matches original", "every output written"), checks


def test_the_original_alone_reports_its_own_error(evaluator):
    source = (HERE / "softmax.cu").read_text()
    r = evaluate(evaluator, source, "softmax", None, QUICK)
    assert r.status == "verified", r.message
    detail = next(c.detail for c in r.checks if c.name == "accuracy")
    assert "the original's worst error against its double-precision run" in detail
    print(f"\n[accuracy] softmax original: {detail}")
