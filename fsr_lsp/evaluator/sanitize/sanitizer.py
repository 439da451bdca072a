"""compute-sanitizer on a round leader (memcheck, racecheck) or on the original kernel under a
drafted spec (memcheck, initcheck), at the sizes their cost allows (sanitizer_plan.py).

Sanitizers slow kernels by 10-100,000x, so they run on the candidates a search promotes (each
round's leader, and the winner), outside the timing worker, the tools side by side (never
beside a timed run): a child process per tool, started early (Prewarm) so that its imports
overlap the GPU's verification, runs the job in `sanitize` mode under the tool (with pycuda and
numpy alone where it can: plain_runs.py), with every buffer its own exact-length allocation
(256-byte aligned) that stays alive to the end, and prints where each buffer lives. memcheck's reports
are read back against that map, so a failure names the argument, the size and how far: "reads
up to 12 bytes past the end of `x` at n=65537". When the candidate fails memcheck, the
original runs under it too: if it fails on the same argument, the spec's length is wrong.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import threading
from dataclasses import dataclass

from ..records import Check, EvalJob, SizePlan
from .children import EXIT_ON_ERROR, TOOLS, Done, HeadStart, Output, Prewarm, ToolChild, find_sanitizer, run_children
from .sanitizer_plan import ToolPlan, calls_printf, plan_tool, uses_shared_memory
from ..worker.serde import to_json
from ..support import last_line

__all__ = ["TOOLS", "Access", "Done", "HeadStart", "Output", "Prewarm", "ToolChild", "accesses_in", "calls_printf",
           "clean", "describe_accesses", "find_sanitizer", "passed", "run_children", "sanitize", "sanitize_job", "sanitize_original",
           "sanitized_sizes", "tool_plans"]

log = logging.getLogger("fsr_lsp.evaluator")
_UNSUPPORTED = re.compile(r"[^\n]*\bis not supported by the selected tool[^\n]*")
# memcheck: "ERROR SUMMARY: 2 errors"; racecheck: "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?")
_ACCESS = re.compile(r"(?:Invalid|(Uninitialized)) __global__ (?:memory )?(read|write) of size (\d+) bytes?")
_ADDRESS = re.compile(r"(?:Address|Access to) (0x[0-9a-fA-F]+)")
_BUFFER = re.compile(r"^fsr-buffer (\S+) (\S+) (0x[0-9a-fA-F]+) (\d+)\s*$", re.M)
_original_verdicts: dict[str, "Outcome"] = {}  # the original's memcheck run, per kernel and sizes, in this process


@dataclass(frozen=True)
class Access:
    """One out-of-bounds access, placed against the buffers."""

    kind: str  # read, write, or uninitialised (a read of memory nothing wrote)
    buffer: str
    size: str  # the size label
    side: str  # "past the end" or "before the start"
    bytes: int


@dataclass
class Outcome:
    check: Check
    accesses: list[Access]


def sanitized_sizes(job: EvalJob) -> list[SizePlan]:
    """Every test and edge size; the bench size too when its buffers are small."""
    return [p for p in job.sizes if p.role != "bench" or p.buffer_bytes <= job.defences.layered_max_bytes]


def sanitize(job: EvalJob, device_index: int = 0, tools: tuple[str, ...] = TOOLS, timeout: float = 300.0,
             native_ms: dict[str, float] | None = None, static_shared: int | None = None,
             cancel: threading.Event | None = None, prewarm: HeadStart | None = None) -> list[Check]:
    """One Check per tool, the tools side by side: pass, fail (naming the buffer, size and
    distance) or skip (no tool, or not needed), each saying which sizes it ran at and why the
    others were left out (sanitizer_plan.py). A memcheck failure the original shares is the
    spec's: that check says so (`spec` in its name) and the caller turns it into a spec error.
    `prewarm`: children already loading, and runs of this job's candidate that already ended
    (early.py): only the sizes those did not cover run now, and each tool's verdict reads them all."""
    tool_path = find_sanitizer()
    if tool_path is None:
        if prewarm:
            prewarm.close()
        return [Check(f"sanitizer {t}", "skip", "compute-sanitizer not found") for t in tools]
    plans = tool_plans(job, tools, native_ms or {}, static_shared)
    runs = {t: plans[t] for t in tools if not plans[t].skipped and plans[t].sizes}
    done = prewarm.done_for(job) if prewarm else {}
    todo = {t: [p for p in runs[t].sizes if p.label not in done.get(t, (frozenset(), None))[0]] for t in runs}
    outputs = run_children([(t, sanitize_job(job, todo[t], original=False)) for t in runs if todo[t]], tool_path,
                           device_index, timeout, cancel, prewarm)
    if prewarm:
        prewarm.close()
    checks = []
    for tool in tools:
        plan = plans[tool]
        if tool not in runs:
            checks.append(Check(f"sanitizer {tool}", "skip", plan.describe()))
            continue
        parts = [done[tool][1]] if tool in done else []
        parts += [outputs[tool]] if todo[tool] else []
        outcome = _judged(tool, parts, plan, timeout, calls_printf(job.candidate or job.original))
        if tool == "memcheck" and outcome.check.status == "fail" and outcome.accesses:
            shared_fault = _shared_with_original(tool_path, job, plan.sizes, device_index, timeout, outcome, cancel)
            if shared_fault:
                outcome.check = Check("sanitizer memcheck (spec)", "fail", shared_fault)
        checks.append(outcome.check)
    return checks


