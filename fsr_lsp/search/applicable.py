"""Which verified rewrite to put into the file: the fastest, unless it needs a launch that the
program's launches cannot be changed to safely (apply.py's `launch_edits` leaves a note then, and
a launch in another file is out of reach). Applied as it is, that rewrite would run under the
program's old launch, which it was never verified under: the program would compute something
else (or crash) until someone edits the launch. So the fastest win that runs under the
program's launches as they are is applied instead, and the faster one is named with the launch
it needs. Where no win runs under them, nothing is applied: the file is left as it is, and the
user is told which launch the fastest needs and where its code is."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .apply import ApplyError, Rewrite, rewrite_if_unchanged, rewrite_with_block
from .outcome import SearchOutcome, Tried, ranked


@dataclass(frozen=True)
class Applicable:
    tried: Tried  # the candidate applied
    rewrite: Rewrite
    instead: str = ""  # why not the fastest, or ''


def applicable(current: str, searched: str, kernel: str, draft: str | None, outcome: SearchOutcome,
               min_gain: float = 0.0, launched_from: str = "") -> Applicable:
    """The rewrite to apply to `current` (the file now); raises apply.ApplyError as the rewrite
    functions do (the kernel changed, or is gone), and where no verified win runs under the
    program's launches. `min_gain`: the search's, which any win applied instead of the fastest
    must clear too. `launched_from`: where the program launches the kernel when its spec came
    from that launch (`other.cu:85`, a captured launch), '' when the spec is the user's own."""
    best = outcome.best
    assert best is not None

    def rewrite_of(t: Tried) -> Rewrite:
        candidate = t.proposal.source
        rewrite = rewrite_with_block(current, searched, kernel, candidate, draft) if draft \
            else rewrite_if_unchanged(current, searched, kernel, candidate)
        return _out_of_reach(rewrite, kernel, launched_from)

    fastest = rewrite_of(best)
    if not fastest.notes:
        return Applicable(best, fastest)
    for t in ranked(outcome.tried):
        if t is best or not _as_trusted(t, best, min_gain):
            continue
        rewrite = rewrite_of(t)
        if rewrite.notes:
            continue
        why = (f"the fastest rewrite ({best.result.speedup:.2f}x) needs a launch fsr could not write "
               f"({'; '.join(fastest.notes)}): applied the fastest that runs under the program's launches as they are "
               f"({t.result.speedup:.2f}x); change the launch and search again to take the other")
        return Applicable(t, rewrite, why)
    raise ApplyError(f"every verified win ({best.result.speedup:.2f}x the fastest) needs a launch fsr could not write "
                     f"({'; '.join(fastest.notes)}), and under the program's launch as it is none was verified: the "
                     f"file is left as it is. Change the launch as that says and search again, or take the rewrite "
                     f"by hand with its launch (`fsr history FILE -k {kernel} --source` shows its code)")


def _out_of_reach(rewrite: Rewrite, kernel: str, launched_from: str) -> Rewrite:
    """The rewrite with a note where it changes the launch but the launch its spec came from is
    not in this file (none of the file's launches was changed): the program would go on launching
    it as before."""
    if not rewrite.launch_changed or rewrite.notes or rewrite.relaunched or not launched_from:
        return rewrite
    note = (f"{kernel} is launched at {launched_from}, which fsr does not edit (it changes launches only in the "
            f"kernel's own file): set the launch the rewrite's @fsr block names there")
    return dataclasses.replace(rewrite, notes=(note,))


def _as_trusted(t: Tried, best: Tried, min_gain: float) -> bool:
    """A win beyond the noise and the search's minimum gain, verified as strictly as the winner
    (its sanitizers too, where the winner's ran)."""
    return t.result.is_win(min_gain) and (t.result.confirmed or not best.result.confirmed)
