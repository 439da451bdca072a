"""The search's first win confirmed the moment its verdict arrives, beside the rest of its round.

A round's leaders are confirmed (more seeds, the sanitizers: verdict.py) only once the round's
evaluation ends; the first fully verified win, what a user waits for at the editor, then waits
for every later candidate of the round too. Where the bench can confirm while it evaluates
(`Bench.confirms_beside`: checks and sanitizers share the GPU with the round's checks, never
with a timed run), a clear win (verified, a win beyond the search's minimum gain) that arrives
while no win is confirmed yet is confirmed at once, on a thread. Once per search: later leaders
are confirmed after their rounds as before, this one among them already confirmed. Nothing is
checked less: the same confirmation, earlier.
"""

from __future__ import annotations

import threading
from typing import Callable

from .config import SearchConfig
from .outcome import Bench
from .proposal import Tried
from .verdict import confirm


class EarlyConfirm:
    def __init__(self, bench: Bench, config: SearchConfig, started: float, on_confirmed: Callable[[int], None]) -> None:
        """`on_confirmed(round)`: said from the confirming thread, the moment the win is fully verified."""
        self.bench, self.config, self.started, self.on_confirmed = bench, config, started, on_confirmed
        self.enabled = bench.confirms_beside and config.sanitize_winner
        self._thread: threading.Thread | None = None
        self._tried: Tried | None = None
        self._lock = threading.Lock()  # verdicts arrive on the bench's threads (one a GPU worker)

    def offer(self, t: Tried, history: list[Tried], round_: int) -> None:
        """A verdict as it arrives: confirmed now when it is the search's first clear win."""
        if not t.verified or not t.result.is_win(self.config.min_gain):
            return
        if self.config.launch_fixed and not t.proposal.keeps_launch:
            return  # only a win under the program's launch can be applied
        with self._lock:
            if not self.enabled:
                return
            self.enabled = False  # once: the first win's wait is what this shortens
            if any(h.result.confirmed for h in history):
                return
            self._tried = t
            self._thread = threading.Thread(target=self._run, args=(t, round_), daemon=True, name="fsr-confirm-early")
            self._thread.start()

    def _run(self, t: Tried, round_: int) -> None:
        if confirm(t, self.bench, f"round {round_ + 1} leader", lambda _: None, self.started):
            self.on_confirmed(round_)

    def join(self) -> Tried | None:
        """Wait for the confirmation under way (a deadline or cancel interrupts it through the
        bench); the candidate it judged, for the caller to record, once."""
        thread, t = self._thread, self._tried
        if thread is None:
            return None
        thread.join()
        self._thread = self._tried = None
        return t
