"""A printing original's output at a larger size, forecast from the smaller ones before it runs.

A check kernel prints a line for each element that differs from what its program expects. On
random inputs every element differs: 4 M lines a launch at the size a run had. Past what the
device's printf buffer holds (about 30 000 such lines on an H200), every further printf stalls,
and one launch takes minutes (docs/benchmarks.md, session 11). The test sizes run first: the
lines the original printed there per byte of its buffers say what a larger size would print,
and a size that would flood is refused before it runs, naming the way out: the run's own inputs
at the bench size (`bench_inputs = "captured"`), where a check kernel finds nothing to print.
Only what the test sizes show is forecast: a kernel that prints nothing there (its condition
never met by their inputs) runs at the larger size as it would have.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import SizePlan
from .printed import Printed

FLOOD_LINES = 50_000  # lines one launch may print; 33 792 of 60 characters filled the H200's default buffer


@dataclass
class PrintRate:
    """The most lines the original printed at each size, by the bytes of its buffers there."""

    seen: dict[int, tuple[int, str]] = field(default_factory=dict)  # buffer bytes -> (lines, label)

    @property
    def lines(self) -> int:
        return self.seen[max(self.seen)][0] if self.seen else 0

    @property
    def label(self) -> str:
        return self.seen[max(self.seen)][1] if self.seen else ""

    def observe(self, plan: SizePlan, printed: Printed) -> None:
        nbytes, n = max(1, plan.buffer_bytes), len(printed.lines)
        if nbytes not in self.seen or n > self.seen[nbytes][0]:  # none printed counts too: growth starts there
            self.seen[nbytes] = (n, plan.label)

    def forecast(self, plan: SizePlan) -> int:
        """Lines a launch at `plan` would print: growing as they grew between the two largest
        sizes seen (a kernel printing a fixed few lines stays at them), in proportion to the bytes
        when one size printed."""
        if not self.seen:
            return 0
        sizes = sorted(self.seen)
        top, lines = sizes[-1], self.seen[sizes[-1]][0]
        nbytes = max(1, plan.buffer_bytes)
        if len(sizes) == 1:
            return lines * nbytes // top
        below = sizes[-2]
        growth = max(0.0, (lines - self.seen[below][0]) / (top - below))
        return lines + int(growth * max(0, nbytes - top))

    def flood(self, plan: SizePlan) -> str | None:
        """Why random inputs at `plan` would flood the device's printf buffer, or None."""
        lines = self.forecast(plan)
        if lines <= FLOOD_LINES:
            return None
        return (f"on random inputs it printed {self.lines:,} lines a launch at the size {self.label}, so at "
                f"{plan.label} about {lines:,}: far past what the device's printf buffer holds, where each further "
                "printf stalls (4 M lines take minutes a launch). A check kernel that prints what differs from its "
                "program's data finds nothing to print on that data: give that size the run's own inputs "
                '(bench_inputs = "captured"), or test smaller sizes')
