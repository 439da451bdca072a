"""Drafts follow the launch's own argument and the Warning agrees with the quick fix (issue 61,
item 7): a launcher called through a dispatcher with `d_out` while main's host `out` has the
parameter's name; a buffer normalised in place is not "accumulating"; a kernel with a draft
says so on its Warning."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.drafting.writes import pointer_access
from fsr_lsp.kernels import discover
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText
from fsr_lsp.workflows.optimize import plan_spec

PROGRAM = """#include <cuda_runtime.h>
#include <stdlib.h>

__global__ void scale_kernel(float* out, const float* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = 2.0f * inp[i];
}

void scale1(float* out, const float* inp, int N, const int block_size) {
    const int grid_size = (N + block_size - 1) / block_size;
    scale_kernel<<<grid_size, block_size>>>(out, inp, N);
}

void scale(int kernel_num, float* out, const float* inp, int B, int T, int C, int block_size) {
    switch (kernel_num) {
        case 1: scale1(out, inp, B * T * C, block_size); break;
        default: exit(1);
    }
}

int main(int argc, const char** argv) {
    int B = 8, T = 1024, C = 768;
    float* out = (float*)malloc(B * T * C * sizeof(float) / 2);
    float* inp = (float*)malloc(B * T * C * sizeof(float));
    float* d_out;
    float* d_inp;
    cudaMalloc(&d_out, B * T * C * sizeof(float));
    cudaMalloc(&d_inp, B * T * C * sizeof(float));
    scale(1, d_out, d_inp, B, T, C, 128);
    return 0;
}
"""
SOFTMAX = """__global__ void softmax_rows(float* out, const float* inp, int N, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        const float* inp_row = inp + i * C;
        float* out_row = out + i * C;
        float maxval = -1e30f;
        for (int j = 0; j < C; j++) if (inp_row[j] > maxval) maxval = inp_row[j];
        float sum = 0.0f;
        for (int j = 0; j < C; j++) { out_row[j] = expf(inp_row[j] - maxval); sum += out_row[j]; }
        for (int j = 0; j < C; j++) out_row[j] /= sum;
    }
}
__global__ void hist(const int* keys, int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bins[keys[i]] += 1;
}
__global__ void sum_rows(const float* m, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    for (int c = 0; r < rows && c < cols; ++c) out[r] += m[r * cols + c];
}
"""


def test_the_length_comes_from_the_allocation_the_launch_passes_through_its_callers(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "scale.cu").write_text(PROGRAM)
    (kernel,) = discover(SourceText(PROGRAM)).kernels
    plan = plan_spec(LaunchIndex(tmp_path, first_wait=None), tmp_path / "scale.cu", PROGRAM, kernel, Settings())
    assert plan.spec.provenance["out"] == "cudaMalloc of `d_out`", plan.spec.provenance
    assert 'out = "out[B * T * C]"' in plan.draft


def test_accumulates_only_where_a_start_value_is_read():
    src = SourceText(SOFTMAX)
    access = {k.name: pointer_access(src, k) for k in discover(src).kernels}
    assert not access["softmax_rows"]["out"].accumulates  # written, then normalised in place
    assert access["hist"]["bins"].accumulates
    assert access["sum_rows"]["out"].accumulates  # += with no store before it: the start value counts


def test_the_kernels_warning_names_the_draft_its_quick_fix_offers(tmp_path: Path):
    from fsr_lsp.drafting.origin import KernelSpec
    from fsr_lsp.server.diagnostics import lsp_range
    from fsr_lsp.server.document_cache import Drafted, DocumentState
    from fsr_lsp.server.features.documents import with_drafts_said

    state = DocumentState("file:///k.cu", 1, PROGRAM)
    (kernel,) = discover(state.src).kernels
    at = lsp_range(state.src, kernel.name_span, "utf-16")
    warning = types.Diagnostic(range=at, message="scale_kernel has no @fsr spec and one cannot be inferred: ...",
                               code="spec-missing", severity=types.DiagnosticSeverity.Warning)
    key = (kernel.name, state.src.slice(kernel.definition_span.start_byte, kernel.definition_span.end_byte))
    state.specs.drafted[key] = Drafted(KernelSpec("k.cu", kernel.name, 4, "drafted", "/* @fsr */", launch="k.cu:11"),
                                       1, 0, 0.0)
    (said,) = with_drafts_said([warning], state, [kernel], "utf-16")
    assert said.message == ("scale_kernel has no @fsr spec; one is drafted from the launch at k.cu:11: the quick fix "
                            "\"Draft @fsr spec for `scale_kernel` from the launch at k.cu:11\" inserts it (Optimize "
                            "proves it first)")
