"""What a search shows and returns, and what it runs on: the bench's interface, progress, the
outcome, and the ranking of what was tried."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

from ..evaluator.profile.profile import Profiled
from ..evaluator.records import EvalResult, GpuInfo
from .proposal import Proposal, Tried


class Bench:
    """What a search runs on. Every bench gives the original's baseline, a verdict per proposal
    and a stricter confirmation; the rest is optional, with defaults that do nothing, and a bench
    overrides what it can (the observer style of the autotuners' backends): `screen` where
    `screens` (a cheap ranking of configurations, never a verdict), `profile` where `profiles`
    (Nsight Compute facts about a leader), `compile_ahead` (while the GPU starts), `interrupt`
    (the deadline or a cancel stops the GPU work in flight), `confirms_beside` (a confirmation
    may run while a round is evaluated)."""

    screens = False
    profiles = False
    confirms_beside = False  # `confirm` may run while `evaluate` runs (from another thread): search/early_confirm.py

    @property
    def gpu(self) -> GpuInfo:
        """The GPU the search runs on (a bench may start it to say)."""
        raise NotImplementedError

    @property
    def flags(self) -> tuple[str, ...]:
        """Compile flags of both kernels: part of the search's identity."""
        return ()

    def baseline(self) -> EvalResult:
        raise NotImplementedError

    def evaluate(self, proposals: list[Proposal],
                 on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
        """A result per proposal, each also handed to `on_result(index, result)` as it arrives."""
        raise NotImplementedError

    def confirm(self, proposal: Proposal) -> EvalResult:
        """Stricter verification of a winner: more seeds, and the sanitizers."""
        raise NotImplementedError

    def confirm_many(self, proposals: list[Proposal]) -> list[EvalResult]:
        """`confirm` of each, where a bench can do them together for less (a round's leaders:
        one sanitizer child per tool for all of them); each still judged on its own."""
        return [self.confirm(p) for p in proposals]

    def screen(self, proposals: list[Proposal]) -> list[EvalResult]:
        """The bench size only, one input set, few repetitions (where `screens`)."""
        raise NotImplementedError

    def profile(self, proposal: Proposal | None) -> Profiled:
        """Facts about a candidate (the original when None), where `profiles`."""
        return Profiled(None, "")

    def compile_ahead(self, proposals: list[Proposal]) -> None:
        """Compile these while the GPU worker starts, where the bench can."""

    def interrupt(self) -> None:
        """Stop the GPU work in flight now."""


@dataclass
class Progress:
    round: int
    rounds: int
    tried: int
    verified: int
    best_speedup: float | None
    message: str


@dataclass
class SearchOutcome:
    status: Literal["improved", "no_win", "cancelled", "failed"]
    message: str
    baseline: EvalResult | None = None
    best: Tried | None = None  # the verified win, when there is one
    best_tried: Tried | None = None  # the fastest verified candidate, win or not
    tried: list[Tried] = field(default_factory=list)  # this search's candidates (fixes included)
    rounds: int = 0
    seconds: float = 0.0
    stopped: str = ""  # rounds, time, target, cancelled, exhausted, generator
    search_key: str = ""
    problem: str = ""  # what stopped the search early (the generator failing), for the user
    notes: list[str] = field(default_factory=list)  # things the user should know (no profiler, ...)
    original: str = ""  # the kernel as searched (its @fsr block and definition), for diffs
    unconfirmed: Tried | None = None  # a faster win whose stricter verification the search did not finish


def ranked(tried: list[Tried]) -> list[Tried]:
    """Verified candidates, fastest first (by speedup over the original each was timed against)."""
    return sorted((t for t in tried if t.verified and t.result.speedup), key=lambda t: -(t.result.speedup or 0))
