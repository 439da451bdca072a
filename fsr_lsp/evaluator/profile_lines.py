"""Where in its source a kernel loses time: one run under Nsight Compute with source correlation.

The kernel (compiled with -lineinfo, as every build here is) runs once at the bench size in a
child process, under ncu with the sections that carry per-line counters (SourceCounters: stall
samples, excessive sectors, bank-conflict wavefronts, divergent branches) and the summary
(speed of light, occupancy, warp states, memory tables). The report is written once and read
back three ways: the raw page (the summary facts), the source page (per line) and the details
page (ncu's rules and their estimated gains).
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from pathlib import Path

from .. import scratch
from .ncu_source import LineReport, parse_rules, parse_source_page
from .profile import _METRICS, _STALLS, Profiled, find_ncu, parse_ncu_csv
from .records import EvalJob
from .sanitize_main import child_command
from .support import last_line

SECTIONS = ("SourceCounters", "WarpStateStats", "SpeedOfLight", "Occupancy", "LaunchStats",
            "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "SchedulerStats")
COUNTERS_DENIED = "ERR_NVGPUCTRPERM"
DENIED_MESSAGE = ("the GPU's performance counters are restricted to administrators (ncu: ERR_NVGPUCTRPERM): "
                  "allow them (NVreg_RestrictProfilingToAdminUsers=0, or run as root) and profile again")


def profile_lines(job: EvalJob, device_index: int = 0, who: str = "original", timeout: float = 240.0) -> Profiled:
    """The kernel `who` of the job at its bench size: summary facts and per-line counters."""
    tool = find_ncu()
    if tool is None:
        return Profiled(None, "Nsight Compute (ncu) is not on PATH: install it with the CUDA toolkit to profile")
    bench = [p for p in job.sizes if p.role == "bench"][-1:]
    run = dataclasses.replace(job, sizes=bench, mode="sanitize", seeds_per_size=1,
                              sanitize_original=who == "original" or job.candidate is None)
    binary = job.original if run.sanitize_original else job.candidate
    assert binary is not None
    started = time.monotonic()
    with scratch.folder("profile") as tmp:
        report = Path(tmp) / "report"
        cmd = [tool, "--import-source", "yes", "--kernel-name-base", "mangled", "--kernel-name", binary.entry,
               "--launch-count", "1", "-f", "-o", str(report), "--metrics", ",".join(_METRICS.values()) + "," + _STALLS,
               *[a for s in SECTIONS for a in ("--section", s)], *child_command(run, Path(tmp), device_index)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Profiled(None, f"ncu did not finish within {timeout:.0f} s")
        said = proc.stdout + "\n" + proc.stderr
        if COUNTERS_DENIED in said:
            return Profiled(None, DENIED_MESSAGE)
        rep = report.with_suffix(".ncu-rep")
        if not rep.exists():
            return Profiled(None, f"ncu wrote no report (exit {proc.returncode}): {last_line(said)}")
        pages = {name: _export(tool, rep, *args, timeout=timeout) for name, args in (
            ("raw", ("--page", "raw")), ("source", ("--page", "source", "--print-source", "cuda,sass")),
            ("details", ("--page", "details")))}
    facts = parse_ncu_csv(pages["raw"], who)
    if facts is None:
        return Profiled(None, f"ncu gave no metrics: {last_line(pages['raw'] + chr(10) + said)}")
    lines = parse_source_page(pages["source"])
    if not lines:
        return Profiled(facts, f"ncu gave no source lines: {last_line(pages['source'])}")
    return Profiled(facts, lines=LineReport(lines, parse_rules(pages["details"]), time.monotonic() - started,
                                            bench[0].label if bench else ""))


def _export(tool: str, report: Path, *args: str, timeout: float) -> str:
    try:
        proc = subprocess.run([tool, "-i", str(report), "--csv", *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout or proc.stderr
