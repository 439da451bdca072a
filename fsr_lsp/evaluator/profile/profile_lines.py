"""Where in its source a kernel loses time: one run under Nsight Compute with source correlation.

The kernel (compiled with -lineinfo, as every build here is) runs once at the bench size in a
child process, under ncu with the sections that carry per-line counters (SourceCounters: stall
samples, excessive sectors, bank-conflict wavefronts, divergent branches) and the summary
(speed of light, occupancy, warp states, memory tables). The report is written once and read
back three ways: the raw page (the summary facts), the source page (per line) and the details
page (ncu's rules and their estimated gains).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from ... import scratch
from .ncu_source import LineReport, parse_rules, parse_source_page
from .profile import _METRICS, _STALLS, Profiled, bench_run, find_ncu, parse_ncu_csv
from ..records import EvalJob
from ..sanitize.sanitize_main import child_command
from ..support import last_line

SECTIONS = ("SourceCounters", "WarpStateStats", "SpeedOfLight", "Occupancy", "LaunchStats",
            "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "SchedulerStats")
COUNTERS_DENIED = "ERR_NVGPUCTRPERM"
DENIED_MESSAGE = ("the GPU's performance counters are restricted to administrators (ncu: ERR_NVGPUCTRPERM): "
                  "allow them (NVreg_RestrictProfilingToAdminUsers=0, or run as root) and profile again")


def profile_lines(job: EvalJob, device_index: int = 0, who: str = "original", timeout: float = 240.0,
                  cancel: threading.Event | None = None) -> Profiled:
    """The kernel `who` of the job at its bench size: summary facts and per-line counters.
    Setting `cancel` stops ncu and its child at once."""
    tool = find_ncu()
    if tool is None:
        return Profiled(None, "Nsight Compute (ncu) is not on PATH: install it with the CUDA toolkit to profile")
    run = bench_run(job, who)
    binary = job.original if run.sanitize_original else job.candidate
    assert binary is not None
    started = time.monotonic()
    with scratch.folder("profile") as tmp:
        report = Path(tmp) / "report"
        cmd = [tool, "--import-source", "yes", "--kernel-name-base", "mangled", "--kernel-name", binary.entry,
               "--launch-count", "1", "-f", "-o", str(report), "--metrics", ",".join(_METRICS.values()) + "," + _STALLS,
               *[a for s in SECTIONS for a in ("--section", s)], *child_command(run, Path(tmp), device_index)]
        ran = _run(cmd, timeout, cancel or threading.Event())
        if isinstance(ran, Profiled):
            return ran
        said = ran
        if COUNTERS_DENIED in said:
            return Profiled(None, DENIED_MESSAGE)
        rep = report.with_suffix(".ncu-rep")
        if not rep.exists():
            return Profiled(None, f"ncu wrote no report: {last_line(said)}")
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
                                            run.sizes[0].label if run.sizes else ""))


def _run(cmd: list[str], timeout: float, cancel: threading.Event) -> str | Profiled:
    """ncu's output, or why there is none (cancelled, too slow): ncu and the kernel's process
    are one process group, killed together."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            if cancel.is_set() or time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return Profiled(None, "cancelled" if cancel.is_set() else f"ncu did not finish within {timeout:.0f} s")
            time.sleep(0.05)
        out.seek(0)
        return out.read()


def _export(tool: str, report: Path, *args: str, timeout: float) -> str:
    try:
        proc = subprocess.run([tool, "-i", str(report), "--csv", *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout or proc.stderr
