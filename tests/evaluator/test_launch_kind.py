"""Which kernels need a cooperative launch, read from their code, and the binaries prepare marks."""

from pathlib import Path

import pytest

from fsr_lsp.evaluator.job.launch_kind import needs_cooperative_launch
from fsr_lsp.evaluator.job.prepare import EvalOptions, prepare

GRID_SYNC = (Path(__file__).parent.parent / "gpu" / "kernels" / "grid_sync.cu").read_text()
HELPERS = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ void phase(float* y) { cg::this_grid().sync(); }
__device__ float* through(float* y) { phase(y); return y; }
template <int B> __global__ void via_helpers(float* y) { through(y)[0] = B; }
__global__ void plain(float* y) { y[0] = 2; }
__global__ void block_only(float* y) { cg::this_thread_block().sync(); y[0] = 3; }
__global__ void rank_only(float* y) { unsigned g = cg::this_grid().thread_rank(); y[g] = 1; }
__global__ void named_rank(float* y) { auto grid = cg::this_grid(); y[grid.thread_rank()] = 1; }
__global__ void named_sync(float* y) { cg::grid_group grid = cg::this_grid(); y[0] = 1; grid.sync(); }
__global__ void free_sync(float* y) { auto g = cooperative_groups::this_grid(); y[0] = 1; cg::sync(g); }
__device__ void wait_on(const cg::grid_group& g) { g.sync(); }
__global__ void passed_on(float* y) { auto all = cg::this_grid(); y[0] = 1; wait_on(all); }
__global__ void split(float* y) { auto g = cg::this_grid(); auto t = g.barrier_arrive(); g.barrier_wait(std::move(t)); }
__global__ void free_sync_of_call(float* y) { y[0] = 1; cg::sync(cg::this_grid()); }
template <class G> __device__ void bar(G& g) { g.sync(); }
__global__ void through_template(float* y) { auto grid = cg::this_grid(); y[0] = 1; bar(grid); }
__global__ void constructed(float* y) { cg::grid_group g(cg::this_grid()); y[0] = 1; g.sync(); }
__global__ void rank_and_size(float* y) { y[cg::this_grid().thread_rank()] = cg::this_grid().size(); }
"""


@pytest.mark.parametrize("kernel, needed", [
    ("via_helpers", True), ("plain", False), ("block_only", False),
    # a grid group asked only for its rank launches plainly: cooperatively, a grid larger than the
    # GPU holds at once fails where the program's own launch ran
    ("rank_only", False), ("named_rank", True),
    ("named_sync", True), ("free_sync", True), ("passed_on", True), ("split", True),
    # what fsr cannot follow is taken for a sync: a grid sync in a plain launch traps
    ("free_sync_of_call", True), ("through_template", True), ("constructed", True), ("rank_and_size", False)])
def test_a_grid_sync_anywhere_in_what_the_kernel_calls_needs_a_cooperative_launch(kernel, needed):
    assert needs_cooperative_launch(HELPERS, kernel) is needed


@pytest.mark.nvcc
def test_prepare_marks_the_binaries_that_sync_their_grid(tmp_path, monkeypatch):
    monkeypatch.setenv("FSR_CACHE_DIR", str(tmp_path))
    prepared = prepare(GRID_SYNC, "grid_sum", None, "sm_90a", EvalOptions(compiler="nvcc"))
    assert prepared.job is not None and prepared.job.original.cooperative, prepared.result
    no_sync = GRID_SYNC[GRID_SYNC.index("__global__"):].replace("grid.sync();", "").replace(
        "cg::grid_group grid = cg::this_grid();", "")
    rewritten = prepare(GRID_SYNC, "grid_sum", no_sync, "sm_90a", EvalOptions(compiler="nvcc"))
    assert rewritten.job is not None, rewritten.result.message if rewritten.result else ""
    assert rewritten.job.original.cooperative and not rewritten.job.candidate.cooperative
