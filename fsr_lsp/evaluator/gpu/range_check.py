"""The range sets (input_sets.py) judged, with the original as the judge of its own domain.

At one size (the largest test size), each set is run through the original first. It counts
where the original stays finite (no more NaN or inf than on the spec's own inputs) and, output by
output, is judged where the original can be:
- a float output with a double-precision run: where the original is within DOMAIN_ERROR of that
  run, the candidate may be up to the job's accuracy bound, FACTOR times the original's error
  on this set, or RANGE_FLOOR of the output's scale from it, whichever is larger;
- any other float output: where moving the inputs by a few units in the last place moves the
  original by less than a quarter of the tolerance (it is well-conditioned there), the
  candidate must match the original within that tolerance, taken of the output's scale
  (range_tolerance: a spec's per-element `atol` means nothing on inputs scaled x100);
- an integer output: exactly, where the original's integers stay the same in double precision
  (or under that small move): ties a candidate breaks otherwise are its own.
Everywhere the original counts, a candidate giving NaN or inf where the original is finite is
wrong whatever the tolerance. The first set that decides says so in the verdict: the set, the
criterion and the margin. What the original did on a set is kept in the worker across
candidates (the same original, plan, set and seed), so a search pays for it once.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..records import Check, EvalJob, Mismatch, SizePlan
from .accuracy import EPS, FACTOR, FLOOR_ULPS
from .buffers import FLOATS, SCALED_DEFAULT, Where, describe, scaled_error
from .constant_fill import fill_constants
from .common import Failure, JobContext, make_inputs, outputs, seed_for
from .input_sets import SCALARS, InputSet, input_sets, perturbed, probed, reshape, scalar_sets, with_scalars_moved
from .oracle import OracleProblem
from .runs import double_outputs, launch_runs
from .shared import SharedPoison

CHECK = "input range"
DOMAIN_ERROR = 1e-3  # the original this far from its double run (of its scale): not accurate on the set
RANGE_FLOOR = 2.0 ** -13  # a candidate may always be this close to the double run on a range set
SEED_OFFSET = 1000  # range sets' seeds, apart from the spec's own input sets
CACHE_BYTES = 512 << 20  # the original's outputs on range sets kept per worker


@dataclass
class OriginalOnSet:
    """What the original did on one set: the set counts when `out_of_domain` is empty; `judged`
    says per output how a candidate is held ("double", "tolerance", "exact" or "finite": only
    the non-finite rule)."""

    outputs: dict[str, Any]
    double: dict[str, Any] | None = None
    out_of_domain: str = ""
    judged: dict[str, str] = field(default_factory=dict)
    error: dict[str, float] = field(default_factory=dict)  # the original's scaled error, where "double"

    @property
    def nbytes(self) -> int:
        tensors = list(self.outputs.values()) + list((self.double or {}).values())
        return sum(t.numel() * t.element_size() for t in tensors)


def range_plan(job: EvalJob) -> int | None:
    """The size the sets run at: the largest test size within the per-buffer layers' limit
    (long rows matter to a long sum), else the smallest size there is."""
    tests = [i for i, p in enumerate(job.sizes) if p.role == "test" and p.buffer_bytes <= job.defences.layered_max_bytes]
    if tests:
        return max(tests, key=lambda i: job.sizes[i].buffer_bytes)
    others = [i for i, p in enumerate(job.sizes) if p.role != "edge"]
    return min(others, key=lambda i: job.sizes[i].buffer_bytes) if others else None


def check_ranges(ctx: JobContext, index: int, shared: SharedPoison | None) -> Check | None:
    """Every set at `job.sizes[index]`, the candidate held to the original on those that count.
    None when there is nothing to probe (no float input drawn at random) or no candidate."""
    job, base = ctx.job, ctx.job.sizes[index]
    sets = input_sets(base, tuple(job.range_skip)) + scalar_sets(base, tuple(job.range_skip))
    if ctx.candidate is None or not sets or not job.defences.input_ranges:
        return None
    counted: list[InputSet] = []
    left: list[str] = []
    ladder_ended = ""
    for k, which in enumerate(sets):
        if which.scale and ladder_ended:
            left.append(f"{which.key} (past {ladder_ended})")
            continue
        plan = with_scalars_moved(base) if which.key == SCALARS else base
        ctx.report(f"checking {plan.label} ({which.label})")
        seed = seed_for(job, index, SEED_OFFSET + k)
        fill_constants(ctx, seed)  # drawn from the seed, as the cached original's run had them
        inputs = set_inputs(ctx, plan, seed, which)
        original = _original_on(ctx, plan, which, seed, inputs, shared)
        if original.out_of_domain:
            left.append(f"{which.key} ({original.out_of_domain})")
            if which.scale:
                ladder_ended = which.key
            continue
        try:
            got = launch_runs(ctx, "candidate", plan, inputs, "A", 1, shared)[0]
        except Failure as f:
            raise Failure(f.status, f"on {which.label}: {f.message}", check=f.check or CHECK, mismatch=f.mismatch,
                          restart=f.restart, argument=f.argument) from None
        _judge(ctx, plan, which, seed, original, got)
        counted.append(which)
    detail = f"at {base.label}: {', '.join(s.key for s in counted) or 'none'} judged"
    if left:
        detail += f"; left out, outside the original's domain: {'; '.join(left)}"
    ctx.result.range_sets = [s.key for s in counted]
    return Check(CHECK, "pass", detail)


def set_inputs(ctx: JobContext, plan: SizePlan, seed: int, which: InputSet) -> dict[str, Any]:
    """The spec's inputs for `seed`, each probed float input reshaped into the set."""
    torch = ctx.torch
    inputs = make_inputs(ctx.session, plan, seed)
    generator = torch.Generator(device=ctx.session.device)
    generator.manual_seed(seed)
    if which.key == SCALARS:  # the spec's inputs; the arguments moved are in the plan
        return inputs
    for a in probed(plan):
        inputs[a.name] = reshape(torch, a, inputs[a.name], which, generator)
    return inputs


