"""Accuracy grounded in the original: a candidate may round differently, never worse.

Every good rewrite of a float reduction (a warp per row, a tree of shuffles, a one-pass mean
and variance, `rsqrtf`, a fast `exp`) sums in another order, so it cannot match the original's
own rounding bit for bit, and a fixed tolerance is either too strict for it or too loose for a
wrong answer. Both kernels are therefore measured against the original run in double
precision (`evaluator/job/widening.py`):

- an element's error is |x - ref| over the output's scale there, |ref| plus the buffer's mean
  magnitude (relative where the values are large, absolute at the buffer's own scale near zero);
  an output of fewer than SMALL elements has no mean magnitude of its own to speak of (a sum with
  cancellation can be 0.15 where its inputs sum to magnitudes of 17), so its scale is its mean
  magnitude over every input set of the size, and it is judged once they have all been seen;
- the original's worst error over every size and input set of the job is its own accuracy;
- a candidate passes when its worst error is within `FACTOR` times the original's, or within
  `FLOOR_ULPS` units in the last place of the element type, whichever is larger.

A dropped element of a 768-long sum, a skipped row, a stale result or a scale off by a tenth
of a percent are a thousand times the original's error; a reordering is at most a few times.

Where no double-precision run can be had (another element type, code that cannot be promoted,
a reference that disagrees with the original), outputs are compared with the original's
within the element type's default tolerance (`specs.model.DEFAULT_TOLERANCE`, torch.testing's),
its absolute part scaled down with the buffer's magnitude so that small outputs (a softmax of
50,000 columns is all below 1e-3) are not accepted whatever they hold. A spec's own rtol/atol
replace all of this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records import ArgPlan, Check, Mismatch, SizePlan
from .buffers import FLOATS, mean_magnitude, scaled_error
from .packing import launch_dtypes

FACTOR = 4.0  # a candidate may be this many times less accurate than the original ...
FLOOR_ULPS = 16  # ... or within this many units in the last place of the output's scale
GROSS = 64.0  # beyond this many times the bound a candidate fails at once, before the job's end
SANE = 1e-2  # the original further than this from its double run: the promotion changed the function
EPS = {"float32": 2.0 ** -23}
CHECK = "accuracy"
SMALL = 64  # an output of fewer elements is scaled by its magnitude over the size's input sets


@dataclass
class _Worst:
    original: float = 0.0  # the original's worst scaled error over the job
    candidate: float = 0.0
    where: Mismatch | None = None  # the candidate's worst element


@dataclass
class Accuracy:
    """The job's criterion and what it has seen. `grounded` names the buffers judged against the
    double-precision run; the rest are compared with the original within their tolerance."""

    grounded: set[str] = field(default_factory=set)
    why_not: str = ""  # why there is no double-precision run, when outputs could have used one
    worst: dict[str, _Worst] = field(default_factory=dict)
    # outputs whose two runs of the original differed (float atomics add in any order): each run
    # is held to the double-precision run, and so is each of a candidate's
    spread: set[str] = field(default_factory=set)
    candidate_spread: dict[str, Mismatch] = field(default_factory=dict)  # a candidate's two runs differed here
    # small outputs (under SMALL elements), every run kept for the verdict: name -> [(who, plan, seed, got, reference)]
    small: dict[str, list[tuple[str, SizePlan, int, Any, Any]]] = field(default_factory=dict)
    large: dict[str, _Worst] = field(default_factory=dict)  # the same outputs' worsts at sizes of SMALL or more
    judged: dict[str, _Worst] = field(default_factory=dict)  # what the verdict held each buffer to

    def bound(self, name: str) -> float:
        return _bound(self.worst[name])

    def drop(self, why: str) -> None:
        self.grounded, self.why_not = set(), why

    def observe_original(self, torch: Any, plan: SizePlan, expected: dict[str, Any], reference: dict[str, Any]) -> None:
        """The original's error at these inputs joins its worst; a reference far from it (or an
        integer output that differs) is no reference: the criterion falls back."""
        for a in _outputs(plan):
            if a.name in self.grounded:
                err = scaled_error(torch, expected[a.name], reference[a.name])
                worst = float(err.max().item()) if err.numel() else 0.0
                if worst > SANE:
                    i = int(err.argmax().item())
                    self.drop(f"its double-precision run disagrees with it at {plan.label} ({a.name}[{i}]: "
                              f"{_fmt(expected[a.name][i])} against {_fmt(reference[a.name][i])})")
                    return
                w = self.worst.setdefault(a.name, _Worst())
                w.original = max(w.original, worst)
                if a.numel < SMALL:
                    self._keep("original", plan, 0, a, expected[a.name], reference[a.name])
                else:
                    large = self.large.setdefault(a.name, _Worst())
                    large.original = max(large.original, worst)
            elif a.dtype not in FLOATS and not torch.equal(expected[a.name], reference[a.name]):
                self.drop(f"its double-precision run gives another {a.name} at {plan.label}")
                return

    def judge(self, torch: Any, plan: SizePlan, seed: int, arg: ArgPlan, got: Any, reference: Any) -> Mismatch | None:
        """The candidate's error at these inputs joins its worst; a Mismatch when it is already
        far beyond any bound the job could reach (a wrong answer, not rounding)."""
        w = self.worst.setdefault(arg.name, _Worst())
        if arg.numel < SMALL:  # judged at the verdict; what is gross here is gross at its size's typical scale
            self._keep("candidate", plan, seed, arg, got, reference)
            err = scaled_error(torch, got, reference, self._typical(torch, arg.name, plan.label) or None)
        else:
            err = scaled_error(torch, got, reference)
        worst = float(err.max().item()) if err.numel() else 0.0
        mismatch = None
        if worst > w.candidate or w.where is None:
            mismatch = _mismatch(torch, plan, seed, arg, got, reference, err, self.bound(arg.name))
            w.candidate, w.where = worst, mismatch
        if arg.numel >= SMALL:
            large = self.large.setdefault(arg.name, _Worst())
            if worst > large.candidate or large.where is None:
                large.candidate = worst
                large.where = mismatch or _mismatch(torch, plan, seed, arg, got, reference, err, self.bound(arg.name))
        if worst > GROSS * self.bound(arg.name):
            return w.where
        return None

    def _keep(self, who: str, plan: SizePlan, seed: int, arg: ArgPlan, got: Any, reference: Any) -> None:
        self.small.setdefault(arg.name, []).append((who, plan, seed, got.detach().clone(), reference.detach().clone()))

    def _typical(self, torch: Any, name: str, label: str) -> float:
        """A small output's mean magnitude over the input sets of size `label` seen so far (the
        double-precision runs the original was held to)."""
        refs = [r.reshape(-1).to(torch.float64) for who, plan, _, _, r in self.small.get(name, [])
                if who == "original" and plan.label == label]
        return float(mean_magnitude(torch, torch.cat(refs))) if refs else 0.0

    def _rescaled(self, torch: Any, name: str) -> _Worst:
        """A small output's worst errors, the original's and the candidate's, each run scaled by the
        output's mean magnitude over every input set of its size."""
        runs = self.small[name]
        typical = {label: self._typical(torch, name, label) for label in {plan.label for _, plan, _, _, _ in runs}}
        judged, where = _Worst(), None
        for who, plan, seed, got, reference in runs:
            err = scaled_error(torch, got, reference, typical[plan.label])
            worst = float(err.max().item()) if err.numel() else 0.0
            if who == "original":
                judged.original = max(judged.original, worst)
            elif worst >= judged.candidate or where is None:
                judged.candidate, where = worst, (plan, seed, got, reference, err)
        if where is not None:
            plan, seed, got, reference, err = where
            arg = next(a for a in plan.args if a.name == name)
            judged.where = _mismatch(torch, plan, seed, arg, got, reference, err, _bound(judged))
        return judged

    def _held_to(self, torch: Any, name: str) -> _Worst:
        """The worsts a buffer is judged by: its small sizes' rescaled (above), with its large
        sizes' as they were judged; without kept small runs, the job's worsts as they are."""
        w = self.worst[name]
        if torch is None or not self.small.get(name) or w.where is None:
            return w
        judged, large = self._rescaled(torch, name), self.large.get(name)
        if large is not None:
            judged.original = max(judged.original, large.original)
            if large.where is not None and (judged.where is None or large.candidate > judged.candidate):
                judged.candidate, judged.where = large.candidate, large.where
        return judged

    def verdict(self, torch: Any = None) -> Check:
        """Over the whole job: each grounded buffer's worst against its bound. Raises nothing;
        a failing check is returned for the caller to turn into a verdict. `torch`: to judge the
        small outputs, kept until now (without it they are judged as the others)."""
        parts, failed = [], None
        for name in sorted(self.grounded):
            w = self.worst.get(name)
            if w is None:
                continue
            w = self.judged[name] = self._held_to(torch, name)
            bound = _bound(w)
            margin = bound / w.candidate if w.candidate > 0 else float("inf")
            parts.append(f"{name}: worst error {w.candidate:.2g} of its scale, the original's {w.original:.2g}, "
                         f"bound {bound:.2g} ({_decided_by(w)}){'' if margin == float('inf') else f', margin {margin:.3g}x'}")
            if w.candidate > bound and failed is None:
                failed = w
        detail = "against the original run in double precision: " + "; ".join(parts)
        if failed is not None:
            assert failed.where is not None
            return Check(CHECK, "fail", f"{failed.where.describe()}; less accurate than the original, {detail}",
                         failed.where.buffer)
        return Check(CHECK, "pass", detail)

    def compare_tolerance(self, name: str) -> float | None:
        """For checks that compare the candidate with the original itself (chained launches,
        timed runs): a scaled tolerance both errors fit in, or None to use the buffer's own."""
        if name not in self.grounded or name not in self.worst:
            return None
        w = self.worst[name]
        return 2.0 * (self.bound(name) + w.original)


