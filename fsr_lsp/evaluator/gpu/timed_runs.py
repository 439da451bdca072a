"""The timed runs' own check: each repetition's outputs against the original's on the same fresh
inputs, and what a disagreement must show to pass. A stale, cached or skipped result is far
from both kernels' errors; rounding (a sum near zero, float atomics now and then far from their
usual) is not, and is told apart by drawing the repetition's inputs again."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .accuracy import EPS, FACTOR, FLOOR_ULPS
from .buffers import count_bad, refill, scaled_error
from .common import Failure, JobContext, buffers_of, outputs
from .runs import double_outputs, launch_runs


@dataclass
class Repetition:
    """One repetition as the candidate saw it: the generator's state before its inputs were
    drawn (to draw them again), its elements out of tolerance, and per output judged against
    the double-precision run, its largest difference from the original."""

    state: Any
    bad: Any
    bad_by: dict[str, Any] = field(default_factory=dict)
    apart: dict[str, Any] = field(default_factory=dict)  # small float outputs: the largest difference seen
    timed: dict[str, Any] = field(default_factory=dict)  # ... and the candidate's output in that run


# Outputs of at most this many elements may have a scale near zero (a sum whose inputs cancel):
# their repetitions are judged again; a larger output's scale is its mean magnitude, which does not.
SMALL_OUTPUT = 4096
AGAIN_RUNS = 4  # runs of a nondeterministic original on a repetition's inputs drawn again
SAMPLED_OUT = 0.05  # at most this share of the repetitions (and at least 2) may be held to their own errors
# ... and at least this many where every output apart is one the original's own runs differ in (float
# atomics): its rounding leaves the tolerance more often, each such run judged again all the same
SPREAD_JUDGED = 8


def held_to_their_errors(ctx: JobContext, bench: Any, pristine: dict[str, Any], generator: Any, reps: list[Repetition],
                         count: int) -> str:
    """Repetitions where the candidate's outputs left the tolerance measured in verification,
    each held to the rule verification holds the first runs to: its inputs drawn again, both
    kernels run once more beside the original in double precision, the candidate within its
    bound of that run (FACTOR times the original's error on these very inputs, or the job's
    bound), and the difference seen in the timed run no larger than the two kernels' errors
    there can make it. A sum that happens to be near zero has a tiny scale and the same rounding:
    that passes. An output held to the spec's own tolerance (no double-precision run judges it)
    is held to the original's own spread instead, where the original's runs differ (atomics):
    the user's tolerance cannot hold a kernel to less than the original gives against itself.
    A stale, cached or skipped result is far from both: that fails, as do disagreements too many
    to be such chance, from an original that gives the same result every run, or in outputs too
    large for their scale to collapse (SMALL_OUTPUT).
    Returns what the check's detail adds; raises the verdict otherwise."""
    flagged = [r for r in reps if int(r.bad.item())]
    limit = max(2, int(SAMPLED_OUT * len(reps)))
    apart = {name for r in flagged for name, n in r.bad_by.items() if int(n.item())}
    if apart and apart <= ctx.accuracy.spread:
        limit = max(limit, SPREAD_JUDGED)
    if len(flagged) > limit:
        problem = f" in {len(flagged)} of {len(reps)} runs, too many to be rounding on chance inputs"
    elif any(int(n.item()) for r in flagged for name, n in r.bad_by.items() if name not in r.apart):
        problem = ""
    else:
        found = next((p for p in (_judged_again(ctx, bench, pristine, generator, r) for r in flagged) if p), None)
        if found is None:
            return (f"; {len(flagged)} of {len(reps)} runs apart beyond the verification's tolerance, each within the "
                    "original's own error on its inputs drawn again")
        problem = found
    raise Failure("wrong", f"{count} output elements of the timed runs differ from the original's on the same fresh "
                           f"inputs{problem}: the candidate caches results across launches, skips work, or depends on "
                           "state left by earlier runs", check="timed runs verified")