def _original_on(ctx: JobContext, plan: SizePlan, which: InputSet, seed: int, inputs: dict[str, Any],
                 shared: SharedPoison | None) -> OriginalOnSet:
    key = (ctx.original.digest, ctx.wide.digest if ctx.wide is not None else "", bool(ctx.accuracy.grounded),
           _plan_key(plan), which.key, seed, shared is not None)
    cache = _cache(ctx.session)
    found = cache.get(key)
    if found is None:
        found = _run_original(ctx, plan, which, inputs, shared)
        cache.put(key, found)
    return found


def _run_original(ctx: JobContext, plan: SizePlan, which: InputSet, inputs: dict[str, Any],
                  shared: SharedPoison | None) -> OriginalOnSet:
    torch = ctx.torch
    try:
        runs = launch_runs(ctx, "original", plan, inputs, "A", 1, shared)[0]
    except OracleProblem as e:  # it writes outside its buffers on these inputs
        return OriginalOnSet({}, out_of_domain=f"the original {e}".split(": the spec")[0])
    except Failure as f:
        if f.restart:  # it faults on these inputs: the job runs again without the set (evaluator/api.py)
            ctx.result.range_failed = which.key
            raise Failure("crashed", f"the original kernel failed on {which.label} at {plan.label} ({f.message}); "
                                     "fsr runs the check again without that set", check=CHECK, restart=True) from None
        raise
    found = OriginalOnSet({a.name: runs[a.name].clone() for a in outputs(plan)})
    base = ctx.nonfinite.get(plan.label, {})
    for a in outputs(plan):
        if a.dtype in FLOATS:
            bad = int((~found.outputs[a.name].isfinite()).sum().item())
            if bad > base.get(a.name, 0):
                found.out_of_domain = f"the original gives {bad:,} NaN or inf in {a.name}"
                return found
    if ctx.wide is not None and ctx.accuracy.grounded:
        found.double = {name: t.clone() for name, t in double_outputs(ctx, plan, inputs).items()}
    moved: dict[str, Any] | None = None
    for a in outputs(plan):
        original = found.outputs[a.name]
        if a.dtype in FLOATS and found.double is not None and a.name in ctx.accuracy.grounded:
            err = scaled_error(torch, original, found.double[a.name])
            worst = float(err.max().item()) if err.numel() else 0.0
            found.judged[a.name] = "double" if worst <= DOMAIN_ERROR else "finite"
            found.error[a.name] = worst
            continue
        if a.dtype not in FLOATS and found.double is not None:
            found.judged[a.name] = "exact" if torch.equal(original, found.double[a.name]) else "finite"
            continue
        if moved is None:
            moved = _moved_original(ctx, plan, inputs, shared)
        if a.dtype in FLOATS:  # it moves by less than a quarter of what a candidate may differ by
            moved_by = scaled_error(torch, moved[a.name], original)
            stable = float(moved_by.max().item()) <= range_tolerance(a) / 4 if moved_by.numel() else True
            found.judged[a.name] = "tolerance" if stable else "finite"
        else:
            found.judged[a.name] = "exact" if torch.equal(original, moved[a.name]) else "finite"
    return found


