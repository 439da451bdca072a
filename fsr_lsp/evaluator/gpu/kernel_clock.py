"""Each timed launch's GPU time as the kernel's own start and end stamps (CUPTI's concurrent-kernel
records, `kernel_clock.cpp`), the clock the capture reads the user's run with.

Two CUDA events around a launch also count the GPU's processing of the launch and of the events,
a few microseconds: a 21 us transpose read 28 us, a 1.5 us kernel 3.8 us, so a short kernel's
time and a rewrite's speedup were not the ones the user's program shows. Events are still
recorded around every timed run: they are the clock where CUPTI cannot be had (no toolkit CUPTI,
another profiler holding it), and the check on the kernel clock: work a launch starts that its
kernel records do not show (a child grid) makes the events outgrow the kernel's span, and then
both contenders are timed by their events.
"""

from __future__ import annotations

import ctypes
import logging
import statistics
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("kernel_clock.cpp")
LIBRARY = "libfsr_kernel_clock.so"
MAX_SPANS = 1 << 16
# Events may exceed a launch's kernel span by the launch's and the events' own work; a contender
# whose excess is over this much (and this share of its time) beyond the other's ran something
# its kernel records do not show.
HIDDEN_WORK_MS = 0.005
HIDDEN_WORK_SHARE = 0.05
# ...and whatever the others do, no launch's own work is this long (2.4-2.5 us measured on an H200):
# beyond it (and that share of its time) a lone contender, or every one, ran what its records do not show.
LAUNCH_WORK_MS = 0.02


@dataclass(frozen=True)
class Span:
    """A tag's kernels on the GPU: from the first's start to the last's end."""

    ms: float
    kernels: int


class KernelClock:
    """The loaded clock library; one per worker (CUPTI allows one subscriber a process)."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._lib = library
        library.fsr_clock_open.restype = ctypes.c_int
        library.fsr_clock_tag.argtypes = [ctypes.c_uint64]
        library.fsr_clock_read.restype = ctypes.c_int
        library.fsr_clock_read.argtypes = [ctypes.POINTER(ctypes.c_uint64)] * 3 + [ctypes.POINTER(ctypes.c_uint32),
                                                                                   ctypes.c_int]
        # read into the same arrays every time: made afresh, their 1.8 MB cost 0.5 ms a read
        self._tags, self._starts, self._ends = ((ctypes.c_uint64 * MAX_SPANS)() for _ in range(3))
        self._kernels = (ctypes.c_uint32 * MAX_SPANS)()

    @classmethod
    def open(cls, nvcc: str = "", cache: Path | None = None) -> tuple[KernelClock | None, str]:
        """The running clock, or None and why not in one line (the timing then uses events)."""
        from ...native import BuildError, cupti_library

        try:
            path = cupti_library(SOURCE, LIBRARY, "the kernel clock", nvcc, cache)
            library = ctypes.CDLL(str(path))
        except (BuildError, OSError) as e:
            return None, f"no kernel clock ({str(e).splitlines()[0]})"
        clock = cls(library)
        code = library.fsr_clock_open()
        if code != 0:
            return None, f"no kernel clock: CUPTI would not start (code {code}: no driver, or another profiler holds it)"
        return clock, ""

    def tag(self, tag: int) -> None:
        """Launches from now on are timed under `tag` (0: not timed)."""
        self._lib.fsr_clock_tag(tag)

    def read(self) -> dict[int, Span]:
        """The spans of every tag since the last read (call after a synchronize)."""
        tags, starts, ends, kernels = self._tags, self._starts, self._ends, self._kernels
        n = self._lib.fsr_clock_read(tags, starts, ends, kernels, MAX_SPANS)
        return {int(tags[i]): Span((ends[i] - starts[i]) / 1e6, int(kernels[i]))
                for i in range(n) if kernels[i] and ends[i] > starts[i]}

    def close(self) -> None:
        self._lib.fsr_clock_close()


def tag_of(run: int, contender: int) -> int:
    """The tag of one contender's timed run (never 0)."""
    return run * 8 + contender + 1


