"""Shared helpers for the GPU benchmarks: tables, result files, the evaluator."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

console = Console(width=120)


def table(title: str, columns: list[str], rows: list[list[object]]) -> None:
    t = Table(*columns, title=title, box=None, pad_edge=False)
    for row in rows:
        t.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
    console.print(t)


def save(name: str, data: object) -> None:
    """JSON results next to the benchmark, and under $OUT when the device tool runs us."""
    text = json.dumps(data, indent=2, default=str)
    for folder in filter(None, [os.environ.get("OUT"), str(ROOT / "bench" / "results")]):
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(text)


def spread_pct(values: list[float]) -> float:
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


def fsr_optimize(folder: Path, file: str, kernel: str, seconds: float, *extra: str, keep: Path | None = None) -> dict:
    """`fsr optimize FILE --kernel KERNEL --time-budget SECONDS` run in `folder` as a user runs it
    (its own process, its own evaluator, the workspace's .fsr/): its verdict, the verified
    speedup, when its first fully verified win came (seconds into the search, as it prints),
    its winner's note and its wall time. `keep`: where fsr's own debug log goes afterwards (the
    search's timeline, for whoever asks where its seconds went)."""
    t0 = time.perf_counter()
    debug = Path(folder) / "fsr-debug.log"  # fsr's own log: a failure's traceback, for the result
    proc = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "optimize", file, "--kernel", kernel,
                           "--time-budget", str(seconds), *extra], capture_output=True, text=True, cwd=folder,
                          timeout=seconds * 4 + 180, env={**os.environ, "FSR_LOG_FILE": str(debug)})
    out = proc.stdout + proc.stderr
    if keep is not None:  # fsr's log, and what it printed (its table of candidates and verdicts)
        keep.parent.mkdir(parents=True, exist_ok=True)
        if debug.exists():
            shutil.copy(debug, keep)
        keep.with_suffix(".out").write_text(out)
    trace = ""  # where fsr failed: its traceback from its own log (the user sees one line)
    if proc.returncode not in (0, 130) and debug.exists():
        text = debug.read_text(errors="replace")
        at = text.rfind("Traceback (most recent call last)")
        trace = text[at:at + 4000] if at >= 0 else ""
    first = re.search(r"first fully verified win after ([\d.]+) s; the search took ([\d.]+) s", out)
    final = re.search(rf"{re.escape(kernel)}: (\w[\w ]*?): (.*)", out)
    speedup = re.search(r"([\d.]+)x", final.group(2)) if final else None
    rows = re.findall(r"^\s*\d+\s+\d+\s+(?:original|\d+)\s+(.*?)\s+verified\s+[\d.]+\s+([\d.]+)x\s*$", proc.stdout, re.M)
    winner = max(rows, key=lambda r: float(r[1]))[0] if rows else None
    return {"status": final.group(1) if final else f"rc {proc.returncode}",
            "speedup": float(speedup.group(1)) if speedup and final and final.group(1) == "improved" else None,
            "first_win_s": float(first.group(1)) if first else None,
            "search_s": float(first.group(2)) if first else None, "wall_s": time.perf_counter() - t0,
            "message": final.group(2) if final else "", "winner": winner,
            "log": proc.stdout[-3000:] + proc.stderr[-1000:] + trace}


def event_median_ms(torch, run, flush, reps: int = 30, budget_s: float = 2.0) -> float:
    """Median of `run`'s CUDA-event times after a warm-up run, `flush()` (the L2 emptied) before
    each; at least 5 runs, fewer than `reps` once `budget_s` of wall clock is spent."""
    run()
    torch.cuda.synchronize()
    times: list[float] = []
    started = time.perf_counter()
    for _ in range(reps):
        flush()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
        if time.perf_counter() - started > budget_s and len(times) >= 5:
            break
    return statistics.median(times)


def lsp_message(stream) -> dict | None:
    """The next JSON-RPC message of a language server's stdout (None at its end)."""
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        chunk = stream.read(1)
        if not chunk:
            return None
        header += chunk
    found = re.search(rb"Content-Length: (\d+)", header)
    return json.loads(stream.read(int(found.group(1)))) if found else None