def _moved_original(ctx: JobContext, plan: SizePlan, inputs: dict[str, Any], shared: SharedPoison | None) -> dict:
    """The original on the set's inputs moved by a few units in the last place."""
    generator = ctx.torch.Generator(device=ctx.session.device)
    generator.manual_seed(0x5EED)
    moved = dict(inputs)
    for a in probed(plan):
        moved[a.name] = perturbed(ctx.torch, a, inputs[a.name], generator)
    return launch_runs(ctx, "original", plan, moved, "A", 1, shared)[0]


def _judge(ctx: JobContext, plan: SizePlan, which: InputSet, seed: int, original: OriginalOnSet,
           got: dict[str, Any]) -> None:
    torch = ctx.torch
    for a in outputs(plan):
        how = original.judged.get(a.name, "finite")
        expected, mine = original.outputs[a.name], got[a.name]
        if a.dtype in FLOATS:
            _finite_where_original_is(ctx, plan, which, seed, a, mine, expected)
        if how == "double":
            assert original.double is not None
            _held_to_double(ctx, plan, which, seed, a, mine, original)
        elif how in ("tolerance", "exact"):
            m = describe(torch, Where(CHECK, plan.label, seed), a, mine, expected, None,
                         range_tolerance(a) if how == "tolerance" else None)
            if m is not None:
                m.inputs = which.label
                criterion = "exactly" if how == "exact" else "within the tolerance"
                raise Failure("wrong", f"wrong on {which.label}: the candidate's {a.name} differs from the original's "
                                       f"({criterion}; the original is well-conditioned there): {m.describe()}",
                              check=CHECK, mismatch=m, argument=a.name)


def range_tolerance(arg: Any) -> float:
    """How far (of the output's scale, gpu/buffers.py::scaled_error) a candidate's float output
    without a double-precision run may be from the original's on a range set: the element
    type's default, or the spec's rtol where larger. Per-element tolerances do not carry over:
    an `atol` chosen for the spec's inputs is no tolerance on inputs scaled x100, and an element
    near zero by cancellation differs by a reordering's rounding of the large terms."""
    return max(SCALED_DEFAULT.get(arg.dtype, 0.0), arg.rtol if arg.tolerance == "spec" else 0.0)


