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
from .candidate_runs import OriginalRuns, check_candidate
from .constant_fill import fill_constants
from .common import Failure, JobContext, captured_inputs, make_inputs, outputs, seed_for
from .oracle import OracleProblem, check_module_variables, oracle_problem, rounding_spread
from .oracle_cache import OracleRuns
from .oracle_runs import kept_runs, verify_key, worth_keeping
from .print_flood import PrintRate
from .printed import Printed
from .range_check import check_ranges, range_plan
from .ref import RefError, eval_ref
from .runs import double_outputs, launch_runs
from .shared import SharedPoison

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
    """Every size's input sets: the original run as the oracle, the candidate (where there is one)
    held to it; the range sets after the size before the bench size; then the checks said."""
    return _Verification(ctx).run()


class _Verification:
    """One job's verification: what it has counted and seen so far, and its steps (a size, an
    input set, the original's runs there)."""

    def __init__(self, ctx: JobContext) -> None:
        job = ctx.job
        self.ctx, self.job, self.result = ctx, job, ctx.result
        self.counts = Counts()
        self.ref_usable = bool(job.ref)
        self.shared = ctx.session.shared_poison() if job.defences.poison_shared else None
        if ctx.wide is not None:
            ctx.accuracy.grounded = grounded_buffers(job.sizes[0])
        self.printing = PrintRate()
        self.printed_any = False  # with no output buffer, what the original prints is all there is to compare

    def run(self) -> Counts:
        ctx, job, counts = self.ctx, self.job, self.counts
        probe = range_plan(job) if not job.screen else None
        range_result: Check | None = None
        for index, plan in enumerate(job.sizes):
            if self.size(index, plan):
                counts.sizes.append(plan.label)
            if index == probe:  # the sets that probe the range, before the bench size's larger buffers
                range_result = check_ranges(ctx, index, self.shared)
                counts.ranges = len(ctx.result.range_sets)
        if not self.printed_any and not any(outputs(plan) for plan in job.sizes):
            raise Failure("spec_error", NOTHING_COMPARED, check="outputs")
        self.result.checks += _checks(ctx, counts, self.ref_usable, self.shared)
        if range_result is not None:
            self.result.checks.append(range_result)
        self.result.checks.append(_accuracy_check(ctx))
        return counts

    def size(self, index: int, plan: SizePlan) -> bool:
        """The size's input sets (and the captured run's at the bench size); False for an edge
        size the original cannot do, skipped."""
        job = self.job
        random_sets = seeds_at(job, plan)
        own = bench_captured(plan, job.real_inputs)  # the spec's own inputs are the run's here already
        flood = None if own else self.printing.flood(plan)
        if flood:
            raise Failure("spec_error", f"the original kernel cannot serve as the oracle at {plan.label}: {flood}",
                          check="printing")
        for j in range(random_sets + (1 if plan.role == "bench" and job.real_inputs and not own else 0)):
            seed = seed_for(job, index, j)
            if j == random_sets:  # one more: the inputs a run of the user's program had
                inputs, why = captured_inputs(self.ctx.session, plan, job.real_inputs, seed)
                if not inputs:
                    self.result.warnings.append(why)
                    continue
                self.ctx.report(f"checking {plan.label} (the captured inputs)")
                self.counts.captured += 1
            else:
                self.ctx.report(f"checking {plan.label} (seed {seed})")
                inputs = make_inputs(self.ctx.session, plan, seed)
            fill_constants(self.ctx, seed)  # the host's `__constant__` data, drawn for this input set too
            key = verify_key(self.ctx, index, plan, seed, self._launches(j), self.shared) \
                if j < random_sets and not own else None
            if not self.input_set(plan, j, seed, inputs, key, fresh=j < random_sets and not own):
                return False
        return True

    def _launches(self, j: int) -> int:
        return max(1, self.job.defences.chained_launches) if j == 0 else 1

    def input_set(self, plan: SizePlan, j: int, seed: int, inputs: dict, key: str | None, fresh: bool) -> bool:
        """The original's runs on `inputs` (kept from an earlier job where they are), its double-
        precision run and the ref's, then the candidate held to them; False where an edge size
        turns out to be one the original cannot do."""
        ctx, result = self.ctx, self.result
        hit: OracleRuns | None = ctx.session.oracle_cache.get(key) if key else None
        rerun = lambda: launch_runs(ctx, "original", plan, inputs, "A", 1, self.shared)[0]  # noqa: E731
        started = time.perf_counter()
        runs = self._original_runs(plan, j, inputs, hit, rerun, fresh)
        if isinstance(runs, OracleProblem):
            if plan.role == "edge":
                result.warnings.append(f"edge size {plan.label} skipped: the original {runs}")
                return False
            raise Failure("spec_error", f"the original kernel cannot serve as the oracle at {plan.label}: {runs}",
                          check=runs.check, argument=runs.argument)
        expected, again, spread, printed, printed_again = runs
        _count_nonfinite(ctx, plan, expected[0])
        raw = None
        if ctx.accuracy.grounded:
            raw = hit.double if hit is not None else double_outputs(ctx, plan, inputs)
        double = _double_run(ctx, plan, expected[0], raw) if raw is not None else None
        if spread:
            double = rounding_spread(ctx, plan, inputs, expected[0], again[0], double, spread, rerun)
        if key is not None and hit is not None:
            ctx.report(f"checking {plan.label} (seed {seed}): the original's runs on these inputs from an earlier job")
        elif key is not None and worth_keeping(ctx, plan, printed, printed_again, started):
            ctx.session.oracle_cache.put(key, *kept_runs(plan, expected, again[0], printed, printed_again, spread, raw))
        reference = self._reference(plan, inputs, expected[0], seed)
        if ctx.candidate is not None:
            check_candidate(ctx, plan, inputs, seed, self.shared,
                            OriginalRuns(expected, reference, double, (printed, printed_again)))
        self.counts.seeds.append(seed)
        return True

    def _original_runs(self, plan: SizePlan, j: int, inputs: dict, hit: OracleRuns | None, rerun: Any,
                       fresh: bool) -> tuple[list[dict], list[dict], set, list[Printed], Printed] | OracleProblem:
        """The original's outputs after each chained launch, its second run's, the outputs whose
        runs spread (rounding), and what each printed; or why it cannot serve as the oracle."""
        ctx = self.ctx
        if hit is not None:  # this original's runs on these very inputs, from an earlier job
            return hit.expected, [hit.again], set(hit.spread), hit.printed, hit.printed_again
        try:
            expected = launch_runs(ctx, "original", plan, inputs, "A", self._launches(j), self.shared)
            check_module_variables(ctx, plan)
            printed = list(ctx.printed)  # what each of its chained launches printed
            self.printed_any = self.printed_any or any(p.lines for p in printed)
            if printed and fresh:
                self.printing.observe(plan, printed[0])
            again = launch_runs(ctx, "original", plan, inputs, "B", 1, self.shared)
            printed_again = ctx.printed[0]
            spread: set = set()
            problem = oracle_problem(ctx, plan, inputs, expected[0], again[0], rerun,
                                     ctx.accuracy.grounded if ctx.wide is not None else set(), spread)
        except OracleProblem as e:
            return e
        return problem or (expected, again, spread, printed, printed_again)

    def _reference(self, plan: SizePlan, inputs: dict, expected: dict, seed: int) -> dict | None:
        """The torch reference's outputs on these inputs, while it agrees with the original."""
        if not self.ref_usable:
            return None
        reference, problem = _ref_outputs(self.ctx, plan, inputs, expected, seed)
        if problem:
            self.result.warnings.append(problem)
            self.ref_usable = False
            return None
        self.counts.ref_compared += 1
        return reference


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


def _ref_outputs(ctx: JobContext, plan: SizePlan, inputs: dict, expected: dict, seed: int) -> tuple[dict | None, str | None]:
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
