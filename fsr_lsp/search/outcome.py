"""What a search shows and returns, and what it runs on: the bench's interface, progress, the
outcome, and the ranking of what was tried."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..evaluator.records import EvalResult, GpuInfo
from .proposal import Proposal, Tried


class Bench(Protocol):
    gpu: GpuInfo
    flags: tuple[str, ...]  # compile flags of both kernels: part of the search's identity

    def baseline(self) -> EvalResult: ...

    def evaluate(self, proposals: list[Proposal]) -> list[EvalResult]:
        """A result per proposal; a bench may also take `on_result(index, result)`, called as
        each arrives."""
        ...

    def confirm(self, proposal: Proposal) -> EvalResult:
        """Stricter verification of a winner: more seeds, and the sanitizers."""
        ...


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
