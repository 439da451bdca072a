"""The candidate on one input set, against the original's runs there: its outputs (poisoned two
ways: unwritten elements keep the poison), held to the original's double-precision run or to
its outputs; what it prints; its inputs left alone; K launches back to back; two runs agreeing;
and the torch reference where the spec has one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..records import SizePlan
from .buffers import Where, describe, identical
from .common import Failure, JobContext, inputs_only, outputs
from .oracle import kept_poison
from .printed import Printed, printed_difference
from .runs import launch_runs
from .shared import SharedPoison

NAN_HINT = ("; NaN where the original has a number: it read memory nothing wrote (shared memory is filled with "
            "NaN before each launch, and every buffer sits between NaN canaries)")


@dataclass(frozen=True)
class OriginalRuns:
    """The original's on one input set: outputs after each chained launch, the torch reference's,
    the double-precision run's, what it printed (each chained launch's, and its second run's)."""
    expected: list[dict]
    reference: dict | None
    double: dict | None
    printed: tuple[list[Printed], Printed]


def check_candidate(ctx: JobContext, plan: SizePlan, inputs: dict, seed: int, shared: SharedPoison | None,
                    original: OriginalRuns) -> None:
    """Every check of the candidate on these inputs; raises the first that fails."""
    torch, expected, reference, double = ctx.torch, original.expected, original.reference, original.double
    runs = launch_runs(ctx, "candidate", plan, inputs, "A", len(expected), shared)
    chained, again = original.printed
    repeats = chained[0].same_as(again)  # the original prints the same on the same inputs
    for k, printed in enumerate(ctx.printed):  # every chained launch, the first against both of the original's runs
        _compare_printed(ctx, plan, seed, printed, chained[k], again if k == 0 or not repeats else chained[k])
    second = launch_runs(ctx, "candidate", plan, inputs, "B", 1, shared)[0]
    _compare(ctx, plan, runs[0], second, expected[0], seed, double)
    for snapshot in (runs[0], runs[-1]):
        for a in inputs_only(plan):
            if not torch.equal(snapshot[a.name], inputs[a.name]):
                changed = int((snapshot[a.name] != inputs[a.name]).sum().item())
                raise Failure("wrong", f"the candidate modifies input {a.name} ({changed} elements) at {plan.label}",
                              check="inputs unchanged")
    for k in range(1, len(runs)):
        for a in outputs(plan):
            # rounding adds up launch after launch in an output they accumulate into (float atomics: the
            # original's own error at launch k+1 is up to k+1 times its first's); a skipped or cached
            # launch is a whole launch's work apart, far beyond it
            tolerance = ctx.accuracy.compare_tolerance(a.name)
            m = describe(torch, Where("chained launches", plan.label, seed), a, runs[k][a.name], expected[k][a.name], None,
                         tolerance * (k + 1) if tolerance is not None else None)
            if m is not None:
                raise Failure("wrong", f"after launch {k + 1} of {len(runs)} back to back on the same buffers, the "
                                       "candidate's output differs from the original's: it depends on what an earlier "
                                       f"launch left behind, or skips work it takes for done ({m.describe()})",
                              check="chained launches", mismatch=m)
    args = {a.name: a for a in plan.args}
    for a in outputs(plan):
        if double is not None and a.name in ctx.accuracy.grounded:  # each run held to the double-precision run
            if identical(torch, second[a.name], runs[0][a.name]):
                continue  # the first run's very bits: judged already, to the same error
            m = ctx.accuracy.judge(torch, plan, seed, a, second[a.name], double[a.name])
            if m is not None:
                raise Failure("wrong", f"the candidate's second run on the same input is far from the original's: "
                                       f"{m.describe()}", check="repeatable", mismatch=m)
            apart = describe(torch, Where("repeatable", plan.label, seed), a, second[a.name], runs[0][a.name], None)
            if apart is not None:  # allowed only where the original's own runs differ too (at the job's end)
                ctx.accuracy.candidate_spread.setdefault(a.name, apart)
            continue
        if describe(torch, Where("repeatable", plan.label, seed), a, second[a.name], runs[0][a.name], None) is not None:
            m = describe(torch, Where("repeatable", plan.label, seed), a, second[a.name], expected[0][a.name], "B")
            detail = m.describe() if m else ""
            raise Failure("wrong", f"the candidate gives different results on the same input at {plan.label}: "
                                   f"a race, or a read of memory nothing wrote ({detail})", check="repeatable", mismatch=m)
    if reference is not None:
        for name, value in reference.items():
            m = describe(torch, Where("matches ref", plan.label, seed), args[name], runs[0][name], value, None)
            if m is not None:
                raise Failure("wrong", f"the candidate disagrees with ref.{name}: {m.describe()}", check="matches ref", mismatch=m)


def _compare_printed(ctx: JobContext, plan: SizePlan, seed: int, candidate: Printed, first: Printed,
                     second: Printed) -> None:
    """The candidate prints what the original prints on the same inputs (gpu/printed.py)."""
    if not (candidate.lines or first.lines or second.lines):
        return
    ctx.printed_compared += 1
    why = printed_difference(candidate, first, second)
    if why is not None:
        raise Failure("wrong", f"at {plan.label} (seed {seed}) the candidate {why}", check="prints as the original")


def _compare(ctx: JobContext, plan: SizePlan, first: dict, second: dict, expected: dict, seed: int,
             double: dict | None) -> None:
    """The first run (outputs poisoned with NaN) against the oracle. A NaN there is an unwritten
    element only if the second run (byte-pattern poison) left its poison there too; otherwise
    the kernel wrote NaN, read from memory nothing wrote. Outputs with a double-precision run
    are judged against it (gpu/accuracy.py): here only what is wrong beyond any rounding fails
    at once, the rest when every input set has been seen."""
    for a in outputs(plan):
        if double is not None and a.name in ctx.accuracy.grounded:
            _unwritten(ctx, plan, a, first, second, expected, seed)
            m = ctx.accuracy.judge(ctx.torch, plan, seed, a, first[a.name], double[a.name])
            if m is not None:
                hint = NAN_HINT if m.got == "nan" and m.expected != "nan" else ""
                raise Failure("wrong", f"the candidate's output is far from the original's: {m.describe()}{hint}",
                              check="matches original", mismatch=m)
            continue
        m = describe(ctx.torch, Where("matches original", plan.label, seed), a, first[a.name], expected[a.name], "A")
        if m is None:
            continue
        if m.unwritten:
            again = describe(ctx.torch, Where("matches original", plan.label, seed), a, second[a.name], expected[a.name], "B")
            if again is not None and again.unwritten:
                raise Failure("wrong", f"the candidate's output differs from the original's: {again.describe()}",
                              check="every output written" if again.unwritten == again.bad else "matches original",
                              mismatch=again)
            m.unwritten = 0
        hint = NAN_HINT if m.got == "nan" and m.expected != "nan" else ""
        raise Failure("wrong", f"the candidate's output differs from the original's: {m.describe()}{hint}",
                      check="matches original", mismatch=m)


def _unwritten(ctx: JobContext, plan: SizePlan, arg: Any, first: dict, second: dict, expected: dict, seed: int) -> None:
    """Elements that kept both runs' poison were never written: that fails whatever the accuracy."""
    torch = ctx.torch
    if kept_poison(torch, arg, first[arg.name], second[arg.name]):
        m = describe(torch, Where("every output written", plan.label, seed), arg, second[arg.name], expected[arg.name], "B")
        assert m is not None
        raise Failure("wrong", f"the candidate's output differs from the original's: {m.describe()}",
                      check="every output written", mismatch=m)