def _judged_again(ctx: JobContext, bench: Any, pristine: dict[str, Any], generator: Any, rep: Repetition) -> str:
    """One repetition's inputs drawn again and both kernels held to the double-precision run on
    them (an output the spec gives its own tolerance: to the original's own spread there); what
    fails, or ''."""
    torch = ctx.torch
    generator.set_state(rep.state)
    for a in buffers_of(bench):
        if a.name in pristine:
            refill(torch, pristine[a.name], a, generator)
    inputs = {name: t.clone() for name, t in pristine.items()}
    flagged = {name: apart for name, apart in rep.apart.items() if int(rep.bad_by[name].item())}
    grounded = {name for name in flagged if ctx.wide is not None and ctx.accuracy.compare_tolerance(name) is not None}
    double = double_outputs(ctx, bench, inputs) if grounded else {}
    own_tolerance = len(grounded) < len(flagged)  # some output is judged by the kernels' own spreads
    # an original that rounds differently each run (atomics) is run a few times: its error is a spread
    runs = AGAIN_RUNS if ctx.accuracy.spread or own_tolerance else 1
    originals = [launch_runs(ctx, "original", bench, inputs, "A", 1, None)[0] for _ in range(runs)]
    candidate = launch_runs(ctx, "candidate", bench, inputs, "B", 1, None)[0]
    again = launch_runs(ctx, "candidate", bench, inputs, "A", 1, None)[0] if own_tolerance else None
    for name, apart in flagged.items():
        if name not in grounded:
            arg = next(a for a in outputs(bench) if a.name == name)
            problem = _within_own_spread(torch, arg, apart, originals, candidate, again)
            if problem:
                return problem
            continue
        own = max(float(scaled_error(torch, o[name], double[name]).max().item()) for o in originals)
        mine = float(scaled_error(torch, candidate[name], double[name]).max().item())
        bound = max(ctx.accuracy.bound(name), FACTOR * own)
        if not mine <= bound:
            return (f" (drawn again, {name} is {mine:.3g} of its scale from the double-precision run, where the "
                    f"original is {own:.3g}: bound {bound:.3g})")
        timed = rep.timed.get(name)
        if timed is not None and float(scaled_error(torch, timed, double[name]).max().item()) <= bound:
            continue  # what the candidate gave in the timed run is what these inputs give, to its bound: the
            # disagreement was the original's rounding there (float atomics now and then far from their usual)
        errors = max(largest_difference(torch, o[name], double[name]) for o in originals) + \
            largest_difference(torch, candidate[name], double[name])
        if not math.isfinite(float(errors.item())):  # a NaN or infinity the double-precision run has not: no bound
            return f" (drawn again, {name} is not finite where the double-precision run is: nothing bounds the difference)"
        scale = double[name].double().abs().max()
        allowed = float((FACTOR * errors + FLOOR_ULPS * EPS["float32"] * scale).item())
        seen = float(apart.item())
        if not seen <= allowed:
            return (f" ({name} was {seen:.3g} apart; on the same inputs drawn again both kernels are within {allowed:.3g}"
                    " of the double-precision run together: the timed run's output was not computed from its inputs)")
    return ""


def _within_own_spread(torch: Any, arg: Any, apart: Any, originals: list[dict[str, Any]],
                       candidate: dict[str, Any], again: dict[str, Any] | None = None) -> str:
    """An output held to the spec's tolerance, judged again on its inputs drawn again: the
    original run several times must differ from itself (else the timed run's disagreement is the
    candidate's alone), the candidate must lie within the spec's tolerance or FACTOR times that
    spread of the original, and the timed run's difference may exceed the candidate's distance
    from the original by no more than FACTOR times the two kernels' own spreads (the candidate's
    from its second run, `again`). '' when it holds."""
    name = arg.name
    first = originals[0][name]
    own = max(float(largest_difference(torch, o[name], first).item()) for o in originals[1:])
    seen = float(apart.item())
    if not own > 0 or not math.isfinite(own):
        return (f" ({name} was {seen:.3g} apart; drawn again, the original gives the same {name} every run: the timed "
                "run's disagreement is the candidate's)")
    mine = float(largest_difference(torch, candidate[name], first).item())
    if not (mine <= FACTOR * own or not int(count_bad(torch, candidate[name], first, arg).item())):
        return (f" (drawn again, {name} is {mine:.3g} from the original's, whose own runs differ by {own:.3g}: "
                f"bound {FACTOR * own:.3g})")
    spread = float(largest_difference(torch, again[name], candidate[name]).item()) if again is not None else 0.0
    allowed = mine + FACTOR * (own + spread)
    if not seen <= allowed:
        return (f" ({name} was {seen:.3g} apart; on the same inputs drawn again the candidate is {mine:.3g} from the "
                f"original, whose runs differ by {own:.3g} (the candidate's by {spread:.3g}): within {allowed:.3g} "
                "together, the timed run's output was not computed from its inputs)")
    return ""


def largest_difference(torch: Any, a: Any, b: Any) -> Any:
    """max |a - b| in float64 on the device: equal values (the same infinity) and NaN against NaN
    count as 0, a NaN or an infinity against anything else as infinite. (An original that writes
    the same NaN every run has no spread there: counted infinite, it would excuse any difference.)"""
    x, y = a.double(), b.double()
    d = (x - y).abs()
    same = (x == y) | (x.isnan() & y.isnan())
    d = torch.where(same, torch.zeros_like(d), torch.nan_to_num(d, nan=float("inf")))
    return d.max() if d.numel() else torch.zeros((), dtype=torch.float64, device=d.device)
