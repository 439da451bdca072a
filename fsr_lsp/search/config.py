"""What the user sets for a search: budgets, mode, and the LLM endpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..llmclient import LLMConfig

__all__ = ["LLMConfig", "SearchConfig"]


@dataclass(frozen=True)
class SearchConfig:
    rounds: int = 4  # the depth D
    candidates: int = 8  # N per round; 1 means staged refinement of one evolving kernel
    time_budget: float = 300.0  # seconds of wall clock for the whole search
    target_speedup: float | None = None  # stop early once a verified candidate reaches it
    fix_attempts: int = 1  # times a failed candidate goes back to its generator to be fixed
    seeds: int = 3  # how many of the fastest verified candidates seed the next round
    compile_workers: int = 0  # 0: one per CPU core
    sanitize_winner: bool = True  # each round's leaders and the winner under compute-sanitizer before they count
    min_gain: float = 0.02  # a win's whole speedup interval must lie above 1 + min_gain
    llm: LLMConfig = field(default_factory=LLMConfig)
    focus: str = ""  # a profile finding the user asked this search to address (shown to the model)
    # the program's launch cannot follow a rewrite's new launch (spelled with variables, or in another
    # file): what runs under it as it is must be verified too, for only that can be applied
    launch_fixed: bool = False

    @property
    def mode(self) -> Literal["fsr", "staged"]:
        return "staged" if self.candidates == 1 else "fsr"
