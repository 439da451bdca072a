"""The kernel clock's choice between its spans and the events, and its library's build (the GPU
side: tests/gpu/test_kernel_clock_gpu.py)."""

from __future__ import annotations

import ctypes
import subprocess

import pytest

from fsr_lsp.evaluator.gpu.kernel_clock import SOURCE, choose_clock, clock_said, tag_of
from fsr_lsp.native import BuildError, cuda_home, cupti_library, cupti_paths

EVENTS = {"original": [0.030, 0.031, 0.029, 0.030], "candidate": [0.020, 0.021, 0.020, 0.019]}
SPANS = {"original": [0.026, 0.027, 0.025, 0.026], "candidate": [0.016, 0.017, 0.016, 0.015]}


def test_both_sides_take_the_kernels_own_stamps_where_every_run_has_one():
    times, how = choose_clock(EVENTS, SPANS)
    assert how == "kernel" and times == SPANS
    assert "CUPTI" in clock_said(how)


def test_a_run_the_clock_missed_puts_both_sides_on_their_events():
    missed = {**SPANS, "candidate": [0.016, None, 0.016, 0.015]}
    times, how = choose_clock(EVENTS, missed)
    assert times == EVENTS and how == "events: the kernel clock missed runs"
    assert clock_said(how) == "timed by CUDA events around each launch (the kernel clock missed runs)"


def test_no_clock_is_events():
    assert choose_clock(EVENTS, {}) == (EVENTS, "events")


def test_work_a_launch_hides_from_its_kernel_records_puts_both_sides_on_their_events():
    """A candidate whose kernel returns at once while a child grid does the work: its kernel
    span is tiny, its events hold the work. Timed by the spans it would read 30x faster."""
    hidden = {**SPANS, "candidate": [0.0005, 0.0005, 0.0006, 0.0005]}
    times, how = choose_clock(EVENTS, hidden)
    assert times == EVENTS and "candidate's launches did work" in how
    original_hides = {**SPANS, "original": [0.0005] * 4}
    assert choose_clock(EVENTS, original_hides)[0] == EVENTS


def test_the_launch_work_alone_is_not_hidden_work():
    """Events exceed every span by the launch's own few microseconds, a little more for one side
    (a larger grid): that stays the kernel clock."""
    uneven = {"original": [e - 0.004 for e in EVENTS["original"]], "candidate": [e - 0.0065 for e in EVENTS["candidate"]]}
    assert choose_clock(EVENTS, uneven)[1] == "kernel"


def test_a_torch_ref_keeps_its_events_and_never_decides_the_kernels_clock():
    """A torch expression's launches include copies and the allocator's work that no kernel record
    shows: on an H200 its events outgrew its kernels by far, and put the two kernels on events too."""
    with_ref = {**EVENTS, "ref": [0.140, 0.139, 0.141, 0.140]}
    times, how = choose_clock(with_ref, SPANS)
    assert how == "kernel" and times == {**SPANS, "ref": with_ref["ref"]}


def test_tags_are_distinct_and_never_zero():
    tags = {tag_of(run, contender) for run in range(100) for contender in range(3)}
    assert len(tags) == 300 and 0 not in tags


def _toolkit():
    try:
        return cupti_paths(cuda_home())
    except BuildError as e:
        pytest.skip(str(e))


def test_the_clock_library_builds_once_and_exports_its_entry_points(tmp_path):
    _toolkit()
    library = cupti_library(SOURCE, "libclock.so", "the kernel clock", cache=tmp_path)
    assert cupti_library(SOURCE, "libclock.so", "the kernel clock", cache=tmp_path) == library  # cached
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True).stdout
    for name in ("fsr_clock_open", "fsr_clock_tag", "fsr_clock_read", "fsr_clock_close"):
        assert name in symbols


def test_a_toolkit_without_cupti_is_said_and_nothing_is_built(tmp_path):
    with pytest.raises(BuildError, match="CUPTI not found"):
        cupti_library(SOURCE, "libclock.so", "the kernel clock", nvcc=str(tmp_path / "bin" / "nvcc"), cache=tmp_path)
    assert not any(tmp_path.rglob("*.so"))


