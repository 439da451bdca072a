"""Who may use a GPU at the same moment: a timed run, or a profiler timing what it replays, has it
alone; work that times nothing (a job's checks, compute-sanitizer tools) may share it with other
such work, never with a timed run.

One gate per device index in this process (every worker client and sanitizer run of this
process goes through it). Timed runs wait for the shared work to end, and shared work waits
while a timed run waits, so neither side starves.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator


class GpuGate:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._sharing = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """For a timed run: nothing else on this GPU meanwhile."""
        self.take_exclusive()
        try:
            yield
        finally:
            self.give_exclusive()

    @contextmanager
    def shared(self) -> Iterator[None]:
        """For work that times nothing: beside other such work, never beside a timed run."""
        self.take_shared()
        try:
            yield
        finally:
            self.give_shared()

    def take_exclusive(self, stop: Callable[[], bool] | None = None) -> bool:
        """Wait for the GPU alone; False (nothing taken) once `stop()` says so (polled)."""
        with self._cond:
            self._waiting_exclusive += 1
            try:
                while not self._cond.wait_for(lambda: not self._exclusive and self._sharing == 0, 0.05 if stop else None):
                    if stop is not None and stop():
                        return False
            finally:
                self._waiting_exclusive -= 1
                self._cond.notify_all()  # shared work held back by this wait may go once it ends
            self._exclusive = True
            return True

    def give_exclusive(self) -> None:
        with self._cond:
            self._exclusive = False
            self._cond.notify_all()

    def take_shared(self, stop: Callable[[], bool] | None = None) -> bool:
        """Wait for a share; False (nothing taken) once `stop()` says so (polled)."""
        with self._cond:
            while not self._cond.wait_for(lambda: not self._exclusive and self._waiting_exclusive == 0,
                                          0.05 if stop else None):
                if stop is not None and stop():
                    return False
            self._sharing += 1
            return True

    def take_shared_when_idle(self, idle_s: float, stop: Callable[[], bool]) -> bool:
        """A share taken only once nothing has held or awaited the GPU for `idle_s` seconds: for
        work that can wait and, once begun, cannot be cut short (a sanitizer child making its
        context): taken mid-round it would hold back the next timed run; False once `stop()`."""
        with self._cond:
            idle_since: float | None = None
            while True:
                if stop():
                    return False
                idle = not self._exclusive and self._sharing == 0 and self._waiting_exclusive == 0
                now = time.monotonic()
                idle_since = (idle_since or now) if idle else None
                if idle_since is not None and now - idle_since >= idle_s:
                    self._sharing += 1
                    return True
                self._cond.wait(0.01)

    def give_shared(self) -> None:
        with self._cond:
            self._sharing -= 1
            self._cond.notify_all()

    @property
    def state(self) -> tuple[bool, int]:
        """(a timed run holds it, how many share it): for tests and logs."""
        with self._cond:
            return self._exclusive, self._sharing


_GATES: dict[int, GpuGate] = {}
_LOCK = threading.Lock()


def gate(device_index: int) -> GpuGate:
    with _LOCK:
        return _GATES.setdefault(device_index, GpuGate())
