"""The built-in vector-map rewrite (four elements a thread through float4, eight __half or
__nv_bfloat16 through uint4, a scalar path for
unaligned pointers) verified against the naive GELU and a SAXPY on the GPU, through the evaluator
as a search calls it; and with the caller's pointer one element into its buffer, so that the
scalar path is the one that runs."""

from __future__ import annotations

import pytest

from fsr_lsp.evaluator import evaluate
from fsr_lsp.search.generators.structural import structural_proposals

from ..support.search_helpers import context
from ..search.test_structural_vector_map import GELU, MAPS

from .conftest import QUICK

pytestmark = pytest.mark.gpu


def _vector_map(text: str, name: str):
    ctx = context(text, name)
    (p,) = [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
            if q.generator == "builtin:vector-map"]
    return p


@pytest.mark.parametrize("text, name", [(GELU.read_text(), "gelu_forward"), MAPS["saxpy"],
                                        MAPS["vector add, an early return"],
                                        MAPS["int buffers, an output written under a condition"],
                                        MAPS["GELU over __half"], MAPS["GELU over __nv_bfloat16 through a typedef"]])
def test_the_vector_map_rewrite_is_verified(evaluator, text, name):
    p = _vector_map(text, name)
    r = evaluate(evaluator, text, name, p.source, QUICK)
    print(f"\n[structural] {name} vector map: {r.status}: {r.message[:200]}")
    if name in ("gelu_half", "gelu_bf16"):  # eight 16-bit elements a 128-bit access: fewer, wider accesses
        assert r.status != "verified" or (r.speedup or 0) > 1.0, r.message
    assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])


def test_a_pointer_one_element_into_its_buffer_takes_the_scalar_path_and_is_verified(evaluator):
    """`inp` is passed as `buffer + 1` (4 bytes past a 16-byte boundary): a float4 load there
    would fault or read the wrong elements; the rewrite's alignment check sends every element
    the scalar way, and the result is the original's."""
    text = GELU.read_text().replace('inp = "in[N] normal(0, 3)"', 'inp = "in[-1 : N] normal(0, 3)"')
    assert "in[-1 : N]" in text
    ctx = context(text, "gelu_forward")
    assert ctx.spec.arg("inp").start == "-1"
    p = _vector_map(text, "gelu_forward")
    r = evaluate(evaluator, text, "gelu_forward", p.source, QUICK)
    print(f"\n[structural] gelu_forward, inp offset by one element: {r.status}: {r.message[:200]}")
    assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])


def test_a_vector_path_without_its_alignment_check_is_caught_on_an_offset_pointer(evaluator):
    """The defence behind the check: with it removed, the offset input's float4 loads are
    misaligned (a fault) or, rounded down, read the wrong elements: not verified."""
    text = GELU.read_text().replace('inp = "in[N] normal(0, 3)"', 'inp = "in[-1 : N] normal(0, 3)"')
    p = _vector_map(text, "gelu_forward")
    broken = p.source.replace("if (!aligned) {", "if (false) {")
    assert broken != p.source
    r = evaluate(evaluator, text, "gelu_forward", broken, QUICK)
    print(f"\n[structural] gelu_forward without the alignment check: {r.status}: {r.message[:200]}")
    assert r.status != "verified", r.message
