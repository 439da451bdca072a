"""Input sets that probe the range a caller may pass, beyond the spec's one distribution.

A rewrite that drops a numerically necessary step is right on narrow data and wrong on the
data real callers pass: a softmax without its max subtracted is exact for logits under 20 and
NaN past 88, a variance taken as E[x^2] - mean^2 is right on zero-mean rows and cancels to
noise when the mean is far above the spread, a tanh built from `expf(2x)` overflows, a long sum
accumulated in half precision stalls at 2048 on values of one sign. So each float input is also
drawn as callers may pass it: scaled up (a ladder, x10 and on, as far as the original stays
finite), with a large common offset, of one sign, constant (ties), small values with a few large
outliers, zeros and subnormals among ordinary values.

Which of these sets count is the original's to say (range_check.py): a set counts where the
original stays finite and, where it can be judged, accurate. A distribution the spec declares
(`uniform(lo, hi)`, `normal(mean, std)`) or a `domain(lo, hi)` is the user's contract: its sets
are clamped into those bounds, stressing the edges and never passing them. Integer inputs,
`fill`, `captured()` and texture inputs keep what the spec gives them.

A float argument the spec gives as a number (`alpha = 1.0`, a run's `scale = 0.125`) is one value
of many a caller may pass: a rewrite that folds it into a constant, or drops a multiply by it,
is right at that value only. So one more set moves each such argument (`scalars`), judged by
the original like the others. An argument the spec gives as an expression over the sizes
(`inv_n = "1.0 / n"`) keeps it: that relation is the spec's contract.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..records import ArgPlan, SizePlan
from .buffers import FLOATS, storage_dtype

OFFSET = 1000.0  # spreads: the common offset's distance from the values' own spread
OUTLIER = 100.0  # spreads: how far the outliers lie ...
OUTLIER_EVERY = 256  # ... and one element in this many is one
SMALL = 1e-3  # the small values around the outliers, scaled down by this
LADDER = {"float16": (10.0, 100.0, 1000.0)}  # the scales tried, in order, for each element type ...
LADDER_DEFAULT = (10.0, 100.0, 1e4, 1e8)  # ... where not given above


@dataclass(frozen=True)
class InputSet:
    key: str  # short and stable: "x100", "offset", "negative"
    label: str  # for verdicts: "inputs scaled x100"
    scale: float = 0.0  # a rung of the ladder: the original leaving its domain here ends the ladder


BASE_SETS = (
    InputSet("offset", f"inputs with a large common offset ({OFFSET:g} times their spread)"),
    InputSet("negative", "inputs of one sign (all negative)"),
    InputSet("positive", "inputs of one sign (all positive)"),
    InputSet("constant", "constant inputs (every element the same: ties)"),
    InputSet("outliers", f"small inputs with outliers (one in {OUTLIER_EVERY} at {OUTLIER:g} times the spread)"),
    InputSet("zeros", "inputs with zeros and subnormals among them"),
)


SCALAR_MOVE = 1.37  # a free float argument's value times this (0 becomes 0.37): same sign, another value
SCALARS = "scalars"


def free_scalars(plan: SizePlan) -> list[ArgPlan]:
    """The float arguments the spec gives as numbers."""
    return [a for a in plan.args if a.kind == "scalar" and a.free and isinstance(a.value, (int, float))]


def moved_value(value: float) -> float:
    return value * SCALAR_MOVE if value else SCALAR_MOVE - 1.0


def scalar_sets(plan: SizePlan, skip: tuple[str, ...] = ()) -> list[InputSet]:
    """The set moving the free float arguments, where there are any."""
    free = free_scalars(plan)
    if not free or SCALARS in skip:
        return []
    moved = ", ".join(f"{a.name} = {moved_value(float(a.value)):.6g} for {float(a.value):.6g}"  # type: ignore[arg-type]
                      for a in free[:4])
    return [InputSet(SCALARS, f"other values of its float arguments ({moved}{', ...' if len(free) > 4 else ''})")]


def with_scalars_moved(plan: SizePlan) -> SizePlan:
    """`plan` with every free float argument moved (the set `scalars`)."""
    free = {a.name for a in free_scalars(plan)}
    args = [dataclasses.replace(a, value=moved_value(float(a.value))) if a.name in free else a  # type: ignore[arg-type]
            for a in plan.args]
    return dataclasses.replace(plan, args=args)


def probed(plan: SizePlan) -> list[ArgPlan]:
    """The inputs the sets reshape: float buffers the kernel reads, drawn at random."""
    return [a for a in plan.args if a.kind == "buffer" and a.direction != "out" and a.dtype in FLOATS
            and a.init is not None and a.init.kind in ("normal", "uniform")]


def input_sets(plan: SizePlan, skip: tuple[str, ...] = ()) -> list[InputSet]:
    """The sets for this plan, cheapest to tell apart first: the first rungs of the ladder, then
    the shapes, then the far rungs. None when no input is probed. Where every probed input is
    bounded, the far rungs are left out: clamped, they are all edges, as x100 already is."""
    args = probed(plan)
    if not args:
        return []
    ladder = min((LADDER.get(a.dtype, LADDER_DEFAULT) for a in args), key=len)
    bounded = all(a.init is not None and a.init.bounds is not None for a in args)
    rungs = [InputSet(f"x{_g(k)}", f"inputs scaled x{_g(k)}", k) for k in ladder]
    near, far = rungs[:2], ([] if bounded else rungs[2:])
    shapes = [s for s in BASE_SETS if not (s.key == "positive" and all(_one_signed(a, 1) for a in args))
              and not (s.key == "negative" and all(_one_signed(a, -1) for a in args))]
    return [s for s in near + shapes + far if s.key not in skip]


def reshape(torch: Any, arg: ArgPlan, base: Any, which: InputSet, generator: Any) -> Any:
    """`base` (the spec's draw for `arg`, as stored) reshaped into the set `which`, clamped into
    the spec's bounds and the element type's finite range, stored as the buffer stores it."""
    init = arg.init
    assert init is not None
    x = base.to(torch.float64)
    center, spread = _center(init), _spread(init)
    u = torch.rand(x.shape, generator=generator, device=x.device, dtype=torch.float64)
    if which.scale:
        y = x * which.scale
    elif which.key == "offset":
        y = x + OFFSET * max(spread, abs(center))
    elif which.key == "negative":
        y = -x.abs()
    elif which.key == "positive":
        y = x.abs()
    elif which.key == "constant":
        y = torch.full_like(x, center + 0.75 * spread)
    elif which.key == "outliers":
        y = center + (x - center) * SMALL
        far = center + OUTLIER * spread * (1.0 + u) * torch.where(u < 0.5, -1.0, 1.0)
        picked = torch.rand(x.shape, generator=generator, device=x.device, dtype=torch.float64) < 1.0 / OUTLIER_EVERY
        if y.numel():
            picked[0] = True  # one at least, in any size
        y = torch.where(picked, far, y)
    elif which.key == "zeros":
        tiny = torch.finfo(storage_dtype(torch, arg.dtype)).tiny / 16  # a subnormal of the type
        y = torch.where(u < 0.25, torch.zeros_like(x), torch.where(u < 0.5, x.sign() * tiny * (1 + u), x))
    else:
        raise ValueError(f"no input set {which.key!r}")
    bounds = init.bounds
    if bounds is not None:
        y = y.clamp(*bounds)
    top = torch.finfo(storage_dtype(torch, arg.dtype)).max
    return y.clamp(-top, top).to(storage_dtype(torch, arg.dtype))


def perturbed(torch: Any, arg: ArgPlan, values: Any, generator: Any) -> Any:
    """`values` moved by a few units in the last place of the element type, each its own way:
    an original whose outputs follow such a move beyond the comparison's tolerance is
    ill-conditioned on this set, and no tolerance can tell its rounding from a candidate's."""
    x = values.to(torch.float64)
    ulps = 8 * float(torch.finfo(storage_dtype(torch, arg.dtype)).eps)
    u = torch.rand(x.shape, generator=generator, device=x.device, dtype=torch.float64) * 2 - 1
    y = x * (1 + ulps * u)
    bounds = arg.init.bounds if arg.init is not None else None
    if bounds is not None:
        y = y.clamp(*bounds)
    return y.to(values.dtype)


def _center(init: Any) -> float:
    return init.lo if init.kind == "normal" else (init.lo + init.hi) / 2


def _spread(init: Any) -> float:
    return max(abs(init.hi) if init.kind == "normal" else (init.hi - init.lo) / 2, 1e-30)


def _one_signed(arg: ArgPlan, sign: int) -> bool:
    """Whether every value the spec draws for `arg` already has this sign: that set is the base."""
    init = arg.init
    assert init is not None
    low, high = (init.lo - 6 * init.hi, init.lo + 6 * init.hi) if init.kind == "normal" else (init.lo, init.hi)
    if init.bounds is not None:
        low, high = max(low, init.bounds[0]), min(high, init.bounds[1])
    return low >= 0 if sign > 0 else high <= 0


def _g(k: float) -> str:
    return f"{k:g}" if k < 1e4 else f"10^{len(str(int(k))) - 1}"
