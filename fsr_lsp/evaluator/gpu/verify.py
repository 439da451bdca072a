"""Verification on the GPU: the original is the oracle, the candidate must match it.

Float outputs are judged against the original run in double precision, the candidate held to
the original's own error (accuracy.py); integer outputs must match exactly.
Defences against a wrong-but-passing rewrite, in the order they run, at every size:
- outputs poisoned before every run (NaN, then a byte pattern): unwritten elements fail;
- every buffer inside canary guard bands, checked after every launch: writes outside a buffer
  fail, and reads outside a float buffer that feed a result bring NaN into it;
- every SM's shared memory filled with 0xFF bytes (NaN) before every launch: a read of shared
  memory that no thread of the block wrote changes the result;
- `in` buffers compared bit for bit after every run: a kernel may not scribble on inputs;
- K launches back to back on the same buffers (first seed), compared with the original's K
  after each: a kernel that skips work it takes for done, or depends on what an earlier launch
  left behind, differs at launch 2 or later;
- every size and seed run twice with different poisons: races and reads of uninitialised
  memory show up as disagreement;
- each buffer once placed against unmapped address space (its start, and its end where the
  alignment allows): a read or write past it faults, and the fault names the buffer;
- an edge size that is not a multiple of the block size when the spec has none.
The original passes the same checks first; where it cannot, the spec (not the candidate) is at
fault and the result says so, naming the argument.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..records import Check, CheckStatus, EvalJob, SizePlan
from ..job.captured_buffers import bench_captured
from ..job.widening import grounded_buffers
from .accuracy import FACTOR, FLOOR_ULPS
from .buffers import FLOATS, Where, describe
from .constant_fill import fill_constants
from .common import Failure, JobContext, captured_inputs, inputs_only, make_inputs, outputs, seed_for
from .oracle import OracleProblem, check_module_variables, kept_poison, oracle_problem, rounding_spread
from .oracle_cache import OracleRuns
from .oracle_runs import kept_runs, verify_key, worth_keeping
from .print_flood import PrintRate
from .printed import Printed, printed_difference
from .range_check import check_ranges, range_plan
from .ref import RefError, eval_ref
from .runs import double_outputs, launch_runs
from .shared import SharedPoison

NAN_HINT = ("; NaN where the original has a number: it read memory nothing wrote (shared memory is filled with "
            "NaN before each launch, and every buffer sits between NaN canaries)")


@dataclass
class Counts:
    sizes: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    ref_compared: int = 0
    captured: int = 0  # input sets from a capture of the user's program
    ranges: int = 0  # input sets that probe the inputs' range, judged (gpu/range_check.py)


NOTHING_COMPARED = ("the original kernel cannot serve as the oracle: the spec gives it no out or inout buffer and "
                    "it printed nothing, so nothing it does would be compared and any rewrite would pass (fsr reads "
                    "buffers, printed lines and the `__device__` variables of the kernel's own file; a result kept "
                    "elsewhere, such as a header's variable, is not read: give the kernel a buffer to write it to)")


def verify(ctx: JobContext) -> Counts:
    job, result = ctx.job, ctx.result
    counts = Counts()
    ref_usable = bool(job.ref)
    shared = ctx.session.shared_poison() if job.defences.poison_shared else None
    accuracy = ctx.accuracy
    if ctx.wide is not None:
        accuracy.grounded = grounded_buffers(job.sizes[0])
    probe = range_plan(job) if not job.screen else None
    range_result: Check | None = None
    printing = PrintRate()
    printed_any = False  # with no output buffer, what the original prints is all there is to compare
    for index, plan in enumerate(job.sizes):
        usable = True
        random_sets = seeds_at(job, plan)
        own = bench_captured(plan, job.real_inputs)  # the spec's own inputs are the run's here already
        flood = None if own else printing.flood(plan)
        if flood:
            raise Failure("spec_error", f"the original kernel cannot serve as the oracle at {plan.label}: {flood}",
                          check="printing")
        for j in range(random_sets + (1 if plan.role == "bench" and job.real_inputs and not own else 0)):
            seed = seed_for(job, index, j)
            if j == random_sets:  # one more: the inputs a run of the user's program had
                inputs, why = captured_inputs(ctx.session, plan, job.real_inputs, seed)
                if not inputs:
                    result.warnings.append(why)
                    continue
                ctx.report(f"checking {plan.label} (the captured inputs)")
                counts.captured += 1
            else:
                ctx.report(f"checking {plan.label} (seed {seed})")
                inputs = make_inputs(ctx.session, plan, seed)
            fill_constants(ctx, seed)  # the host's `__constant__` data, drawn for this input set too
            launches = max(1, job.defences.chained_launches) if j == 0 else 1
            rerun = lambda plan=plan, inputs=inputs: launch_runs(ctx, "original", plan, inputs, "A", 1, shared)[0]  # noqa: E731
            key = verify_key(ctx, index, plan, seed, launches, shared) if j < random_sets and not own else None
            hit: OracleRuns | None = ctx.session.oracle_cache.get(key) if key else None
            started = time.perf_counter()
            problem: OracleProblem | None = None
            if hit is not None:  # this original's runs on these very inputs, from an earlier job
                expected, again, spread = hit.expected, [hit.again], set(hit.spread)
                printed, printed_again = hit.printed, hit.printed_again
            else:
                try:
                    expected = launch_runs(ctx, "original", plan, inputs, "A", launches, shared)
                    check_module_variables(ctx, plan)
                    printed = list(ctx.printed)  # what each of its chained launches printed
                    printed_any = printed_any or any(p.lines for p in printed)
                    if printed and j < random_sets and not own:
                        printing.observe(plan, printed[0])
                    again = launch_runs(ctx, "original", plan, inputs, "B", 1, shared)
                    printed_again = ctx.printed[0]
                    spread = set()
                    problem = oracle_problem(ctx, plan, inputs, expected[0], again[0], rerun,
                                             accuracy.grounded if ctx.wide is not None else set(), spread)
                except OracleProblem as e:
                    problem = e
            if problem:
                if plan.role == "edge":
                    result.warnings.append(f"edge size {plan.label} skipped: the original {problem}")
                    usable = False
                    break
                raise Failure("spec_error", f"the original kernel cannot serve as the oracle at {plan.label}: {problem}",
                              check=problem.check, argument=problem.argument)
            _count_nonfinite(ctx, plan, expected[0])
            raw = None
            if accuracy.grounded:
                raw = hit.double if hit is not None else double_outputs(ctx, plan, inputs)
            double = _double_run(ctx, plan, expected[0], raw) if raw is not None else None
            if spread:
                double = rounding_spread(ctx, plan, inputs, expected[0], again[0], double, spread, rerun)
            if key is not None and hit is not None:
                ctx.report(f"checking {plan.label} (seed {seed}): the original's runs on these inputs from an earlier job")
            elif key is not None and worth_keeping(ctx, plan, printed, printed_again, started):
                ctx.session.oracle_cache.put(key, *kept_runs(plan, expected, again[0], printed, printed_again, spread, raw))
            reference = None
            if ref_usable:
                reference, ref_problem = _reference(ctx, plan, inputs, expected[0], seed)
                if ref_problem:
                    result.warnings.append(ref_problem)
                    ref_usable = False
                    reference = None
                else:
                    counts.ref_compared += 1
            if ctx.candidate is not None:
                original = _Original(expected, reference, double, (printed, printed_again))
                _check_candidate(ctx, plan, inputs, seed, shared, original)
            counts.seeds.append(seed)
        if usable:
            counts.sizes.append(plan.label)
        if index == probe:  # the sets that probe the range, before the bench size's larger buffers
            range_result = check_ranges(ctx, index, shared)
            counts.ranges = len(ctx.result.range_sets)
    if not printed_any and not any(outputs(plan) for plan in job.sizes):
        raise Failure("spec_error", NOTHING_COMPARED, check="outputs")
    result.checks += _checks(ctx, counts, ref_usable, shared)
    if range_result is not None:
        result.checks.append(range_result)
    result.checks.append(_accuracy_check(ctx))
    return counts


def _double_run(ctx: JobContext, plan: SizePlan, expected: dict, double: dict) -> dict | None:
    """The original's double-precision run on the same inputs (`double`, its outputs); the
    original's own error joins the criterion. None once the criterion has fallen back."""
    ctx.accuracy.observe_original(ctx.torch, plan, expected, double)
    if not ctx.accuracy.grounded:
        ctx.result.warnings.append(f"accuracy: no double-precision reference ({ctx.accuracy.why_not}); outputs are "
                                   "compared with the original's within the element type's default tolerance")
        return None
    return double


