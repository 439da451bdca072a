"""A printing original's output at a larger size, forecast from the smaller ones before it runs.

A check kernel prints a line for each element that differs from what its program expects. On
random inputs every element differs: 4 M lines a launch at the size a run had. Past what the
device's printf buffer holds (about 30 000 such lines on an H200), every further printf stalls,
and one launch takes minutes (docs/benchmarks.md, session 11). The test sizes run first: the
lines the original printed there per byte of its buffers say what a larger size would print,
and a size that would flood is refused before it runs, naming the way out: the run's own inputs
at the bench size (`bench_inputs = "captured"`), where a check kernel finds nothing to print.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import SizePlan
from .printed import Printed

FLOOD_LINES = 50_000  # lines one launch may print; 33 792 of 60 characters filled the H200's default buffer


@dataclass
class PrintRate:
    """The most lines the original printed per byte of its buffers, and where."""

    lines: int = 0
    label: str = ""
    nbytes: int = 1

    def observe(self, plan: SizePlan, printed: Printed) -> None:
        n, nbytes = len(printed.lines), max(1, plan.buffer_bytes)
        if n and n * self.nbytes >= self.lines * nbytes:  # a tie: the larger size, seen later, says it
            self.lines, self.label, self.nbytes = n, plan.label, nbytes

    def forecast(self, plan: SizePlan) -> int:
        """Lines a launch at `plan` would print at the same rate."""
        return self.lines * max(1, plan.buffer_bytes) // self.nbytes

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
