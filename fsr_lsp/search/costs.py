"""What a round's work costs in this search, measured as it runs, so that a round near the
deadline plans for the leader's confirmation: a search whose last round screened and checked
until its deadline had found a 154x rewrite it could no longer confirm (seen on an H200)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, TypeVar

from ..evaluator.records import EvalResult

T = TypeVar("T")
# A leader's confirmation planned for at twice the longest so far: its sanitizers cost more for a
# kernel that shares memory (racecheck) than the plain one that set the mark (an H200: a round
# planned to the measured 1.4 s left its 81x histogram unconfirmed at the deadline).
CONFIRM_MARGIN = 2.0
# What screening leaves time for: the checks of the best two it finds, and their confirmation. The
# round's batch is then cut to what fits (`fitting`); planning the screen for the whole batch
# starved it (an H200: 1.1 s of screening a round, one proposal checked, a histogram at 1.12x).
PLANNED_CHECKS = 2


@dataclass
class RoundCosts:
    eval_s: float = 0.0  # wall seconds a candidate took in the last batch (its share of the batch)
    confirm_s: float = 0.0  # the longest confirmation of a leader so far

    def evaluated(self, candidates: int, seconds: float) -> None:
        if candidates:
            self.eval_s = seconds / candidates

    def confirmed(self, seconds: float) -> None:
        self.confirm_s = max(self.confirm_s, seconds)

    def reserve(self, candidates: int) -> float:
        """Seconds a round needs after its proposals: the checks of its best (at most
        PLANNED_CHECKS of them), then a leader's confirmation."""
        return self.eval_s * min(candidates, PLANNED_CHECKS) + CONFIRM_MARGIN * self.confirm_s

    def fitting(self, proposals: list[T], remaining: float) -> list[T]:
        """The first of `proposals` (best first) whose checks leave time for a leader's
        confirmation before the deadline; at least one; all while nothing was measured yet."""
        if self.eval_s <= 0:
            return proposals
        return proposals[:max(1, int((remaining - CONFIRM_MARGIN * self.confirm_s) / self.eval_s))]


class TimedConfirms:
    """The bench, its confirmations timed into `costs` (one cut short by a cancel or the deadline
    says nothing of their cost)."""

    def __init__(self, bench: Any, costs: RoundCosts) -> None:
        self._bench, self._costs = bench, costs

    def confirm(self, proposal: Any) -> EvalResult:
        return self.confirm_many([proposal])[0]

    def confirm_many(self, proposals: list[Any]) -> list[EvalResult]:
        """Timed as one confirmation: what a round's end has to leave time for."""
        started = time.monotonic()
        results = self._bench.confirm_many(proposals)
        if not any(r.status == "cancelled" for r in results):
            self._costs.confirmed(time.monotonic() - started)
        return results

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bench, name)
