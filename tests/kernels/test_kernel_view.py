"""A large text's kernel is drafted from its view (kernels/kernel_view.py): every line in place,
other kernels' and unrelated host code's bodies emptied, and the spec the same as the whole
text's, for each kernel of the spec corpus concatenated past VIEW_BYTES."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fsr_lsp.drafting.resolver import workspace_spec
from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.kernels import discover_kernels, find_kernel, kernel_view
from fsr_lsp.kernels.kernel_view import VIEW_BYTES
from fsr_lsp.source import SourceText

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "bench" / "spec_corpus").glob("*.cu")) + sorted((ROOT / "examples").glob("*.cu"))

FILLER_KERNEL = """__global__ void filler_{i}(float* y, const float* x, int n)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = {i}.0f * x[i] + 1.0f;
}}
"""
BIG_HOST = "void unrelated_host(float* p)\n{\n" + "".join(f"    p[{i}] = {i};\n" for i in range(400)) + "}\n"
LAUNCHED_THROUGH_CALLERS = """typedef float real;
#define BLOCK 128

int blocks_for(int n) { return (n + BLOCK - 1) / BLOCK; }

__global__ void deep_scale(real* y, const real* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3 * x[i];
}

void launch_deep(real* y, const real* x, int n)
{
    deep_scale<<<blocks_for(n), BLOCK>>>(y, x, n);
}

void run_deep(int n)
{
    real *x, *y;
    cudaMalloc(&x, n * sizeof(real));
    cudaMalloc(&y, n * sizeof(real));
    launch_deep(y, x, n);
}

int main()
{
    run_deep(1 << 20);
    return 0;
}
"""


def large(*parts: str, past: int = VIEW_BYTES) -> str:
    """`parts` with filler kernels and an unrelated host function after them, past `past` bytes."""
    text, i = "\n".join(parts) + "\n" + BIG_HOST, 0
    filler = []
    while len(text) + sum(map(len, filler)) <= past + 4096:
        filler.append(FILLER_KERNEL.format(i=i))
        i += 1
    return text + "".join(filler)


def fields(spec) -> dict:
    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}


def both_ways(monkeypatch, tmp_path: Path, text: str, names: list[str]):
    """Each kernel's spec from its view and from the whole text (one launch index: the
    workspace is read once)."""
    path = tmp_path / "large.cu"
    path.write_text(text)
    index = LaunchIndex(tmp_path)
    for name in names:
        kernel = find_kernel(text, name)
        seen = workspace_spec(index, path, text, kernel, {path: text})
        with monkeypatch.context() as m:
            m.setattr(kernel_view, "VIEW_BYTES", 1 << 62)
            whole = workspace_spec(index, path, text, kernel, {path: text})
        yield name, seen, whole


def test_a_view_keeps_every_line_in_place_and_empties_what_the_draft_does_not_read():
    text = large(LAUNCHED_THROUGH_CALLERS)
    kernel = find_kernel(text, "deep_scale")
    view = kernel_view.kernel_view(text, kernel)
    lines, seen = text.split("\n"), view.text.split("\n")
    assert len(seen) == len(lines)
    assert all(v in ("", w) for v, w in zip(seen, lines))  # a line is kept as it is, or emptied
    assert len(view.text) < len(text) / 2
    assert LAUNCHED_THROUGH_CALLERS in view.text  # its callers, the helper, the types
    assert "void filler_3(" in view.text and "3.0f * x[i]" not in view.text  # a kernel's head and braces, no body
    assert "void unrelated_host(" in view.text and "p[17] = 17;" not in view.text
    assert view.kernel.name == "deep_scale"
    at = view.kernel.definition_span
    assert SourceText(view.text).slice(at.start_byte, at.end_byte) == SourceText(text).slice(
        kernel.definition_span.start_byte, kernel.definition_span.end_byte)


def test_a_small_text_is_its_own_view():
    kernel = find_kernel(LAUNCHED_THROUGH_CALLERS, "deep_scale")
    assert kernel_view.kernel_view(LAUNCHED_THROUGH_CALLERS, kernel).text is LAUNCHED_THROUGH_CALLERS


def test_a_chunk_the_cut_cannot_read_is_kept_whole():
    """Two heads in `#if` branches: the braces of the chunk do not balance, nothing of it is emptied."""
    odd = """#ifdef WIDE
__global__ void odd_kernel(double* y, int n) {
#else
__global__ void odd_kernel(float* y, int n) {
#endif
    y[threadIdx.x] = n;
}
"""
    text = large(LAUNCHED_THROUGH_CALLERS, odd)
    view = kernel_view.kernel_view(text, find_kernel(text, "deep_scale"))
    assert odd in view.text


def test_a_kernel_launched_through_callers_is_drafted_the_same_from_its_view(monkeypatch, tmp_path):
    ((_, seen, whole),) = both_ways(monkeypatch, tmp_path, large(LAUNCHED_THROUGH_CALLERS), ["deep_scale"])
    assert whole.origin == "drafted" and 'grid = "((n + 128 - 1) / 128)"' in whole.spec  # the helper read
    assert "launch at large.cu:14 in launch_deep(), called at line 22 (from line 27)" in whole.spec
    assert fields(seen) == fields(whole)


def test_every_kernel_of_the_spec_corpus_is_drafted_the_same_from_its_view(monkeypatch, tmp_path):
    """The corpus's files concatenated, with the filler past VIEW_BYTES: each kernel's spec from
    its view is the whole text's, field by field (drafted, inferred or none, with its why). Read
    as views from a lower size than VIEW_BYTES: the cut is the same, the drafts quicker."""
    monkeypatch.setattr(kernel_view, "VIEW_BYTES", 200 << 10)
    text = large(*(p.read_text() for p in CORPUS), past=300 << 10)
    names = list(dict.fromkeys(k.name for p in CORPUS for k in discover_kernels(SourceText(p.read_text()))))
    assert len(names) > 60
    origins = set()
    for name, seen, whole in both_ways(monkeypatch, tmp_path, text, names):
        assert fields(seen) == fields(whole), name
        origins.add(whole.origin)
    assert {"drafted", "none"} <= origins


def test_a_launcher_the_cut_cannot_read_makes_the_whole_text_the_view():
    """A `}` at the start of a line inside the launcher: its callers cannot be followed, and a
    view without them could draft less than the whole text does."""
    odd_launcher = LAUNCHED_THROUGH_CALLERS.replace(
        "    deep_scale<<<blocks_for(n), BLOCK>>>(y, x, n);\n",
        "    if (n > 0) {\n    deep_scale<<<blocks_for(n), BLOCK>>>(y, x, n);\n}\n")
    text = large(odd_launcher)
    assert kernel_view.kernel_view(text, find_kernel(text, "deep_scale")).text is text
