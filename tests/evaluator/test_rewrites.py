"""Rewrites shaped like model output (helpers and #defines above the kernel, the @fsr block
above the helpers or below the kernel, pragmas before unbraced bodies, float4 casts,
__launch_bounds__, templates instantiated through the spec, cooperative groups, warp shuffles,
inline PTX): each is read as written, keeps the launch its block gives, and compiles in the
original file. tests/gpu/test_rewrites_gpu.py verifies each on the GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator import EvalOptions, prepare
from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.kernels import discover, find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

REWRITES = Path(__file__).parent.parent / "data" / "rewrites"
CASES = sorted((p.parent.name, p.name) for p in REWRITES.glob("*/*.cu"))


def load(original: str, rewrite: str) -> tuple[str, str]:
    return (REWRITES / f"{original}.cu").read_text(), (REWRITES / original / rewrite).read_text()


@pytest.mark.parametrize("original, rewrite", CASES)
def test_each_rewrite_is_read_as_written(original, rewrite):
    source, text = load(original, rewrite)
    src = SourceText(source)
    kernel = find_kernel(src, original)
    spec = parse_spec(src, kernel).spec
    vetted = check_candidate(src, kernel, spec, text)
    assert vetted.ok, vetted.reason
    assert vetted.kernel.complete
    found = discover(text)
    blocks = [o.comment for o in found.orphan_specs] + [k.spec for k in found.kernels if k.spec]
    if blocks:  # the rewrite's own launch, wherever its block stands
        own = parse_spec(SourceText(text), vetted.kernel).spec
        assert (vetted.spec.grid, vetted.spec.block, vetted.spec.smem) == (own.grid, own.block, own.smem)
        assert vetted.launch_changed
    else:
        assert (vetted.spec.grid, vetted.spec.block) == (spec.grid, spec.block)
    spliced = vetted.source[kernel.definition_span.start_byte:]  # the rewrite, in place of the definition
    assert "@fsr" not in spliced


@pytest.mark.nvcc
@pytest.mark.parametrize("original, rewrite", CASES)
def test_each_rewrite_compiles_in_the_original_file(original, rewrite, cache_dir):
    source, text = load(original, rewrite)
    prepared = prepare(source, original, text, "sm_90a", EvalOptions(cache_dir=cache_dir, compiler="nvcc"))
    assert prepared.job is not None, prepared.result.message
    assert prepared.job.candidate is not None
