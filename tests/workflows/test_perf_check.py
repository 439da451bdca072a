"""Performance on save, without a GPU (tests/support/scripted_timer.py times; prepare is real): what a
search timed is stored; an edit that doubles a kernel's work is slower beyond the noise and
says by how much and since when; a comment is the same code; a faster edit says so; a kernel
with no stored timing is left alone."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fsr_lsp.evaluator.records import EvalResult, GpuInfo
from fsr_lsp.profiling.timings import Timings
from fsr_lsp.search import SearchOutcome
from fsr_lsp.search.proposal import Proposal, Tried
from fsr_lsp.settings import Settings
from fsr_lsp.instruments import STAND_IN_GPU
from fsr_lsp.workflows.perf_check import check_performance, record_search

from ..support.scripted_timer import time_request

from ..support.scripted_timer import timing
from ..support.search_helpers import example

pytestmark = pytest.mark.nvcc
SAXPY = example("saxpy.cu")
BODY = "    if (i < n) y[i] = a * x[i] + y[i];"
DOUBLED = SAXPY.replace(BODY, "    for (int rep = 0; rep < 2; ++rep)\n        if (i < n) y[i] = a * x[i] + y[i] * 0.5f;")
COMMENTED = SAXPY.replace(BODY, BODY + "  // y += a x")


@pytest.fixture
def workspace(tmp_path) -> Path:
    return tmp_path


def check(workspace: Path, text: str):
    return check_performance(None, text, workspace / "saxpy.cu", workspace, Settings(), threading.Event(),
                             timer=time_request)


def stored(workspace: Path, text: str = SAXPY) -> None:
    from fsr_lsp.kernels import discover_kernels, kernel_source
    from fsr_lsp.source import SourceText

    src = SourceText(text)
    (k,) = discover_kernels(src)
    with Timings(workspace) as t:
        t.record(str(workspace / "saxpy.cu"), "saxpy", text, kernel_source(src, k).definition, 0.4, STAND_IN_GPU,
                 "the original a search timed")


def test_a_kernel_without_a_stored_timing_is_left_alone(workspace):
    assert check(workspace, DOUBLED) == []


def test_doubling_the_work_is_slower_beyond_the_noise(workspace):
    stored(workspace)
    (v,) = check(workspace, DOUBLED)
    assert v.kind == "slower" and v.kernel == "saxpy"
    assert v.message.startswith("saxpy: 100% slower than at ") and "(0.4 ms -> 0.8 ms at n=16777216" in v.message
    assert "interval 1.94-2.06x the time" in v.message and "the original a search timed" in v.message
    with Timings(workspace) as t:  # the slower version is kept, but the reference stays the fastest
        assert t.fastest(str(workspace / "saxpy.cu"), "saxpy", STAND_IN_GPU).label == "the original a search timed"
    assert check(workspace, DOUBLED)[0].kind == "slower"  # it keeps saying so until fixed


def test_a_comment_is_the_same_code_and_the_same_text_is_not_timed(workspace):
    stored(workspace)
    assert check(workspace, COMMENTED) == []
    assert check(workspace, SAXPY) == []


def test_a_faster_edit_says_so(workspace):
    stored(workspace, DOUBLED)
    (v,) = check(workspace, SAXPY)
    assert v.kind == "faster" and v.message.startswith("saxpy: 50% faster than at ")


def test_an_edit_that_does_not_compile_is_left_to_the_save_diagnostics(workspace):
    stored(workspace)
    assert check(workspace, SAXPY.replace(BODY, "    if (i < n) y[i] = a * x[i] + ;")) == []


def test_a_search_stores_the_original_and_the_rewrite_it_timed(tmp_path):
    gpu = GpuInfo(0, "NVIDIA H100 80GB HBM3", "9.0", 132, 50 << 20, 80 << 30)
    baseline = EvalResult(kernel="saxpy", status="verified", message="", original_time=timing(0.6), gpu=gpu)
    rewrite = SAXPY[SAXPY.index("__global__"):].replace("const float* x", "const float* __restrict__ x")
    best = Tried(Proposal(source=rewrite, generator="tuner"),
                 EvalResult(kernel="saxpy", status="verified", message="", candidate_time=timing(0.3), gpu=gpu))
    record_search(tmp_path, tmp_path / "saxpy.cu", SAXPY, "saxpy",
                  SearchOutcome("improved", "2x", baseline=baseline, best=best))
    with Timings(tmp_path) as t:
        fastest = t.fastest(str(tmp_path / "saxpy.cu"), "saxpy", gpu.name)
    assert fastest is not None and fastest.time_ms == 0.3 and fastest.label == "the rewrite a search found"
    assert "__restrict__ x" in fastest.definition and "__restrict__ x" in fastest.source and "@fsr" in fastest.source


def test_the_wins_under_the_original_launch_are_stored_for_the_one_applied_instead_of_the_fastest(tmp_path):
    """The fastest may need a launch the program cannot take (search/applicable.py): what goes into
    the file is then a win under the original's launch, and `fsr confirm` needs its verified time too."""
    gpu = GpuInfo(0, "NVIDIA H100 80GB HBM3", "9.0", 132, 50 << 20, 80 << 30)
    baseline = EvalResult(kernel="saxpy", status="verified", message="", original_time=timing(0.6), gpu=gpu)
    body = SAXPY[SAXPY.index("__global__"):]

    def win(source: str, ms: float, status: str = "verified") -> Tried:
        return Tried(Proposal(source=source, generator="tuner"),
                     EvalResult(kernel="saxpy", status=status, message="", candidate_time=timing(ms), gpu=gpu,
                                speedup=0.6 / ms))

    fastest = win('/* @fsr\ngrid = "cdiv(n, 512)"\nblock = 512\n*/\n' + body, 0.2)
    applied = win(body.replace("const float* x", "const float* __restrict__ x"), 0.4)
    wrong = win(body.replace("a * x[i]", "x[i]"), 0.1, status="wrong")
    relaunched = win('/* @fsr\ngrid = "cdiv(n, 1024)"\nblock = 1024\n*/\n' + body, 0.3)  # neither: not kept
    record_search(tmp_path, tmp_path / "saxpy.cu", SAXPY, "saxpy",
                  SearchOutcome("improved", "3x", baseline=baseline, best=fastest,
                                tried=[fastest, relaunched, applied, wrong]))
    with Timings(tmp_path) as t:
        versions = t.versions(str(tmp_path / "saxpy.cu"), "saxpy")
    rewrites = {v.time_ms: v.definition for v in versions if v.label == "the rewrite a search found"}
    assert set(rewrites) == {0.2, 0.4}, rewrites  # the wrong one never
    assert "__restrict__ x" in rewrites[0.4]


