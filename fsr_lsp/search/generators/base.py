"""The generator interface: propose rewrites for a round, fix a failed one."""

from __future__ import annotations

from typing import Protocol

from ..context import RoundContext
from ..proposal import Proposal, Tried


class GeneratorError(RuntimeError):
    """The generator cannot produce anything (endpoint down, retries exhausted); the message
    is for the user."""


class Generator(Protocol):
    name: str

    def propose(self, ctx: RoundContext, n: int) -> list[Proposal]:
        """Up to n new proposals. May return fewer (or none when it has run out of ideas)."""
        ...

    def fix(self, ctx: RoundContext, failed: Tried) -> Proposal | None:
        """A corrected version of a failed candidate, or None when it cannot fix it."""
        ...