def _count_nonfinite(ctx: JobContext, plan: SizePlan, expected: dict) -> None:
    """The most NaN or inf the original gives in each float output at this size (range_check.py)."""
    seen = ctx.nonfinite.setdefault(plan.label, {})
    for a in outputs(plan):
        if a.dtype in FLOATS:
            seen[a.name] = max(seen.get(a.name, 0), int((~expected[a.name].isfinite()).sum().item()))


def _accuracy_check(ctx: JobContext) -> Check:
    """What decided accuracy, and by what margin; a candidate beyond its bound fails here, and
    one whose two runs differ where the original's never did (a race it brought)."""
    accuracy = ctx.accuracy
    raced = sorted(set(accuracy.candidate_spread) - accuracy.spread)
    if raced:
        m = accuracy.candidate_spread[raced[0]]
        raise Failure("wrong", f"the candidate gives different results on the same input, where the original's two "
                               f"runs always agreed: a race, or a read of memory nothing wrote ({m.describe()})",
                      check="repeatable", mismatch=m)
    if accuracy.grounded:
        if ctx.candidate is None:
            worst = ", ".join(f"{name} {w.original:.2g}" for name, w in sorted(accuracy.worst.items())
                              if name in accuracy.grounded)
            return Check("accuracy", "pass", f"the original's worst error against its double-precision run, over its "
                                             f"output's scale: {worst}; a candidate may be up to {FACTOR:g}x that, or "
                                             f"{FLOOR_ULPS} units in the last place")
        check = accuracy.verdict(ctx.torch)
        if check.status == "fail":
            w = accuracy.judged[check.argument]
            raise Failure("wrong", f"the candidate is less accurate than the original: {check.detail}", check="accuracy",
                          mismatch=w.where, argument=check.argument)
        return check
    floats = [a for a in outputs(ctx.job.sizes[0]) if a.dtype in FLOATS]
    if not floats:
        return Check("accuracy", "pass", "integer outputs: compared exactly")
    if floats[0].tolerance == "spec":
        return Check("accuracy", "pass", f"within the spec's rtol = {floats[0].rtol:g}, atol = {floats[0].atol:g} "
                                         "of the original")
    why = f" (no double-precision reference: {accuracy.why_not})" if accuracy.why_not else ""
    tolerances = ", ".join(sorted({f"{a.dtype} rtol {a.rtol:g}, atol {a.atol:g}" for a in floats}))
    return Check("accuracy", "pass", f"within the default tolerance of the original ({tolerances}, the atol scaled "
                                     "by the output's magnitude under 1; or 80 units in the last place of the "
                                     f"output's scale){why}")


