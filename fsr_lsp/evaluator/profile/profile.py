"""Nsight Compute facts about one kernel at the bench size, for a model's next prompt.

A child process runs the job once per size (the sanitizer's child, at the bench size only)
under `ncu`, which replays the kernel for its counters. Read back: DRAM and L2 throughput and
SM throughput as % of peak, achieved occupancy, the top warp-stall reasons, shared-memory bank
conflicts and local-memory (spill) traffic; from those, the roofline position.
"""

from __future__ import annotations

import csv
import dataclasses
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ... import scratch
from .ncu_source import LineReport
from ..records import EvalJob
from ..sanitize.sanitize_main import child_command
from ..support import find_cuda_tool, last_line

_METRICS = {
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "duration_ns": "gpu__time_duration.sum",
    "bank_conflicts_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "bank_conflicts_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "local_ld": "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "local_st": "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
}
_STALL_PREFIX, _STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
_STALLS = f"regex:{_STALL_PREFIX}.*{_STALL_SUFFIX.replace('.', '[.]')}"
TOP_STALLS = 3
_TO_MS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3, "s": 1e3}


@dataclass
class Stall:
    reason: str  # long_scoreboard, barrier, mio_throttle, ...
    per_issue: float  # warps stalled for this reason per issued instruction


@dataclass
class ProfileFacts:
    kernel_ms: float
    dram_pct: float
    l2_pct: float
    sm_pct: float
    occupancy_pct: float
    stalls: list[Stall] = field(default_factory=list)  # the top reasons, largest first
    bank_conflicts: int = 0  # shared-memory loads and stores
    local_sectors: int = 0  # local-memory (spill) sectors read and written
    who: str = "candidate"  # which kernel of the job was profiled

    @property
    def bound(self) -> str:
        return "memory" if max(self.dram_pct, self.l2_pct) >= self.sm_pct else "compute"

    @property
    def bound_pct(self) -> float:
        return max(self.dram_pct, self.l2_pct) if self.bound == "memory" else self.sm_pct

    def describe(self) -> list[str]:
        stalls = ", ".join(f"{s.reason.replace('_', ' ')} ({s.per_issue:.1f})" for s in self.stalls) or "none"
        return [
            f"roofline: {self.bound}-bound, at {self.bound_pct:.0f}% of that bound",
            f"DRAM throughput {self.dram_pct:.0f}% of peak, L2 {self.l2_pct:.0f}%, SM {self.sm_pct:.0f}%",
            f"achieved occupancy {self.occupancy_pct:.0f}% of the warps an SM can hold",
            f"top warp stalls (warps stalled per issued instruction): {stalls}",
            f"shared-memory bank conflicts: {self.bank_conflicts}; local-memory (spill) sectors: {self.local_sectors}",
        ]


@dataclass
class Profiled:
    facts: ProfileFacts | None
    note: str = ""  # why there are no facts (or no lines)
    lines: LineReport | None = None  # per source line, when asked for (profile_lines)


def find_ncu() -> str | None:
    return find_cuda_tool("ncu")


def bench_run(job: EvalJob, who: str) -> EvalJob:
    """The job as ncu's child runs it: the kernel `who` once, at the bench size alone."""
    bench = [p for p in job.sizes if p.role == "bench"][-1:]
    return dataclasses.replace(job, sizes=bench, mode="sanitize", seeds_per_size=1,
                               sanitize_original=who == "original" or job.candidate is None)


def profile(job: EvalJob, device_index: int = 0, who: str = "candidate", timeout: float = 180.0) -> Profiled:
    """The kernel `who` of the job ("candidate" or "original") at the job's bench size."""
    tool = find_ncu()
    if tool is None:
        return Profiled(None, "Nsight Compute (ncu) is not on PATH: no profiler facts")
    run = bench_run(job, who)
    metrics = ",".join(_METRICS.values()) + "," + _STALLS
    with scratch.folder("profile") as tmp:
        log = Path(tmp) / "ncu.csv"
        binary = job.original if run.sanitize_original else job.candidate
        assert binary is not None
        cmd = [tool, "--csv", "--page", "raw", "--kernel-name-base", "mangled", "--kernel-name", binary.entry,
               "--launch-count", "1",
               "--metrics", metrics, "--log-file", str(log),
               *child_command(run, Path(tmp), device_index)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Profiled(None, f"ncu did not finish within {timeout:.0f} s")
        text = log.read_text(errors="replace") if log.exists() else ""
    facts = parse_ncu_csv(text, who)
    if facts is None:
        why = last_line(text + "\n" + proc.stdout + "\n" + proc.stderr)
        return Profiled(None, f"ncu gave no metrics (exit {proc.returncode}): {why}")
    return Profiled(facts)


def parse_ncu_csv(text: str, who: str = "candidate") -> ProfileFacts | None:
    """The first profiled kernel of `ncu --csv --page raw`: a header row, a units row (ncu scales
    a duration to ns, us or ms as it sees fit), then one row per kernel; numbers carry thousands
    separators. Lines that are not CSV are skipped."""
    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    if len(rows) < 3 or "ID" not in rows[0]:
        return None
    header, data = rows[0], rows[2]
    values = dict(zip(header, data))
    units = dict(zip(header, rows[1]))

    def number(name: str) -> float:
        raw = values.get(name, "").replace(",", "").strip()
        try:
            return float(raw)
        except ValueError:
            return 0.0

    if not any(name in values for name in _METRICS.values()):
        return None
    stalls = [Stall(name[len(_STALL_PREFIX):-len(_STALL_SUFFIX)], number(name)) for name in header
              if name.startswith(_STALL_PREFIX) and name.endswith(_STALL_SUFFIX)]
    # `selected` is the issuing warp itself, not a stall.
    stalls = sorted((s for s in stalls if s.per_issue > 0 and s.reason != "selected"), key=lambda s: -s.per_issue)
    m = {key: number(name) for key, name in _METRICS.items()}
    duration_ms = m["duration_ns"] * _TO_MS.get(units.get(_METRICS["duration_ns"], "nsecond"), 1e-6)
    return ProfileFacts(kernel_ms=duration_ms, dram_pct=m["dram_pct"], l2_pct=m["l2_pct"], sm_pct=m["sm_pct"],
                        occupancy_pct=m["occupancy_pct"], stalls=stalls[:TOP_STALLS],
                        bank_conflicts=int(m["bank_conflicts_ld"] + m["bank_conflicts_st"]),
                        local_sectors=int(m["local_ld"] + m["local_st"]), who=who)