def test_open_without_a_gpu_says_why_and_gives_no_clock(tmp_path):
    """Here (no driver, or no toolkit) the timing falls back to events with a one-line reason."""
    from fsr_lsp.evaluator.gpu.kernel_clock import KernelClock

    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is here: tests/gpu covers the clock")
    except OSError:
        pass
    clock, why = KernelClock.open(cache=tmp_path)
    assert clock is None and why.startswith("no kernel clock") and "\n" not in why


def _timed_job(session, clock: str = "kernel"):
    pytest.importorskip("torch")
    from fsr_lsp.evaluator.gpu.run import run_job
    from fsr_lsp.evaluator.records import TimingConfig

    from .test_timed_runs_cpu import TOTAL
    from ..support.cpu_jobs import job

    j = job(TOTAL, "total", "total_exact", "total_exact")
    j.timing = TimingConfig(warmup=1, min_reps=20, max_reps=20, target_seconds=0.0, clock=clock)  # type: ignore[arg-type]
    return run_job(session, j)


def test_a_timing_takes_the_kernel_clock_and_says_so():
    from ..support.fake_gpu import FakeSession

    r = _timed_job(FakeSession())
    assert r.status == "verified", r.message
    assert r.clock == "kernel"
    assert "CUPTI" in next(c.detail for c in r.checks if c.name == "timed runs verified")


def test_without_a_kernel_clock_a_timing_is_by_events_and_says_why():
    from ..support.fake_gpu import FakeSession

    session = FakeSession()
    session.clock, session.clock_note = None, "no kernel clock (CUPTI not found in the CUDA toolkit at /opt/cuda)"
    r = _timed_job(session)
    assert r.status == "verified", r.message
    assert r.clock == "events: no kernel clock (CUPTI not found in the CUDA toolkit at /opt/cuda)"
    assert "timed by CUDA events around each launch (no kernel clock" in \
        next(c.detail for c in r.checks if c.name == "timed runs verified")
    asked = _timed_job(FakeSession(), clock="events")
    assert asked.clock == "events: as the timing asked"


def test_a_clock_that_misses_a_run_leaves_the_timing_to_its_events():
    from ..support.fake_gpu import FakeClock, FakeSession

    class Forgetful(FakeClock):
        def read(self):
            spans = super().read()
            spans.pop(max(spans), None) if spans else None
            return spans

    session = FakeSession()
    session.clock = Forgetful()
    r = _timed_job(session)
    assert r.status == "verified" and r.clock == "events: the kernel clock missed runs", r.clock


def test_a_driver_that_cannot_map_host_memory_leaves_no_hold_and_says_why():
    from fsr_lsp.evaluator.gpu.stream_hold import stream_hold

    class NoMapping:
        host_alloc_flags = type("Flags", (), {"DEVICEMAP": 2})

        def pagelocked_zeros(self, *args, **kwargs):
            raise RuntimeError("cuMemHostAlloc failed: operation not supported")

    hold, why = stream_hold(NoMapping(), 1_980_000)
    assert hold is None and why == "no stream hold (cuMemHostAlloc failed: operation not supported)"


def launches_take_host_time(monkeypatch):
    """The CPU double's events hold its launch's Python and numpy (20-40 us a run, more on a busy
    or slow machine), where a GPU's hold a launch's few microseconds: for the tests of when a
    timing stops, that is not work the kernel records hide, whatever the machine's speed."""
    from fsr_lsp.evaluator.gpu import kernel_clock

    monkeypatch.setattr(kernel_clock, "LAUNCH_WORK_MS", 10.0)
    monkeypatch.setattr(kernel_clock, "HIDDEN_WORK_MS", 10.0)