def scalar_dtypes(args: list[ArgPlan]) -> list[str | None]:
    """How a launch passes each parameter: None for a buffer's pointer, a struct's dtype for a
    struct passed by value (gpu/packing.py), else the scalar's type."""
    return launch_dtypes(args)


def _outputs(plan: SizePlan) -> list[ArgPlan]:
    return [a for a in plan.args if a.kind == "buffer" and a.direction != "in"]


def _bound(w: _Worst) -> float:
    return max(FACTOR * w.original, FLOOR_ULPS * EPS["float32"])


def _decided_by(w: _Worst) -> str:
    floor = FLOOR_ULPS * EPS["float32"]
    return f"{FACTOR:g}x the original's" if FACTOR * w.original >= floor else f"{FLOOR_ULPS} units in the last place"


def _mismatch(torch: Any, plan: SizePlan, seed: int, arg: ArgPlan, got: Any, reference: Any, err: Any,
              bound: float) -> Mismatch:
    bad = err > bound
    i = int(err.argmax().item()) if err.numel() else 0
    return Mismatch(check=CHECK, size=plan.label, seed=seed, buffer=arg.name, bad=int(bad.sum().item()),
                    total=arg.numel, max_abs_err=float(err.max().item()) if err.numel() else 0.0,
                    first_index=i // max(arg.lanes, 1), got=_fmt(got[i]), expected=_fmt(reference[i]),
                    unwritten=0, scaled=True)


def to_wide(torch: Any, tensor: Any) -> Any:
    """An input buffer's contents for the double-precision run (float32 -> float64, exactly)."""
    return tensor.to(torch.float64) if tensor.dtype == torch.float32 else tensor.clone()


def _fmt(v: Any) -> str:
    x = v.item() if hasattr(v, "item") else v
    return f"{x:.9g}" if isinstance(x, float) else str(x)

