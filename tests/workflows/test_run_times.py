"""The capture's own kernel times (issue 58, item 2): each captured launch's GPU time in the
user's run reaches the captured spec, and fsr's timing of the original is held against it."""

from __future__ import annotations

from pathlib import Path

from fsr_lsp.evaluator.records import EvalResult, TimingStats
from fsr_lsp.kernels import discover
from fsr_lsp.search.outcome import SearchOutcome
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText
from fsr_lsp.workflows.optimize import plan_spec
from fsr_lsp.workflows.program_times import against_the_run as _against_the_run
from fsr_lsp.drafting.workspace import LaunchIndex

from ..capture.test_capture import KERNELS
from ..support.captures import scale_launch, write_capture


def captured_plan(root: Path, median_ns: int | None):
    records = [scale_launch(4096)]
    if median_ns is not None:
        records.append({"time": 0, "n": 5, "median_ns": median_ns, "min_ns": median_ns - 10})
    write_capture(root, records)
    (root / "k.cu").write_text(KERNELS)
    kernel = next(k for k in discover(SourceText(KERNELS)).kernels if k.name == "scale")
    return plan_spec(LaunchIndex(root, first_wait=None), root / "k.cu", KERNELS, kernel, Settings())


def outcome(original_ms: float) -> SearchOutcome:
    timing = TimingStats(original_ms, original_ms, original_ms, original_ms, original_ms, 20)
    return SearchOutcome("improved", "2.0x", baseline=EvalResult("scale", "verified", "", original_time=timing))


def test_a_captured_spec_carries_its_launchs_time_in_the_run(tmp_path):
    plan = captured_plan(tmp_path, 33_300_000)
    assert plan.spec.origin == "captured" and plan.spec.captured_ms == 33.3 and plan.spec.captured_timed == 5
    assert plan.spec.as_json()["captured_ms"] == 33.3


def test_fsrs_timing_far_from_the_runs_is_said_with_its_likely_causes(tmp_path):
    spec = captured_plan(tmp_path, 33_300_000).spec
    apart = outcome(87.5)
    _against_the_run(apart, spec)
    (note,) = apart.notes
    assert "fsr times the original at 87.5 ms" in note and "it took 33.3 ms" in note and "2.63x apart" in note
    assert all(cause in note for cause in ("flags", "inputs", "other work on the GPU", "clocks"))
    near = outcome(36.0)
    _against_the_run(near, spec)
    assert near.notes == ["fsr times the original at 36 ms; in your run (5 launches at these sizes) it took 33.3 ms: "
                          "they agree within 8%"]


def test_a_launch_of_a_few_microseconds_timed_by_events_names_their_launch_work_first(tmp_path):
    """A public reduction ran 2.4 µs a launch in its program and 4.9 µs in fsr's timing by events:
    the gap is the events' and the launch's own work, not flags, inputs or clocks. Timed by the
    kernel clock (the run's own), that cause is not the one."""
    spec = captured_plan(tmp_path, 2_400).spec
    slow = outcome(0.0049)
    slow.baseline.clock = "events: no kernel clock (CUPTI not found)"
    _against_the_run(slow, spec)
    (note,) = slow.notes
    assert "Likely causes: a launch this short (2.4 µs in your run)" in note and "launch work" in note
    clocked = outcome(0.0049)
    clocked.baseline.clock = "kernel"
    _against_the_run(clocked, spec)
    assert "2.04x apart" in clocked.notes[0] and "launch this short" not in clocked.notes[0]
    (tmp_path / "long").mkdir()
    long = captured_plan(tmp_path / "long", 33_300_000).spec
    apart = outcome(87.5)
    _against_the_run(apart, long)
    assert "launch this short" not in apart.notes[0]


def test_no_time_in_the_run_says_nothing(tmp_path):
    spec = captured_plan(tmp_path, None).spec
    assert spec.captured_ms == 0 and "captured_ms" not in spec.as_json()
    plain = outcome(87.5)
    _against_the_run(plain, spec)
    assert plain.notes == []


def test_the_cache_is_named_only_where_the_warm_timing_closes_the_gap(tmp_path):
    from fsr_lsp.evaluator.records import GpuInfo

    spec = captured_plan(tmp_path, 400_000).spec
    assert spec.captured_bytes == 2 * 4 * 4096  # y and x, 16 KiB each
    h100 = GpuInfo(0, "NVIDIA H100", "9.0", 132, 50 << 20, 80 << 30)
    cached = outcome(0.61)
    cached.baseline.gpu = h100
    asked = []
    _against_the_run(cached, spec, warm=lambda: asked.append(1) or (0.41, 0.2))
    assert asked == [1]
    assert ("The cache: its 0.0312 MiB fit the GPU's 50 MiB L2, and timed warm (L2 kept, as your program's launches "
            "find it) fsr gets 0.41 ms, 1.02x your run's; the rewrite warm: 0.2 ms, 2.05x") in cached.notes[0]
    inputs = outcome(0.61)
    inputs.baseline.gpu = h100
    _against_the_run(inputs, spec, warm=lambda: (0.6, None))
    assert "Not the cache: timed warm as well, fsr gets 0.6 ms. Likely causes: flags" in inputs.notes[0]
    agreeing = outcome(0.41)
    _against_the_run(agreeing, spec, warm=lambda: asked.append(2) or (0.4, 0.2))
    assert asked == [1]  # agreeing cold: nothing more is timed


def test_the_plan_says_what_follows_the_proof(tmp_path):
    """`fsr eval` and Profile say what they do next, not "then searching" (issue 61, item 8)."""
    write_capture(tmp_path, [scale_launch(4096)])
    (tmp_path / "k.cu").write_text(KERNELS)
    kernel = next(k for k in discover(SourceText(KERNELS)).kernels if k.name == "scale")
    for then in ("searching", "evaluating", "profiling"):
        plan = plan_spec(LaunchIndex(tmp_path, first_wait=None), tmp_path / "k.cu", KERNELS, kernel, Settings(),
                         then=then)
        assert plan.message.endswith(f"proving it on the GPU with the original kernel, then {then}"), plan.message
