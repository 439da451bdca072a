"""Every rewrite of the model-shaped fixture set (tests/data/rewrites) is correct: each must be
verified on the GPU, read as written, with its own launch."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator import evaluate

from .conftest import QUICK

pytestmark = pytest.mark.gpu
REWRITES = Path(__file__).parent.parent / "data" / "rewrites"
CASES = sorted((p.parent.name, p.name) for p in REWRITES.glob("*/*.cu"))


@pytest.mark.parametrize("original, rewrite", CASES)
def test_each_correct_rewrite_is_verified(evaluator, original, rewrite):
    source = (REWRITES / f"{original}.cu").read_text()
    r = evaluate(evaluator, source, original, (REWRITES / original / rewrite).read_text(), QUICK)
    assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
    print(f"\n[rewrite] {original}/{rewrite}: {r.message}")
