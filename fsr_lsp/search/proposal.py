"""A proposed rewrite and what became of it: the unit the loop, store and prompts share."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..evaluator.records import EvalResult


@dataclass(frozen=True)
class Proposal:
    source: str  # device code for the kernel (optionally with its own @fsr launch block)
    generator: str  # "builtin:block-256", "llm:gpt-4o", ...
    note: str = ""  # what the generator says it changed
    flags: tuple[str, ...] = ()  # extra compiler flags for this candidate only
    prompt: str = ""  # what was asked (LLM), without any key
    response: str = ""  # what came back (LLM)
    parent: str = ""  # key of the candidate this one refines or fixes
    round: int = 0

    @property
    def keeps_launch(self) -> bool:
        """Whether it runs under the original's launch (it states no launch of its own)."""
        return "@fsr" not in self.source

    @property
    def key(self) -> str:
        """Identity of the rewrite itself: the same code and flags are the same candidate."""
        return hashlib.sha256((self.source.strip() + "\0" + " ".join(self.flags)).encode()).hexdigest()[:16]


@dataclass
class Tried:
    """A proposal with its verdict."""

    proposal: Proposal
    result: EvalResult
    reused: bool = False  # the verdict came from the store, not a new evaluation
    found_at: float = 0.0  # seconds into the search when the verdict came
    confirmed_at: float | None = None  # seconds into the search when the stricter verification passed
    fixes: list["Tried"] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return self.result.verified

    @property
    def time_ms(self) -> float | None:
        t = self.result.candidate_time
        return t.median_ms if t else None
