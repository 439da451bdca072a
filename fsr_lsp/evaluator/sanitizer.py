"""compute-sanitizer memcheck and racecheck on a verified candidate, at a small size.

Sanitizers slow kernels by 10-100x, so they run once, on the winner, outside the timing
worker: a child process runs the job in `sanitize` mode under the tool.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .records import Check, EvalJob
from .serde import to_json

TOOLS = ("memcheck", "racecheck")
_EXIT_ON_ERROR = 86
# memcheck: "ERROR SUMMARY: 2 errors"; racecheck: "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?")


def find_sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and os.access(Path(home) / "bin" / "compute-sanitizer", os.X_OK):
            return str(Path(home) / "bin" / "compute-sanitizer")
    return None


def sanitize(job: EvalJob, device_index: int = 0, tools: tuple[str, ...] = TOOLS, timeout: float = 300.0) -> list[Check]:
    """One Check per tool: pass, fail (with the tool's first report) or skip (no tool)."""
    tool_path = find_sanitizer()
    if tool_path is None:
        return [Check(f"sanitizer {t}", "skip", "compute-sanitizer not found") for t in tools]
    small = dataclasses.replace(job, sizes=[job.sizes[0]], mode="sanitize", seeds_per_size=1)
    checks = []
    with tempfile.TemporaryDirectory(prefix="fsr-sanitize-") as tmp:
        path = Path(tmp) / "job.json"
        path.write_text(to_json(small))
        for tool in tools:
            # No kernel filter: besides the candidate only torch's input fills run in that child.
            cmd = [tool_path, "--tool", tool, "--error-exitcode", str(_EXIT_ON_ERROR), "--print-limit", "10",
                   sys.executable, "-m", "fsr_lsp.evaluator.sanitize_main", str(path), str(device_index)]
            checks.append(_run_tool(tool, cmd, timeout, job.sizes[0].label))
    return checks


def _run_tool(tool: str, cmd: list[str], timeout: float, size: str) -> Check:
    name = f"sanitizer {tool}"
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Check(name, "skip", f"did not finish within {timeout:.0f} s")
    out = proc.stdout + proc.stderr
    summary = _SUMMARY.search(out)
    errors = int(summary.group(1) or summary.group(2)) if summary else None
    if proc.returncode == _EXIT_ON_ERROR or (errors or 0) > 0:
        return Check(name, "fail", _first_report(out))
    if proc.returncode != 0:
        return Check(name, "skip", f"the tool could not run here (exit {proc.returncode}): {_last_line(out)}")
    if errors is None:
        return Check(name, "skip", f"no summary from the tool: {_last_line(out)}")
    return Check(name, "pass", f"0 errors at {size}")


def _first_report(out: str) -> str:
    lines = [ln.replace("=========", "").strip() for ln in out.splitlines() if ln.startswith("=========")]
    useful = [ln for ln in lines if ln and not ln.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "Saved host"))]
    return " | ".join(useful[:4]) or _last_line(out)


def _last_line(out: str) -> str:
    lines = [ln.strip() for ln in out.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"