def test_a_spec_holding_a_captured_runs_bytes_is_timed_with_them(workspace):
    """x = captured(): the workspace's latest capture gives its bytes, as Optimize would."""
    import json
    import struct

    from ..support.captures import i32, ptr, write_capture

    small = SAXPY.replace("bench = { n = 16777216 }", "bench = { n = 1024 }").replace(
        "tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]", "edge = false").replace('x = "in[n]"', 'x = "in[n] captured()"')
    assert "captured()" in small and "edge = false" in small
    record = {"id": 0, "kernel": "_Z5saxpyifPKfPf", "name": "saxpy(int, float, float const*, float*)", "base": "saxpy",
              "grid": [4, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [{"offset": 0, "size": 4, "hex": i32(1024)}, {"offset": 4, "size": 4, "hex": struct.pack("<f", 2.0).hex()},
                         ptr(4096), ptr(4096)], "snapshot": {"2": "x.bin"}}
    folder = write_capture(workspace, [record])
    (folder / "x.bin").write_bytes(struct.pack("<1024f", *range(1024)))
    stored(workspace, small)
    doubled = small.replace(BODY, "    for (int rep = 0; rep < 2; ++rep)\n        if (i < n) y[i] = a * x[i] + y[i] * 0.5f;")
    (v,) = check(workspace, doubled)
    assert v.kind == "slower", v.message  # without the bytes: "captured() needs the bytes ...", not compared
    assert json.loads((folder / "capture.json").read_text())["command"] == ["./app"]
