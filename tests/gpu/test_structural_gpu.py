"""The built-in structural rewrite (one warp per row) verified against naive row kernels on the
GPU, through the evaluator as a search calls it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator import evaluate

from ..search_helpers import context
from ..test_structural import ROW_KERNELS
from fsr_lsp.search.generators.structural import structural_proposals

from .conftest import QUICK

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).parent.parent.parent


@pytest.mark.parametrize("path, name", ROW_KERNELS)
def test_the_warp_per_row_rewrite_is_verified_and_faster(evaluator, path, name):
    text = (ROOT / path).read_text()
    ctx = context(text, name)
    (p,) = structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
    r = evaluate(evaluator, text, name, p.source, QUICK)
    print(f"\n[structural] {path}: {r.status}: {r.message[:200]}")
    assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
    assert r.speedup is not None and r.speedup > 1.5