def tool_plans(job: EvalJob, tools: tuple[str, ...], native_ms: dict[str, float],
               static_shared: int | None) -> dict[str, ToolPlan]:
    """Each tool's sizes (sanitizer_plan.py) from the native times measured (none yet: the
    unmeasured default) and the candidate's static shared memory (None: unknown, racecheck runs)."""
    shared = True if static_shared is None else uses_shared_memory(job, static_shared)
    prints = calls_printf(job.original)  # the original's: a candidate's printf must not buy it fewer checks
    return {t: plan_tool(t, job, native_ms, shared, prints) for t in tools}


def sanitize_original(job: EvalJob, device_index: int = 0, tools: tuple[str, ...] = ("memcheck", "initcheck"),
                      timeout: float = 300.0, cancel: threading.Event | None = None) -> list[Check]:
    """The original kernel alone under each tool (side by side), at every test size with exact
    allocations and `out` buffers left unwritten: the proof that a spec's lengths and
    directions fit it."""
    tool_path = find_sanitizer()
    if tool_path is None:
        return [Check(f"sanitizer {t}", "skip", "compute-sanitizer not found") for t in tools]
    sizes = sanitized_sizes(job)
    plan = ToolPlan("", sizes, [(p.label, f"over {job.defences.layered_max_bytes >> 20} MiB of buffers")
                                for p in job.sizes if p not in sizes])
    outputs = run_children([(t, sanitize_job(job, sizes, original=True)) for t in tools], tool_path, device_index,
                           timeout, cancel)
    return [_outcome(t, outputs[t], plan, timeout).check for t in tools]


def _shared_with_original(tool_path: str, job: EvalJob, sizes: list[SizePlan], device_index: int, timeout: float,
                          candidate: Outcome, cancel: threading.Event | None) -> str:
    key = hashlib.sha256(job.original.cubin + job.original.entry.encode() + to_json(sizes).encode()).hexdigest()
    if key not in _original_verdicts:
        out = run_children([("memcheck", sanitize_job(job, sizes, original=True))], tool_path, device_index,
                            timeout, cancel)["memcheck"]
        _original_verdicts[key] = _outcome("memcheck", out, ToolPlan("memcheck", sizes), timeout)
    original = _original_verdicts[key]
    buffers = sorted({a.buffer for a in original.accesses} & {a.buffer for a in candidate.accesses})
    if not buffers:
        return ""
    return (f"the original kernel fails memcheck too ({describe_accesses(original.accesses)}): the spec's length for "
            + ", ".join(f"`{b}`" for b in buffers) + " is too small")


def sanitize_job(job: EvalJob, sizes: list[SizePlan], original: bool) -> EvalJob:
    return dataclasses.replace(job, sizes=sizes, mode="sanitize", seeds_per_size=1, sanitize_original=original)


def _judged(tool: str, parts: list[tuple[int | None, str]], plan: ToolPlan, timeout: float, prints: bool) -> Outcome:
    """One verdict from a tool's runs at parts of the plan's sizes: a failure in any, else a run
    that could not check (a skip), else a pass at every size of the plan."""
    outcomes = [_outcome(tool, part, plan, timeout, prints) for part in parts]
    for status in ("fail", "skip"):
        found = next((o for o in outcomes if o.check.status == status), None)
        if found is not None:
            return found
    return outcomes[0]


