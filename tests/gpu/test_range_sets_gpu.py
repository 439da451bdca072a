"""'Verified' beyond the inputs of one run (issue 43), with real CUDA kernels: the cases of
tests/evaluator/test_range_sets_on_cpu.py on a GPU. Rewrites that drop a numerically necessary step (a
softmax or log-sum-exp without its max, E[x^2] - mean^2, tanh and sigmoid from exp(x), a long
sum kept in half precision) are refused, on the set that probes the range where the spec's own
noise cannot tell; their correct counterparts are verified."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator import evaluate

from ..evaluator.test_range_sets_on_cpu import REFUSED_ON, original
from .conftest import QUICK

pytestmark = pytest.mark.gpu
HERE = Path(__file__).parent / "kernels" / "ranges"
CASES = sorted((p.parent.name, p.name) for p in HERE.glob("*/*.cu"))


@pytest.mark.parametrize("kernel, candidate", CASES)
def test_range_sets_on_the_gpu(evaluator, kernel, candidate):
    source = original(kernel)
    r = evaluate(evaluator, source, kernel, (HERE / kernel / candidate).read_text(), QUICK)
    checks = {c.name: (c.status, c.detail) for c in r.checks}
    print(f"\n[ranges] {kernel}/{candidate}: {r.status}: {r.message[:240]} | {checks.get('input range')}")
    if candidate.startswith("good_"):
        assert r.status == "verified", (r.message, checks, r.warnings)
        assert "x100" in r.range_sets, r.range_sets
        return
    assert r.status == "wrong", (r.message, checks)
    where, what = REFUSED_ON[(kernel, candidate)]
    if where:
        assert r.message.startswith(f"wrong on {where}") and what in r.message, r.message
