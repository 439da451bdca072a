"""The kernel clock on the GPU: a short kernel's time is its own, not the launch's; work a launch
hides from its kernel records (a child grid) is still timed."""

from __future__ import annotations

import statistics

import pytest

from fsr_lsp.evaluator import evaluate
from fsr_lsp.evaluator.gpu.kernel_clock import KernelClock, choose_clock, tag_of

from .conftest import QUICK, kernel_text

pytestmark = pytest.mark.gpu

CHILD = """
__global__ void burn(float* y, const float* x, int n, int rounds)
{
    // called with rounds > 0: one thread starts the work as a child grid (rounds < 0) and returns
    if (rounds > 0) {
        if (blockIdx.x == 0 && threadIdx.x == 0) burn<<<(n + 255) / 256, 256>>>(y, x, n, -rounds);
        return;
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int r = 0; r < -rounds; ++r) v = v * 0.999f + 0.001f;
    y[i] = v;
}
"""


def test_the_original_is_timed_by_the_kernel_clock(evaluator):
    r = evaluate(evaluator, kernel_text("vadd.cu"), "vadd", None, QUICK)
    assert r.status == "verified", r.message
    assert r.clock == "kernel", r.clock


def test_a_rewrite_that_hides_its_work_in_a_child_grid_gains_nothing(evaluator):
    """The parent returns at once; its child grid does the work. Whatever the kernel records show,
    the reported time must hold the child's work: no speedup from moving it out of sight."""
    r = evaluate(evaluator, kernel_text("child_grid_work.cu"), "burn", CHILD, QUICK)
    assert r.status in ("verified", "slower"), r.message
    assert r.speedup is not None and r.speedup < 1.3, (r.speedup, r.clock, r.message)


def test_a_short_kernel_reads_its_own_time_and_hidden_work_falls_back_to_events():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from fsr_lsp.evaluator.gpu.session import GpuSession

    session = GpuSession(0)
    clock = session.kernel_clock()
    assert clock is not None, session.clock_note
    x = torch.ones(1024, device="cuda")
    events: dict[str, list[float]] = {"tiny": [], "hiding": []}
    for run in range(30):
        for index, name in enumerate(events):
            release = session.hold_gpu()
            start, end = session.event(), session.event()
            start.record()
            clock.tag(tag_of(run, index))
            x.add_(1.0)  # a 1-block kernel of a microsecond or two
            clock.tag(0)
            if name == "hiding":
                torch.cuda._sleep(20_000)  # GPU work between the events that no tagged kernel shows
            end.record()
            release()
            events[name].append((start, end))
    torch.cuda.synchronize()
    spans = clock.read()
    times = {n: [s.elapsed_time(e) for s, e in v] for n, v in events.items()}
    kernel = {n: [spans[tag_of(r, i)].ms if tag_of(r, i) in spans else None for r in range(30)]
              for i, n in enumerate(events)}
    assert all(t is not None for t in kernel["tiny"])
    tiny_events, tiny_kernel = statistics.median(times["tiny"]), statistics.median(kernel["tiny"])  # type: ignore[type-var]
    print(f"1-block kernel: events {tiny_events * 1000:.2f} us, kernel clock {tiny_kernel * 1000:.2f} us")
    assert tiny_kernel < tiny_events
    chosen, how = choose_clock(times, kernel)
    assert how.startswith("events") and "hiding" in how and chosen == times
    alone, how = choose_clock({"tiny": times["tiny"]}, {"tiny": kernel["tiny"]})
    assert how == "kernel" and alone["tiny"] == kernel["tiny"]
    assert isinstance(clock, KernelClock)


def _session():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from fsr_lsp.evaluator.gpu.session import GpuSession

    return GpuSession(0), torch


def test_the_held_stream_keeps_a_slow_host_out_of_the_events():
    """Two milliseconds of host time between the start event and the launch: the events still
    read the kernel's few microseconds, not the host's wait."""
    import time

    session, torch = _session()
    x = torch.ones(1024, device="cuda")
    times = []
    for _ in range(10):
        release = session.hold_gpu()
        start, end = session.event(), session.event()
        start.record()
        time.sleep(0.002)
        x.add_(1.0)
        end.record()
        release()
        times.append((start, end))
    torch.cuda.synchronize()
    held = statistics.median(s.elapsed_time(e) for s, e in times)
    print(f"events around a 1-block kernel, the host 2 ms late: {held * 1000:.2f} us")
    assert held < 0.1, held


def test_a_hold_never_released_ends_by_its_timeout():
    import time

    from fsr_lsp.evaluator.gpu.stream_hold import HOLD_TIMEOUT_S

    session, torch = _session()
    session.hold_gpu()  # never released
    began = time.perf_counter()
    torch.cuda.synchronize()
    waited = time.perf_counter() - began
    assert waited < HOLD_TIMEOUT_S * 4, waited


def test_a_torch_ref_beside_leaves_the_kernels_on_the_kernel_clock(evaluator):
    """The ref's torch launches (copies, the allocator) outgrow their kernel records; the ref is
    timed by its events, the kernels still by their own stamps."""
    from pathlib import Path

    source = (Path(__file__).parents[2] / "examples" / "softmax.cu").read_text()
    r = evaluate(evaluator, source, "softmax", None, QUICK)
    assert r.status == "verified", r.message
    assert r.ref_time is not None and r.clock == "kernel", r.clock
