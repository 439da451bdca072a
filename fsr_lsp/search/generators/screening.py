"""Round 0's structural rewrites in the order their screened times give, for every generator
that proposes them (the tuner, and the model's generator, whose first round is fsr's own
rewrites): a rewrite that loses on this GPU never holds a slot ahead of one that wins."""

from __future__ import annotations

from ...evaluator.records import EvalResult
from ..context import RoundContext
from ..proposal import Proposal

# A structural rewrite screened more than this much slower than the original is dropped: beyond
# the screen's noise (a few percent at the bench size), not a near-tie a full timing may reverse.
LOSS_MARGIN = 0.05
# One run of the original past this is slow: a screen times the candidate alone (the original's runs,
# repeated for every configuration screened, would cost more than the screen), and round 0 verifies
# only the fastest screened rewrite, so that a first win waits on one verification.
SLOW_ORIGINAL_MS = 20.0
SCREEN_MARGIN = 0.1  # screened within this of the fastest: near enough to verify beside it
FIRST_VERIFIED = 2  # structural rewrites verified at once in round 0, at most


def screened_order(ctx: RoundContext, structural: list[Proposal], losers: dict[str, str],
                   screened: dict[str, float] | None = None) -> list[Proposal]:
    """The structural rewrites by their screened time at the bench size, fastest first; one
    that screens clearly slower than the original (a tile that loses on this GPU) is added to
    `losers`, its key to its note (the caller drops it for the whole search, and may say so to a
    model), and left out. One the screen could not
    time (it failed the screen's check, or did not compile) goes last: its full verdict says
    why. Without a screen, as they came. Screening results are never verdicts. `screened` gets
    each timed one's time as a share of the original's, by key."""
    screened = {} if screened is None else screened
    if ctx.screen is None or not structural:
        return structural
    results = ctx.screen(structural)
    if len(results) != len(structural) or any(r.status == "cancelled" for r in results):
        return structural  # as they came: the search is ending
    timed: list[tuple[float, Proposal]] = []
    untimed: list[Proposal] = []
    dropped = 0
    for p, r in zip(structural, results):
        ms = screened_ms(r, ctx.baseline_ms)
        if ms is not None and ctx.baseline_ms > 0:
            ratio = ms / ctx.baseline_ms
            # under a fixed launch, one that keeps it is all that can be applied: its full timing decides
            if ratio > 1 + LOSS_MARGIN and not (ctx.launch_fixed and p.keeps_launch):
                losers[p.key] = p.note or p.generator
                dropped += 1
            else:
                timed.append((ratio, p))
        else:
            untimed.append(p)
    timed.sort(key=lambda t: t[0])
    for ratio, p in timed:
        screened[p.key] = ratio
    if ctx.note:
        kept = ", ".join(f"{1 / ratio:.2f}x" for ratio, _ in timed)
        ctx.note(f"structural rewrites screened: {len(timed)} kept ({kept or 'none'}), "
                 f"{dropped} slower than the original dropped")
    return [p for _, p in timed] + untimed


def screened_ms(r: EvalResult, baseline_ms: float) -> float | None:
    """A screen's time for the candidate, on the baseline's scale: relative to the original timed
    beside it (runs on a busy GPU stay comparable), or as timed alone where the original was too
    slow to run beside it. None where the screen failed or could not time it."""
    if not r.screened or r.candidate_time is None:
        return None
    if r.passed_screen and r.original_time is not None:
        return r.candidate_time.median_ms / r.original_time.median_ms * baseline_ms
    return r.candidate_time.median_ms if r.status == "timed" and r.original_time is None else None


def first_to_verify(ctx: RoundContext, ranked: list[Proposal], screened: dict[str, float]) -> list[Proposal]:
    """Round 0's structural rewrites (in `screened_order`'s order) to verify at once: the fastest
    screened, and the next where it screened within SCREEN_MARGIN of it (only the fastest where one
    run of the original is slow, so that a first win waits on one verification), then those the
    screen could not time (their full verdicts say why). The others wait for round 1, where a
    generator verifies one only if it screened faster than the leader."""
    timed = [p for p in ranked if p.key in screened]
    if not timed:
        return ranked
    best = screened[timed[0].key]
    near = [p for p in timed if screened[p.key] <= best * (1 + SCREEN_MARGIN)]
    untimed = [p for p in ranked if p.key not in screened]
    chosen = near[:1 if ctx.baseline_ms > SLOW_ORIGINAL_MS else FIRST_VERIFIED]
    if ctx.launch_fixed and not any(p.keeps_launch for p in chosen):
        # only a rewrite under the program's own launch can be applied: its fastest is verified too
        chosen += [p for p in timed if p.keeps_launch][:1]
    return chosen + untimed