def seeds_at(job: EvalJob, plan: SizePlan) -> int:
    """Every seed at the test sizes; one at the bench size, whose outputs every timed run (each
    on fresh inputs) checks again."""
    return 1 if plan.role == "bench" and len(job.sizes) > 1 else job.seeds_per_size


def checked_text(counts: Counts) -> str:
    captured = ", the captured inputs among them" if counts.captured else ""
    ranges = f" and {counts.ranges} that probe their range" if counts.ranges else ""
    return f"{len(counts.sizes)} sizes, {len(counts.seeds)} input sets{captured}{ranges}"


def _checks(ctx: JobContext, counts: Counts, ref_usable: bool, shared: SharedPoison | None) -> list[Check]:
    job = ctx.job
    detail = checked_text(counts)
    who = "candidate" if ctx.candidate else "original"
    k = max(1, job.defences.chained_launches)
    if shared is None:
        shared_check = Check("shared memory poisoned", "skip", "switched off")
    elif not shared.available:
        shared_check = Check("shared memory poisoned", "skip", shared.why)
    else:
        shared_check = Check("shared memory poisoned", "pass",
                             f"every SM's shared memory filled with 0xFF (NaN) before each launch, "
                             f"{shared.block_bytes // 1024} KiB blocks and the kernel's own footprint")
    out: list[Check] = []
    if ctx.candidate:
        out += [
            Check("matches original", "pass", detail),
            Check("every output written", "pass", "outputs poisoned with NaN and a byte pattern before each run"),
            Check("inputs unchanged", "pass", "in buffers compared bit for bit after each run"),
            Check("repeatable", "pass", "two runs per input agree (no race or uninitialised read seen)"),
        ]
        if ctx.printed_compared:
            out.append(Check("prints as the original", "pass",
                             f"device printf output compared with the original's in {ctx.printed_compared} runs"))
        if k > 1:
            out.append(Check("chained launches", "pass",
                             f"{k} launches back to back on the same buffers at every size, each compared with the original's"))
    else:
        out.append(Check("original self-consistent", "pass", f"{detail}: writes every output, same result twice"))
    out += [Check("guard bands", "pass", "canary bands before and after every buffer unchanged after every launch"),
            shared_check]
    if job.ref:
        status: CheckStatus = "pass" if ref_usable else "skip"
        out.append(Check(f"{who} matches ref", status, f"{counts.ref_compared} runs" if ref_usable else "ref disagrees with the original"))
    if any(p.role == "edge" for p in job.sizes):
        edge = next(p for p in job.sizes if p.role == "edge")
        state: CheckStatus = "pass" if edge.label in counts.sizes else "skip"
        out.append(Check("non-multiple size", state, edge.label))
    return out


def _reference(ctx: JobContext, plan: SizePlan, inputs: dict, expected: dict, seed: int) -> tuple[dict | None, str | None]:
    try:
        reference = eval_ref(ctx.torch, ctx.job.ref, plan, inputs)
    except RefError as e:
        return None, f"ref not used: {e}"
    args = {a.name: a for a in plan.args}
    for name, value in reference.items():
        m = describe(ctx.torch, Where("ref", plan.label, seed), args[name], expected[name], value, None)
        if m is not None:
            return None, f"ref not used: the original disagrees with ref.{name} at {plan.label} ({m.describe()})"
    return reference, None


@dataclass(frozen=True)
class _Original:
    """The original's on one input set: outputs after each chained launch, the torch reference's,
    the double-precision run's, what it printed (each chained launch's, and its second run's)."""
    expected: list[dict]
    reference: dict | None
    double: dict | None
    printed: tuple[list[Printed], Printed]


def _check_candidate(ctx: JobContext, plan: SizePlan, inputs: dict, seed: int, shared: SharedPoison | None,
                     original: _Original) -> None:
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
