"""A search's deadline: when it comes, everything in flight stops."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

log = logging.getLogger("fsr_lsp.search")


class Deadline:
    """At `at`, the search's cancel is set and the bench interrupted: every layer watches one or
    the other, so everything in flight stops within a second or two."""

    def __init__(self, at: float, cancel: threading.Event, interrupt: Callable[[], None] | None) -> None:
        self.at, self.cancel, self.interrupt = at, cancel, interrupt
        self.reached = threading.Event()
        self._timer = threading.Timer(max(0.0, at - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        log.debug("deadline reached: interrupting")
        self.reached.set()
        self.cancel.set()
        if self.interrupt is not None:
            self.interrupt()

    @property
    def passed(self) -> bool:
        return self.reached.is_set() or time.monotonic() >= self.at

    def close(self) -> None:
        self._timer.cancel()
