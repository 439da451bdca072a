"""compute-sanitizer on a round leader (memcheck, racecheck) or on the original kernel under a
drafted spec (memcheck, initcheck), at every test size.

Sanitizers slow kernels by 10-100x, so they run on the candidates a search promotes (each
round's leader, and the winner), outside the timing worker: a child process runs the job in
`sanitize` mode under the tool, with every buffer its own exact-length allocation (256-byte
aligned) that stays alive to the end, and prints where each buffer lives. memcheck's reports
are read back against that map, so a failure names the argument, the size and how far: "reads
up to 12 bytes past the end of `x` at n=65537". When the candidate fails memcheck, the
original runs under it too: if it fails on the same argument, the spec's length is wrong.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .records import Check, EvalJob, SizePlan
from .sanitize_main import child_command
from .serde import to_json
from .support import find_cuda_tool, last_line

TOOLS = ("memcheck", "racecheck")
_EXIT_ON_ERROR = 86
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


def find_sanitizer() -> str | None:
    return find_cuda_tool("compute-sanitizer")


def sanitized_sizes(job: EvalJob) -> list[SizePlan]:
    """Every test and edge size; the bench size too when its buffers are small."""
    return [p for p in job.sizes if p.role != "bench" or p.buffer_bytes <= job.defences.layered_max_bytes]


def sanitize(job: EvalJob, device_index: int = 0, tools: tuple[str, ...] = TOOLS, timeout: float = 300.0) -> list[Check]:
    """One Check per tool: pass, fail (naming the buffer, size and distance) or skip (no tool).
    A memcheck failure the original shares is the spec's: that check says so (`spec` in its
    name) and the caller turns it into a spec error."""
    tool_path = find_sanitizer()
    if tool_path is None:
        return [Check(f"sanitizer {t}", "skip", "compute-sanitizer not found") for t in tools]
    sizes = sanitized_sizes(job)
    checks = []
    for tool in tools:
        outcome = _run(tool_path, tool, job, sizes, device_index, timeout, original=False)
        if tool == "memcheck" and outcome.check.status == "fail" and outcome.accesses:
            shared = _shared_with_original(tool_path, job, sizes, device_index, timeout, outcome)
            if shared:
                outcome.check = Check("sanitizer memcheck (spec)", "fail", shared)
        checks.append(outcome.check)
    return checks


def sanitize_original(job: EvalJob, device_index: int = 0, tools: tuple[str, ...] = ("memcheck", "initcheck"),
                      timeout: float = 300.0) -> list[Check]:
    """The original kernel alone under each tool, at every test size with exact allocations and
    `out` buffers left unwritten: the proof that a spec's lengths and directions fit it."""
    tool_path = find_sanitizer()
    if tool_path is None:
        return [Check(f"sanitizer {t}", "skip", "compute-sanitizer not found") for t in tools]
    sizes = sanitized_sizes(job)
    return [_run(tool_path, tool, job, sizes, device_index, timeout, original=True).check for tool in tools]


def _shared_with_original(tool_path: str, job: EvalJob, sizes: list[SizePlan], device_index: int, timeout: float,
                          candidate: Outcome) -> str:
    key = hashlib.sha256(job.original.cubin + job.original.entry.encode() + to_json(sizes).encode()).hexdigest()
    if key not in _original_verdicts:
        _original_verdicts[key] = _run(tool_path, "memcheck", job, sizes, device_index, timeout, original=True)
    original = _original_verdicts[key]
    buffers = sorted({a.buffer for a in original.accesses} & {a.buffer for a in candidate.accesses})
    if not buffers:
        return ""
    return (f"the original kernel fails memcheck too ({describe_accesses(original.accesses)}): the spec's length for "
            + ", ".join(f"`{b}`" for b in buffers) + " is too small")


def _run(tool_path: str, tool: str, job: EvalJob, sizes: list[SizePlan], device_index: int, timeout: float,
         original: bool) -> Outcome:
    small = dataclasses.replace(job, sizes=sizes, mode="sanitize", seeds_per_size=1, sanitize_original=original)
    labels = ", ".join(p.label for p in sizes)
    name = f"sanitizer {tool}"
    with tempfile.TemporaryDirectory(prefix="fsr-sanitize-") as tmp:
        # No kernel filter: besides the kernel only torch's input fills run in that child.
        cmd = [tool_path, "--tool", tool, "--error-exitcode", str(_EXIT_ON_ERROR), "--print-limit", "100",
               "--show-backtrace", "no",
               *child_command(small, Path(tmp), device_index)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Outcome(Check(name, "skip", f"did not finish within {timeout:.0f} s"), [])
    out = proc.stdout + proc.stderr
    if os.environ.get("FSR_SANITIZER_LOG"):  # the tool's own words, for whoever debugs the parsing
        log = Path(os.environ["FSR_SANITIZER_LOG"]) / f"{tool}-{'original' if original else 'candidate'}-{os.getpid()}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as f:
            f.write(out)
    summary = _SUMMARY.search(out)
    errors = int(summary.group(1) or summary.group(2)) if summary else None
    if proc.returncode == _EXIT_ON_ERROR or (errors or 0) > 0:
        accesses = accesses_in(out)
        detail = describe_accesses(accesses) if accesses else _first_report(out)
        return Outcome(Check(name, "fail", detail, accesses[0].buffer if accesses else ""), accesses)
    if proc.returncode != 0:
        return Outcome(Check(name, "skip", f"the tool could not run here (exit {proc.returncode}): {last_line(out)}"), [])
    if errors is None:
        return Outcome(Check(name, "skip", f"no summary from the tool: {last_line(out)}"), [])
    left = [p.label for p in job.sizes if p.label not in {q.label for q in sizes}]
    rest = f"; {', '.join(left)} left out (over {job.defences.layered_max_bytes >> 20} MiB of buffers)" if left else ""
    return Outcome(Check(name, "pass", f"0 errors at {labels} (exact allocations){rest}"), [])


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


