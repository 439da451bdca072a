"""A large document's kernels come back from their own process in pieces (each unpickled on
its own, the GIL let go between them: 758 kernels at once held it for 68 ms on the server's
thread), and the pieces make up what the document's discovery is."""

from __future__ import annotations

from fsr_lsp.kernels import discover
from fsr_lsp.server.diagnostics import spec_diagnostics
from fsr_lsp.server.large_documents import PIECE, LargeDocuments
from fsr_lsp.source import SourceText

KERNEL = """/* @fsr
bench = {{ n = 1000 }}
grid = "cdiv(n, 128)"
block = 128
[args]
y = "out[n]"
x = "in[n]"
n = "n"
{extra}*/
__global__ void scale_{i}(float* y, const float* x, int n)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = {i}.0f * x[i];
}}
"""


def test_a_large_documents_discovery_comes_in_pieces_and_is_the_whole():
    # every third block has a key fsr does not know: a diagnostic each, so those come in pieces too
    text = "".join(KERNEL.format(i=i, extra="colour = 3\n" if i % 3 == 0 else "") for i in range(3 * PIECE + 5))
    text += "/* @fsr\nbench = { n = 1 }\n*/\nint not_a_kernel;\n"  # an orphan block
    large = LargeDocuments()
    try:
        found, diagnostics = large.discovery("big.cu", text, "utf-16").result(timeout=120)
    finally:
        large.shutdown()
    src = SourceText(text)
    whole = discover(src)
    assert [k.name for k in found.kernels] == [k.name for k in whole.kernels] and len(found.kernels) == 3 * PIECE + 5
    assert found.kernels == whole.kernels and found.orphan_specs == whole.orphan_specs and found.orphan_specs
    assert diagnostics == spec_diagnostics(src, whole.kernels, "utf-16") and len(diagnostics) > PIECE
    assert large.pieces_received >= 4 + 1 + 2  # the kernels in 4 pieces, the orphans, the diagnostics in 2 or more


ONLY_WITH_A_FLAG = """#ifdef USE_DOUBLE
typedef double real;
#endif
__global__ void scale_real(real* y, const real* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2 * x[i];
}

int main()
{
    const int n = 1024;
    real *x, *y;
    cudaMalloc(&x, n * sizeof(real));
    cudaMalloc(&y, n * sizeof(real));
    scale_real<<<(n + 255) / 256, 256>>>(y, x, n);
    return 0;
}
"""


def test_a_large_documents_draft_is_typed_with_the_settings_compiler_flags(tmp_path):
    """As a small document's is (the hover's draft): `real` is a type only with the -D the
    settings give, and without it there is no draft."""
    from fsr_lsp.kernels import find_kernel

    path = tmp_path / "big.cu"
    path.write_text(ONLY_WITH_A_FLAG)
    kernel = find_kernel(ONLY_WITH_A_FLAG, "scale_real")
    large = LargeDocuments()
    try:
        def draft(flags: tuple[str, ...]):
            return large.spec((path.as_uri(), 1), tmp_path, path, ONLY_WITH_A_FLAG, kernel,
                              {path: ONLY_WITH_A_FLAG}, (), flags).result(timeout=120)

        assert draft(()).origin == "none"
        flagged = draft(("-DUSE_DOUBLE",))
    finally:
        large.shutdown()
    assert flagged.origin == "drafted" and 'y = "out[n]"' in flagged.spec


def test_a_large_documents_draft_does_not_wait_for_its_discovery(tmp_path, monkeypatch):
    """Its kernels (the diagnostics) take seconds on a 10 MB file; a hover's draft is made in a
    process of its own meanwhile."""
    import time

    from fsr_lsp.kernels import find_kernel

    monkeypatch.setenv("FSR_TEST_PROBE_LOG", str(tmp_path / "probe.jsonl"))
    monkeypatch.setenv("FSR_TEST_SLOW_WHOLE", "30")
    path = tmp_path / "big.cu"
    path.write_text(ONLY_WITH_A_FLAG)
    kernel = find_kernel(ONLY_WITH_A_FLAG, "scale_real")
    large = LargeDocuments(probe="tests.support.cache_probe:probe")
    try:
        whole = large.discovery("big.cu", ONLY_WITH_A_FLAG, "utf-16")
        started = time.monotonic()
        spec = large.spec((path.as_uri(), 1), tmp_path, path, ONLY_WITH_A_FLAG, kernel, {path: ONLY_WITH_A_FLAG},
                          (), ("-DUSE_DOUBLE",)).result(timeout=60)
        assert time.monotonic() - started < 20 and not whole.done()
    finally:
        large.shutdown()
    assert spec.origin == "drafted"
