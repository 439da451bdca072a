"""Which verified rewrite to put into the file: the fastest, unless it needs a launch that the
file's own `<<<...>>>` lines cannot be changed to safely (apply.py's `launch_edits` leaves a note
then). Applied as it is, that rewrite would run under the program's old launch, which it was
never verified under: the program would compute something else until someone edits the launch.
So the fastest win that runs under the file's launches as they are is applied instead, and the
faster one is named with the launch it needs. Where no win runs under them, the fastest is
applied with its notes (what to change, and where), as before."""

from __future__ import annotations

from dataclasses import dataclass

from .apply import Rewrite, rewrite_if_unchanged, rewrite_with_block
from .outcome import SearchOutcome, Tried, ranked


@dataclass(frozen=True)
class Applicable:
    tried: Tried  # the candidate applied
    rewrite: Rewrite
    instead: str = ""  # why not the fastest, or ''


def applicable(current: str, searched: str, kernel: str, draft: str | None, outcome: SearchOutcome,
               min_gain: float = 0.0) -> Applicable:
    """The rewrite to apply to `current` (the file now); raises apply.ApplyError as the rewrite
    functions do (the kernel changed, or is gone). `min_gain`: the search's, which any win
    applied instead of the fastest must clear too."""
    best = outcome.best
    assert best is not None

    def rewrite_of(t: Tried) -> Rewrite:
        candidate = t.proposal.source
        return rewrite_with_block(current, searched, kernel, candidate, draft) if draft \
            else rewrite_if_unchanged(current, searched, kernel, candidate)

    fastest = rewrite_of(best)
    if not fastest.notes:
        return Applicable(best, fastest)
    for t in ranked(outcome.tried):
        if t is best or not _as_trusted(t, best, min_gain):
            continue
        rewrite = rewrite_of(t)
        if rewrite.notes:
            continue
        why = (f"the fastest rewrite ({best.result.speedup:.2f}x) needs a launch fsr could not write into this file "
               f"({'; '.join(fastest.notes)}): applied the fastest that runs under the file's launches as they are "
               f"({t.result.speedup:.2f}x); change the launch and search again to take the other")
        return Applicable(t, rewrite, why)
    return Applicable(best, fastest)


def _as_trusted(t: Tried, best: Tried, min_gain: float) -> bool:
    """A win beyond the noise and the search's minimum gain, verified as strictly as the winner
    (its sanitizers too, where the winner's ran)."""
    return t.result.is_win(min_gain) and (t.result.confirmed or not best.result.confirmed)
