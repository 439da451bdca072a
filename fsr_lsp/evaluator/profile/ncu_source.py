"""Nsight Compute's per-line counters and its rules, read from the CSV its report exports.

`ncu -i REPORT --page source --csv --print-source cuda,sass` gives, per kernel, a "File Path"
row, a "Function Name" row, a header row, then one row per CUDA source line (its number in the
first column) followed by that line's SASS rows (no number): the line rows carry the sums.
Which columns appear depends on the kernel (no "Divergent Branches" without branches, no
shared-memory columns without shared memory), so everything is read by header name. Code
inlined from other files (CUDA's headers, the user's) comes in sections of its own, after the
kernel's file. ncu reads each line's text from the file itself: the kernel's own file, the
evaluator's scratch copy `kernel.cu`, is gone by then, so its lines come with the number alone
and the text "<Unable to open source file>" (seen with ncu 2025.3.1 on an H100).

`ncu -i REPORT --page details --csv` gives one row per metric or rule; a rule row names the
rule, its type (OPT: an optimisation, with an estimated speedup) and its description.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import PurePath

from ..compile.compiler_output import OWN_FILE

SAMPLES = "Warp Stall Sampling (All Samples)"
NOT_ISSUED = "Warp Stall Sampling (Not-issued Samples)"
_STALL = "stall_"
UNREADABLE = "<Unable to open source file>"  # ncu's text for a line of a file it could not open


@dataclass
class LineCounters:
    """One CUDA source line of the profiled kernel, its counters summed over its instructions."""

    file: str
    line: int
    text: str  # as ncu read it from the file ("" where it could not open the file)
    samples: int = 0  # warp-state samples taken at this line's instructions
    stalls: dict[str, int] = field(default_factory=dict)  # reason (long_sb, barrier, ...) -> samples
    instructions: int = 0  # warp-level instructions executed
    divergent_branches: int = 0
    global_sectors: int = 0  # L2 sectors the global accesses needed ...
    global_sectors_ideal: int = 0  # ... and would need if coalesced
    global_sectors_excessive: int = 0
    shared_wavefronts: int = 0  # shared-memory wavefronts ...
    shared_wavefronts_ideal: int = 0  # ... without bank conflicts
    shared_wavefronts_excessive: int = 0
    shared_conflict_ways: int = 0  # the worst n-way bank conflict of the line
    spaces: tuple[str, ...] = ()  # Global, Shared, Local, ... the line's memory instructions touch


@dataclass
class Rule:
    """One of ncu's rules that fired for the kernel (its own words and estimated gain)."""

    name: str  # UncoalescedGlobalAccess, SharedMemoryConflicts, ...
    kind: str  # OPT, WRN, INF
    section: str
    description: str
    speedup_pct: float | None = None  # ncu's estimate of the kernel time saved, in %
    speedup_scope: str = ""  # global or local (ncu's "Estimated Speedup Type")


def _int(value: str) -> int:
    try:
        return int(float(value.replace(",", "").strip()))
    except ValueError:
        return 0


def parse_source_page(text: str) -> list[LineCounters]:
    """Every numbered CUDA line of the export, in order (SASS rows are folded into them by ncu)."""
    out: list[LineCounters] = []
    file, header = "", list[str]()
    for row in csv.reader(text.splitlines()):
        if not row:
            continue
        if row[0] in ("File Path", "File Name") and len(row) > 1:
            file, header = row[1], []
            continue
        if row[0] == "Line No":
            header = row
            continue
        if not header or not row[0].strip().isdigit():
            continue
        values = dict(zip(header, row))  # the two "Source" columns: the CUDA text comes first
        text = row[1] if len(row) > 1 and row[1] != UNREADABLE else ""
        out.append(_line(file, int(row[0]), text, header, row, values))
    return out


def _line(file: str, number: int, text: str, header: list[str], row: list[str], values: dict[str, str]) -> LineCounters:
    stalls = {}
    for name, value in zip(header, row):
        if name.startswith(_STALL) and not name.endswith("(Not Issued)") and name != "stall_selected":
            samples = _int(value)
            if samples:
                stalls[name[len(_STALL):]] = samples
    spaces = tuple(s.split("(")[0].strip() for s in values.get("Address Space", "").split(",")
                   if s.strip() and s.strip() != "-")
    return LineCounters(
        file=file, line=number, text=text.strip(), samples=_int(values.get(SAMPLES, "")), stalls=stalls,
        instructions=_int(values.get("Instructions Executed", "")),
        divergent_branches=_int(values.get("Divergent Branches", "")),
        global_sectors=_int(values.get("L2 Theoretical Sectors Global", "")),
        global_sectors_ideal=_int(values.get("L2 Theoretical Sectors Global Ideal", "")),
        global_sectors_excessive=_int(values.get("L2 Theoretical Sectors Global Excessive", "")),
        shared_wavefronts=_int(values.get("L1 Wavefronts Shared", "")),
        shared_wavefronts_ideal=_int(values.get("L1 Wavefronts Shared Ideal", "")),
        shared_wavefronts_excessive=_int(values.get("L1 Wavefronts Shared Excessive", "")),
        shared_conflict_ways=_int(values.get("L1 Conflicts Shared N-Way", "")),
        spaces=spaces)


def parse_rules(text: str, kernel: str = "") -> list[Rule]:
    """The rules of one kernel in a details-page export (the first, or the one named `kernel`),
    each once, in ncu's order."""
    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    if not rows or "Rule Name" not in rows[0]:
        return []
    header, out, seen, first = rows[0], [], set(), None
    for row in rows[1:]:
        values = dict(zip(header, row))
        if kernel and not values.get("Kernel Name", "").startswith(f"{kernel}("):
            continue
        first = first if first is not None else values.get("ID")
        if values.get("ID") != first:
            break
        name = values.get("Rule Name", "")
        description = " ".join(values.get("Rule Description", "").split())
        if not name or (name, description) in seen:
            continue
        seen.add((name, description))
        raw = values.get("Estimated Speedup", "").replace(",", "").strip()
        try:
            speedup = float(raw) if raw else None
        except ValueError:
            speedup = None
        out.append(Rule(name=name, kind=values.get("Rule Type", ""), section=values.get("Section Name", ""),
                        description=description, speedup_pct=speedup,
                        speedup_scope=values.get("Estimated Speedup Type", "")))
    return out


@dataclass
class LineReport:
    """What ncu's source page and rules say of one kernel: the result record of a line profile."""

    lines: list[LineCounters] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    seconds: float = 0.0  # the profile's wall clock (ncu's replays included)
    size: str = ""  # the bench size the kernel ran at ("n=1048576")

    @property
    def main_file(self) -> str:
        """The file the kernel was compiled from: the evaluator's `kernel.cu`, else (a recording
        made outside the evaluator) the first one ncu names (headers come later)."""
        first = self.lines[0].file if self.lines else ""
        return next((c.file for c in self.lines if PurePath(c.file).name == OWN_FILE), first)