def test_a_settled_timing_stops_at_its_fewest_runs_and_an_unsettled_one_takes_them_all(monkeypatch):
    """Kernel times that never vary settle at the first look (min_reps); with precision 0 the
    timing takes max_reps, as before early stops."""
    launches_take_host_time(monkeypatch)
    from ..support.fake_gpu import FakeClock, FakeSession

    class Steady(FakeClock):
        def read(self):
            from fsr_lsp.evaluator.gpu.kernel_clock import Span

            spans = super().read()
            return {tag: Span(0.002 if (tag - 1) % 8 == 0 else 0.001, 1) for tag in spans}

    def timed_runs(precision: float) -> int:
        pytest.importorskip("torch")
        from fsr_lsp.evaluator.gpu.run import run_job
        from fsr_lsp.evaluator.records import TimingConfig

        from .test_timed_runs_cpu import TOTAL
        from ..support.cpu_jobs import job

        session = FakeSession()
        session.clock = Steady()
        j = job(TOTAL, "total", "total_exact", "total_exact")
        j.timing = TimingConfig(warmup=1, min_reps=20, max_reps=100, target_seconds=10.0, precision=precision)
        r = run_job(session, j)
        assert r.status == "verified" and r.clock == "kernel", (r.message, r.clock)
        assert r.speedup == pytest.approx(2.0)
        return r.candidate_time.reps

    assert timed_runs(0.005) == 20
    assert timed_runs(0.0) == 100


def test_a_search_stops_timing_a_near_twin_once_it_cannot_win_and_still_times_a_winner_to_the_precision(monkeypatch):
    """Two kernels of one speed, 1.5% noise a run: to 0.5% that takes every run; a caller that
    only asks "a win beyond 1.02?" (the search) has its answer, no, at the first look. A candidate
    twice as fast is timed as before whatever the caller asks."""
    launches_take_host_time(monkeypatch)
    import random

    from ..support.fake_gpu import FakeClock, FakeSession

    def clock(speedup: float):
        noise = random.Random(3)

        class Noisy(FakeClock):
            def read(self):
                from fsr_lsp.evaluator.gpu.kernel_clock import Span

                spans = super().read()
                return {tag: Span((0.002 if (tag - 1) % 8 == 0 else 0.002 / speedup) * (1 + noise.gauss(0, 0.015)), 1)
                        for tag in spans}
        return Noisy()

    def timed_runs(speedup: float, win_above: float) -> tuple[int, float]:
        pytest.importorskip("torch")
        from fsr_lsp.evaluator.gpu.run import run_job
        from fsr_lsp.evaluator.records import TimingConfig

        from .test_timed_runs_cpu import TOTAL
        from ..support.cpu_jobs import job

        session = FakeSession()
        session.clock = clock(speedup)
        j = job(TOTAL, "total", "total_exact", "total_exact")
        j.timing = TimingConfig(warmup=1, min_reps=20, max_reps=100, target_seconds=10.0, win_above=win_above)
        r = run_job(session, j)
        assert r.status == "verified" and r.clock == "kernel", (r.message, r.clock)
        return r.candidate_time.reps, r.speedup

    assert timed_runs(1.0, 0.0)[0] > 40  # the precision asks for more runs
    reps, speedup = timed_runs(1.0, 1.02)
    assert reps == 20 and speedup == pytest.approx(1.0, abs=0.03)
    assert timed_runs(2.0, 1.02)[0] == timed_runs(2.0, 0.0)[0]


def test_a_lone_contender_whose_events_far_outgrow_its_records_is_timed_by_them():
    """An original timed alone (a baseline) that starts its work as a child grid: no other side to
    compare its excess with, but no launch's own work is 10 ms. The same holds where both hide."""
    events = {"original": [10.0, 10.1, 9.9]}
    times, how = choose_clock(events, {"original": [0.001, 0.001, 0.001]})
    assert times == events and "original's launches did work" in how
    both = {"original": [10.0] * 3, "candidate": [10.0] * 3}
    assert choose_clock(both, {"original": [0.001] * 3, "candidate": [0.001] * 3})[0] == both
    assert choose_clock({"original": [0.0125] * 3}, {"original": [0.010] * 3})[1] == "kernel"  # 2.5 us: a launch's
