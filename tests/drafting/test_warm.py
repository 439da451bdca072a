"""The first draft's queries compiled when the server starts (drafting/warm.py): a kernel's
first draft afterwards compiles none of its own."""

from __future__ import annotations

from pathlib import Path

from fsr_lsp.drafting.warm import warm_drafting
from fsr_lsp.drafting.resolver import workspace_spec
from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.treesitter import _query
from fsr_lsp.source import SourceText

SCALE = """__global__ void scale(float* out, const float* in, int count)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count) out[k] = 3.0f * in[k];
}

void run(float* out, const float* in)
{
    const int count = 4096;
    scale<<<count / 128, 128>>>(out, in, count);
}
"""


def test_after_the_warm_up_a_first_draft_compiles_no_query(tmp_path: Path):
    _query.cache_clear()
    warm_drafting()
    compiled = _query.cache_info().misses
    assert compiled >= 3  # the warm-up's own draft compiled them
    path = tmp_path / "scale.cu"
    kernel = find_kernel(SourceText(SCALE), "scale")
    spec = workspace_spec(LaunchIndex(tmp_path), path, SCALE, kernel, {path: SCALE})
    assert spec.origin == "drafted" and "count = 4096" in (spec.spec or ""), spec
    assert _query.cache_info().misses == compiled


def test_the_warm_up_never_raises(monkeypatch):
    import fsr_lsp.drafting.warm as warm

    monkeypatch.setattr(warm, "workspace_spec", lambda *a, **k: 1 / 0)
    warm.warm_drafting()