class TaggedLaunches:
    """One timing's launches under the clock (None: no clock, events only): each contender's
    timed runs tagged, their spans read once at the end."""

    def __init__(self, clock: KernelClock | None, names: list[str]) -> None:
        self.clock = clock
        self._index = {name: i for i, name in enumerate(names)}
        self._seen: dict[int, Span] = {}  # every span read so far (a timing may look before its end)
        if clock is not None:
            clock.read()  # what an earlier job left (one cut short by a fault): never this timing's

    @contextmanager
    def tagged(self, name: str, timed: int | None) -> Iterator[None]:
        """The launches made inside, tagged as `name`'s timed run `timed` (warm-ups untagged)."""
        if self.clock is None or timed is None:
            yield
            return
        self.clock.tag(tag_of(timed, self._index[name]))
        try:
            yield
        finally:
            self.clock.tag(0)

    def spans(self, runs: dict[str, int], kept: dict[str, list[float | None]]) -> dict[str, list[float | None]]:
        """Each contender's kernel time per timed run (None where the clock has none): of the
        `runs` launched here so far (call after a synchronize), and as `kept` from an earlier timing."""
        if self.clock is not None:
            self._seen.update(self.clock.read())
        spans = self._seen  # none without a clock: every run None, and the events time them
        out = {name: [s.ms if (s := spans.get(tag_of(r, self._index[name]))) else None for r in range(n)]
               for name, n in runs.items()}
        return {**out, **kept}

    def choose(self, events: dict[str, list[float]], kernel: dict[str, list[float | None]],
               why_none: str) -> tuple[dict[str, list[float]], str]:
        """choose_clock's times and clock; without a clock, the events and `why_none`."""
        if self.clock is None:
            return events, f"events: {why_none}"
        return choose_clock(events, kernel)


def choose_clock(events: dict[str, list[float]], kernel: dict[str, list[float | None]]) -> tuple[dict[str, list[float]], str]:
    """The times a timing reports, and by which clock. The kernels (`kernel`'s contenders) take
    their kernel spans where every timed run of each has one and none's events outgrow its spans
    by more than the others' (the launch's own work) beyond HIDDEN_WORK_MS and HIDDEN_WORK_SHARE;
    else every kernel its events, the two sides always timed by one clock. A contender not in
    `kernel` (a torch `ref`: several kernels, copies, the allocator) keeps its events."""
    spans = {name: [t for t in times if t is not None] for name, times in kernel.items()}
    if not kernel or any(name not in events or len(spans[name]) != len(events[name]) for name in kernel):
        return events, "events: the kernel clock missed runs" if kernel else "events"
    excess = {n: statistics.median(e - s for e, s in zip(events[n], spans[n])) for n in kernel}
    least = min(excess.values())
    for name, extra in excess.items():
        share = HIDDEN_WORK_SHARE * statistics.median(spans[name])
        if extra - least > max(HIDDEN_WORK_MS, share) or extra > max(LAUNCH_WORK_MS, share):
            log.info("the %s's events exceed its kernel records by %.4g ms: timed by events", name, extra)
            return events, (f"events: the {name}'s launches did work on the GPU that its kernel records do not show "
                            f"({extra * 1000:.3g} us a run beyond the launch's own)")
    return {**events, **{n: list(v) for n, v in spans.items()}}, "kernel"


def clock_said(clock: str) -> str:
    """How a timing's runs were clocked ("kernel", or "events: why"), for its check's detail."""
    if clock == "kernel":
        return "timed by the kernels' own GPU start and end stamps (CUPTI), as a capture times your run"
    why = clock.partition(": ")[2]
    return "timed by CUDA events around each launch" + (f" ({why})" if why else "")
