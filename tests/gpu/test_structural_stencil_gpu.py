"""The built-in stencil rewrite (the block's tile and its halo staged in shared memory) verified
against the naive 3x3 blur, a 1-D integer convolution and a guarded 1-D stencil on the GPU,
through the evaluator as a search calls it: sizes that are no multiple of the block included
(the blur's h=1 w=1 and h=3 w=50, the 1-D stencil's n=1 and n=300)."""

from __future__ import annotations

import pytest

from fsr_lsp.evaluator import evaluate
from fsr_lsp.search.generators.structural import structural_proposals

from ..support.search_helpers import context
from .conftest import QUICK

pytestmark = pytest.mark.gpu


def _stencil_cases() -> list[tuple[str, str]]:
    from ..search.test_structural_stencil import BLUR, CONVOLUTION, GUARDED, SPEC_1D

    return [(BLUR.read_text(), "blur3x3"), (CONVOLUTION, "convolution_1d"), (SPEC_1D + GUARDED, "smooth")]


def test_the_stencil_tile_rewrites_are_verified(evaluator):
    """Clamped borders (float, 2-D), a bounds check around each read (int, exact; float, the same
    additions in the same order): each rewrite verified on every test size."""
    for text, name in _stencil_cases():
        ctx = context(text, name)
        (p,) = [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
                if q.generator == "builtin:stencil-tile"]
        r = evaluate(evaluator, text, name, p.source, QUICK)
        print(f"\n[structural] {name} stencil tile: {r.status}: {r.message[:160]}")
        assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])


def test_a_tile_without_its_halo_is_caught(evaluator):
    """The defence behind the rewrite: a load that stops a row short leaves the halo below the
    block unloaded, so the block's last row reads poisoned shared memory: not verified."""
    from ..search.test_structural_stencil import BLUR

    text = BLUR.read_text()
    ctx = context(text, "blur3x3")
    (p,) = [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition) if q.generator == "builtin:stencil-tile"]
    broken = p.source.replace("t < tile_h * tile_w;", "t < tile_h * tile_w - tile_w;")
    assert broken != p.source
    r = evaluate(evaluator, text, "blur3x3", broken, QUICK)
    assert r.status != "verified", r.message