def _finite_where_original_is(ctx: JobContext, plan: SizePlan, which: InputSet, seed: int, arg: Any, got: Any,
                              expected: Any) -> None:
    bad = expected.isfinite() & ~got.isfinite()
    count = int(bad.sum().item())
    if not count:
        return
    nan = int((bad & got.isnan()).sum().item())
    what = " and ".join(part for part in (f"{nan:,} NaN" if nan else "", f"{count - nan:,} inf" if count - nan else "")
                        if part)
    first = int(bad.nonzero()[0].item())
    m = Mismatch(check=CHECK, size=plan.label, seed=seed, buffer=arg.name, bad=count, total=arg.numel, max_abs_err=None,
                 first_index=first // max(arg.lanes, 1), got=f"{got[first].item():.6g}",
                 expected=f"{expected[first].item():.6g}", inputs=which.label)
    raise Failure("wrong", f"wrong on {which.label}: {arg.name} holds {what} where the original is finite, at "
                           f"{plan.label} (first at [{m.first_index}]: got {m.got}, the original {m.expected})",
                  check=CHECK, mismatch=m, argument=arg.name)


def _held_to_double(ctx: JobContext, plan: SizePlan, which: InputSet, seed: int, arg: Any, got: Any,
                    original: OriginalOnSet) -> None:
    torch = ctx.torch
    assert original.double is not None
    reference = original.double[arg.name]
    err = scaled_error(torch, got, reference)
    worst = float(err.max().item()) if err.numel() else 0.0
    base = ctx.accuracy.bound(arg.name) if arg.name in ctx.accuracy.worst else FLOOR_ULPS * EPS["float32"]
    own = original.error.get(arg.name, 0.0)
    bound = max(base, FACTOR * own, RANGE_FLOOR)
    if worst <= bound:
        return
    i = int(err.argmax().item())
    m = Mismatch(check=CHECK, size=plan.label, seed=seed, buffer=arg.name, bad=int((err > bound).sum().item()),
                 total=arg.numel, max_abs_err=worst, first_index=i // max(arg.lanes, 1), got=f"{got[i].item():.9g}",
                 expected=f"{reference[i].item():.9g}", scaled=True, inputs=which.label)
    raise Failure("wrong", f"wrong on {which.label}: {arg.name} is {worst:.3g} of its scale from the original run in "
                           f"double precision, where the original is {own:.3g} (bound {bound:.3g}, exceeded "
                           f"{worst / bound:.3g}x): {m.bad:,} of {m.total:,} elements at {plan.label}; worst at "
                           f"[{m.first_index}]: got {m.got}, in double precision {m.expected}",
                  check=CHECK, mismatch=m, argument=arg.name)


def _plan_key(plan: SizePlan) -> tuple:
    return (plan.label, tuple((a.name, a.kind, a.dtype, a.lanes, a.length, a.direction, a.init, a.source, a.offset,
                               a.value if a.kind == "scalar" else None) for a in plan.args),
            plan.original.grid, plan.original.block, plan.original.smem)


class _Kept:
    """The original's outcomes on range sets, least recently used first, within CACHE_BYTES (the
    running total kept: summing every entry's tensors on each insert cost a search more each job)."""

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple, tuple[OriginalOnSet, int]] = OrderedDict()
        self.nbytes = 0

    def get(self, key: tuple) -> OriginalOnSet | None:
        if key not in self.entries:
            return None
        self.entries.move_to_end(key)
        return self.entries[key][0]

    def put(self, key: tuple, found: OriginalOnSet) -> None:
        size = found.nbytes
        self.entries[key] = (found, size)
        self.nbytes += size
        while self.nbytes > CACHE_BYTES and len(self.entries) > 1:
            _, (_, dropped) = self.entries.popitem(last=False)
            self.nbytes -= dropped


_CACHES: "weakref.WeakKeyDictionary[Any, _Kept]" = weakref.WeakKeyDictionary()


def _cache(session: Any) -> _Kept:
    """The original's outcomes on range sets in this worker's session."""
    if session not in _CACHES:
        _CACHES[session] = _Kept()
    return _CACHES[session]
