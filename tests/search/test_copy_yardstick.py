"""A data-movement winner is reported against the copy the worker measured on the GPU ("94% of a
copy"); a kernel that computes far below the copy's bandwidth is not."""

from __future__ import annotations

import dataclasses

from fsr_lsp.evaluator.records import ArgPlan, EvalResult, LaunchPlan, SizePlan, TimingStats
from fsr_lsp.search.proposal import Proposal, Tried
from fsr_lsp.search.verdict import _of_a_copy

from ..support.search_helpers import GPU

LAUNCH = LaunchPlan((1, 1, 1), (1, 1, 1))
PLAN = SizePlan("n", "bench", {"n": 1 << 26}, [ArgPlan("x", "buffer", "float32", length=1 << 26, direction="in"),
                                               ArgPlan("y", "buffer", "float32", length=1 << 26, direction="out")],
                LAUNCH, LAUNCH)


def tried(ms: float) -> Tried:
    t = TimingStats(ms, ms, ms, ms, ms, 10)
    return Tried(Proposal("k", "builtin:x"), EvalResult(kernel="k", status="verified", message="", candidate_time=t))


def test_a_transpose_near_the_copy_limit_says_how_near():
    # 512 MiB moved in 0.19 ms on a GPU whose copy moves 3000 GB/s
    gpu = dataclasses.replace(GPU, bandwidth_gbps=3000.0)
    text = _of_a_copy(tried(0.19), PLAN, gpu)
    assert text == "; it moves 2826 GB/s, 94% of a copy on this GPU", text


def test_a_kernel_that_computes_and_a_gpu_without_a_measured_copy_say_nothing():
    gpu = dataclasses.replace(GPU, bandwidth_gbps=3000.0)
    assert _of_a_copy(tried(50.0), PLAN, gpu) == ""  # 11 GB/s: a matrix product, say
    assert _of_a_copy(tried(0.19), PLAN, dataclasses.replace(GPU, bandwidth_gbps=0.0)) == ""