def _outcome(tool: str, result: tuple[int | None, str], plan: ToolPlan, timeout: float,
             prints: bool = False) -> Outcome:
    returncode, out = result
    name = f"sanitizer {tool}"
    if returncode is None:
        return Outcome(Check(name, "skip", out), [])
    summary = _SUMMARY.search(out)
    errors = int(summary.group(1) or summary.group(2)) if summary else None
    unsupported = _UNSUPPORTED.search(out)
    # the output also holds what the kernel printed: a kernel that prints could write the tool's
    # "not supported" line itself, so only a kernel that cannot print is excused by it
    if unsupported and not accesses_in(out) and not prints:
        return Outcome(Check(name, "skip", f"the tool cannot check this kernel: {unsupported.group(0).strip()}"), [])
    if returncode == EXIT_ON_ERROR or (errors or 0) > 0:
        accesses = accesses_in(out)
        detail = describe_accesses(accesses) if accesses else _first_report(out)
        return Outcome(Check(name, "fail", detail, accesses[0].buffer if accesses else ""), accesses)
    if returncode != 0:
        return Outcome(Check(name, "skip", f"the tool could not run here (exit {returncode}): {last_line(out)}"), [])
    if errors is None:
        return Outcome(Check(name, "skip", f"no summary from the tool: {last_line(out)}"), [])
    return Outcome(passed(tool, plan), [])


def clean(output: Output) -> bool:
    """A child whose every job ran clean and in which the tool found nothing: exit 0 (the tool's
    error exit code is another, and the child exits 1 at a job that failed), the tool's summary
    of no errors, no kernel it could not check."""
    code, out = output
    summary = _SUMMARY.search(out)
    return code == 0 and summary is not None and int(summary.group(1) or summary.group(2)) == 0 and \
        _UNSUPPORTED.search(out) is None


def passed(tool: str, plan: ToolPlan, others: int = 0) -> Check:
    """A tool's pass at every size of its plan; `others`: the leaders checked in the same child."""
    rest = "".join(f"; {label} left out ({why})" for label, why in plan.left_out)
    shared = f"; in one child with {others} other leader{'s' if others > 1 else ''}" if others else ""
    return Check(f"sanitizer {tool}", "pass",
                 f"0 errors at {', '.join(p.label for p in plan.sizes)} (exact allocations){rest}{shared}")


def accesses_in(out: str) -> list[Access]:
    """memcheck's invalid accesses, each placed against the nearest buffer of the child's map."""
    buffers = [(m.group(1), m.group(2), int(m.group(3), 16), int(m.group(4))) for m in _BUFFER.finditer(out)]
    found = []
    pending: tuple[str, int] | None = None
    for line in out.splitlines():
        access = _ACCESS.search(line)
        if access:
            pending = ("uninitialised" if access.group(1) else access.group(2), int(access.group(3)))
            continue
        address = _ADDRESS.search(line)
        if address and pending and buffers:
            addr = int(address.group(1), 16)
            found.append(_place(pending[0], addr, pending[1], buffers))
            pending = None
    return found


def _place(kind: str, addr: int, width: int, buffers: list[tuple[str, str, int, int]]) -> Access:
    def distance(b: tuple[str, str, int, int]) -> int:
        _, _, base, size = b
        return base - addr if addr < base else max(0, addr + width - (base + size))

    name, size, base, nbytes = min(buffers, key=distance)
    if kind == "uninitialised":
        return Access(kind, name, size, "inside", (addr - base) // max(width, 1))
    if addr < base:
        return Access(kind, name, size, "before the start", base - addr)
    return Access(kind, name, size, "past the end", max(addr + width - (base + nbytes), 0))


def describe_accesses(accesses: list[Access]) -> str:
    """'reads up to 12 bytes past the end of `x` at n=65537; ...', the farthest per buffer and
    size; for reads of unwritten memory, the first element read."""
    worst: dict[tuple[str, str, str, str], int] = {}
    for a in accesses:
        key = (a.kind, a.buffer, a.side, a.size)
        pick = min if a.kind == "uninitialised" else max
        worst[key] = pick(worst.get(key, a.bytes), a.bytes)
    verbs = {"read": "reads", "write": "writes"}
    return "; ".join(f"reads `{buffer}` before anything wrote it at {size} (element {n} first; if the kernel "
                     f"updates `{buffer}`, declare it inout with a start value)" if kind == "uninitialised" else
                     f"{verbs[kind]} up to {n} bytes {side} of `{buffer}` at {size}"
                     for (kind, buffer, side, size), n in worst.items())


def _first_report(out: str) -> str:
    lines = [ln.replace("=========", "").strip() for ln in out.splitlines() if ln.startswith("=========")]
    useful = [ln for ln in lines if ln and not ln.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "Saved host"))]
    return " | ".join(useful[:4]) or last_line(out)


