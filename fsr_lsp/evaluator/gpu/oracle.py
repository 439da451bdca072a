"""The original as the oracle: two runs of it, outputs poisoned differently, must agree, or
say why not (an output left unwritten, read before written, or nondeterministic). Float outputs
a double-precision run can judge may differ in rounding (atomics add in any order): that run
holds each of them, and each of a candidate's, to the original's own error."""

from __future__ import annotations

from typing import Any, Callable

from ..compile.compiler import find_nvcc
from ..compile.entries import demangled
from ..records import SizePlan
from .buffers import Where, describe, poisoned
from .common import Failure, JobContext, inputs_only, outputs


class OracleProblem(Exception):
    """The original misbehaves at a size: the spec is at fault (or, at an edge size, the size).
    Names the check and the argument, for whoever proves a drafted spec."""

    def __init__(self, message: str, check: str, argument: str = "") -> None:
        super().__init__(message)
        self.check, self.argument = check, argument


def rounding_spread(ctx: JobContext, plan: SizePlan, inputs: dict, first: dict, second: dict, double: dict | None,
                     spread: set[str], rerun: Callable[[], dict]) -> dict:
    """Two runs of the original differ in outputs the double-precision run can judge (float
    atomics add in any order): both runs join the original's own error, which candidates are
    held to. When that run cannot judge them after all, the difference is nondeterminism."""
    accuracy = ctx.accuracy
    if double is not None:
        accuracy.observe_original(ctx.torch, plan, second, double)
    if double is None or not spread <= accuracy.grounded:
        problem = oracle_problem(ctx, plan, inputs, first, second, rerun)
        assert problem is not None
        raise Failure("spec_error", f"the original kernel cannot serve as the oracle at {plan.label}: {problem}",
                      check=problem.check, argument=problem.argument)
    if not spread <= accuracy.spread:
        accuracy.spread |= spread
        ctx.result.warnings.append(f"rounding: two runs of the original differ in {', '.join(sorted(spread))} (float "
                                   "atomics add in any order); each run, and each of a candidate's, is held to the "
                                   "original's own error against its double-precision run")
    return double


def oracle_problem(ctx: JobContext, plan: SizePlan, inputs: dict, first: dict, second: dict,
                   rerun: Callable[[], dict], rounding: set[str] = frozenset(),  # type: ignore[assignment]
                   spread: set[str] | None = None) -> OracleProblem | None:
    """The two runs (outputs poisoned differently) must agree: an element that kept its poison
    was not written; where they differ otherwise, a third run with the first run's poison tells
    a kernel that reads its `out` buffer (same result again) from nondeterminism (atomics, a race).
    Outputs in `rounding` (judged against a double-precision run) may differ: they go to
    `spread`, for that run to judge."""
    torch = ctx.torch
    for a in inputs_only(plan):
        if not torch.equal(first[a.name], inputs[a.name]):
            return OracleProblem(f"modifies {a.name}, which the spec declares in (declare it inout)", "inputs unchanged",
                                 a.name)
    for a in outputs(plan):
        m = describe(torch, Where("oracle", plan.label, 0), a, second[a.name], first[a.name], None)
        if m is None:
            continue
        if a.direction == "out" and kept_poison(torch, a, first[a.name], second[a.name]):
            return OracleProblem(f"does not write every element of {a.name}, or reads it first ({m.bad} of {m.total} elements keep the "
                                 f"poison they were given before the run; declare {a.name} inout if the kernel updates "
                                 "only part of it)", "every output written", a.name)
        # the same poison, the same result to the bit: it reads what it was given (within a tolerance
        # would also catch a nondeterministic kernel whose third run lands near its first)
        if a.direction == "out" and _same_bits(torch, rerun()[a.name], first[a.name]):
            return OracleProblem(f"gives a different {a.name} when its buffers start from different contents "
                                 f"({m.bad} of {m.total} elements; the same contents give the same result): it reads "
                                 f"{a.name} before writing it (declare {a.name} inout with a start value), or reads past "
                                 "the end of a buffer",
                                 "outputs not read before written", a.name)
        if a.name in rounding and spread is not None:
            spread.add(a.name)
            continue
        return OracleProblem(f"is not deterministic: {m.bad} of {m.total} elements of {a.name} differ between two runs "
                             f"on the same inputs ({m.describe()})", "deterministic", a.name)
    return None


UNCOMPARED_VARIABLE = ("the original kernel cannot serve as the oracle at {label}: it changes {what}, a global variable "
                       "of its module that fsr does not compare (declared in a header, or written where fsr's reading "
                       "of the kernel's file did not see it), so a rewrite that skipped that write would pass every "
                       "check (give the kernel a buffer to write it to)")


def check_module_variables(ctx: JobContext, plan: SizePlan) -> None:
    """Fail the spec when the original's run changed a variable of its module that fsr does
    not compare (gpu/module_state.py): the result kept there would go unchecked."""
    state = ctx.kernel("original").state
    changed = state.changed() if state is not None else []
    if changed:
        names = demangled(changed, find_nvcc())
        what = ", ".join(f"`{names.get(c, c)}`" for c in changed)
        raise Failure("spec_error", UNCOMPARED_VARIABLE.format(label=plan.label, what=what),
                      check="module variables unchanged", argument=names.get(changed[0], changed[0]))


def kept_poison(torch: Any, arg: Any, first: Any, second: Any) -> bool:
    """Whether some element still holds the poison of both runs (NaN, then the byte pattern)."""
    return bool(_poison_kept(torch, arg, first, second).any().item())


def _poison_kept(torch: Any, arg: Any, first: Any, second: Any) -> Any:
    """Per element: the first run's poison (NaN, pattern A) in `first` and B's in `second`."""
    a, b = poisoned(torch, first.device, arg, "A"), poisoned(torch, second.device, arg, "B")

    def holds(t: Any, p: Any) -> Any:
        return (t.view(torch.uint8).view(-1, t.element_size()) == p.view(torch.uint8).view(-1, p.element_size())).all(1)

    return holds(first, a) & holds(second, b)


def _same_bits(torch: Any, a: Any, b: Any) -> bool:
    return a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))
