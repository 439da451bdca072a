"""Issue 59: what the warm GPU service saves a user who runs searches one after another. Each
kernel is searched by `fsr optimize --time-budget S` as a user runs it, each run in a fresh
workspace (nothing stored from before), first with the local backend (every command starts its
own worker), then twice with `--backend service` (the first run starts the service, the second
finds it warm: no CUDA start, and the original's runs at the bench size kept from the first).

    python bench/warm_service.py [SECONDS] [--kernel FILE:KERNEL:BENCH ...] [--modes MODE ...]
    python bench/warm_service.py 10 --families --modes service   # each naive family once on one warm service

MODES, per kernel in order (default: local service service): `local` (the command's own worker) or
`service` (the shared service; the table says "cold" for the run that started it, "warm" after).
With `--families` the kernels are bench/naive_kernels/*.cu: with `--modes service` only the first
pays the service's start, and every other family is a warm service's first search of that kernel.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, console, fsr_optimize, save, table

DEFAULT = [f"{ROOT / 'bench' / 'matmul_forms' / 'sgemm_xrows.cu'}:gemm_naive:{{ M = 4096, N = 4096, K = 4096 }}",
           f"{ROOT / 'bench' / 'naive_kernels' / 'softmax.cu'}::"]


def workspace(tmp: Path, source: Path, bench: str, n: int) -> Path:
    folder = tmp / f"run{n}"
    folder.mkdir()
    (folder / ".git").mkdir()
    text = source.read_text()
    if bench:
        text = re.sub(r"bench\s*=\s*\{[^}]*\}", f"bench = {bench}", text, count=1)
    (folder / source.name).write_text(text)
    return folder


def started_service(folder: Path) -> bool:
    """Whether this run started the service (its own debug log says so), not found it warm."""
    log = folder / "fsr-debug.log"
    return log.exists() and "starting the GPU service" in log.read_text(errors="replace")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("seconds", nargs="?", type=float, default=30.0)
    parser.add_argument("--kernel", nargs="*", default=DEFAULT, help="FILE:KERNEL:BENCH (KERNEL and BENCH may be empty)")
    parser.add_argument("--modes", nargs="*", default=["local", "service", "service"], choices=["local", "service"])
    parser.add_argument("--families", action="store_true", help="the kernels of bench/naive_kernels/")
    args = parser.parse_args()
    if args.families:
        args.kernel = [f"{path}::" for path in sorted((ROOT / "bench" / "naive_kernels").glob("*.cu"))]
    rows, records = [], []
    logs = Path(os.environ["OUT"]) / "logs" if os.environ.get("OUT") else None
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_RUNTIME_DIR"] = tmp  # a service of this bench's own, gone with it
        n = 0
        for spec in args.kernel:
            file, kernel, bench = (spec.split(":", 2) + ["", ""])[:3]
            source = Path(file)
            if not kernel:
                kernel = re.search(r"__global__\s+void\s+(\w+)", source.read_text()).group(1)
            for mode in args.modes:
                extra = ("--backend", "service", "--service-idle", "120") if mode == "service" else ()
                n += 1
                folder = workspace(Path(tmp), source, bench, n)
                started = time.perf_counter()
                r = fsr_optimize(folder, source.name, kernel, args.seconds, *extra,
                                 keep=logs / f"{n}-{kernel}.log" if logs else None)
                label = mode if mode == "local" else f"service, {'cold' if started_service(folder) else 'warm'}"
                r["label"], r["kernel"] = label, kernel
                records.append({k: v for k, v in r.items() if k != "log"})
                rows.append([kernel, label, r["status"], f"{r['speedup'] or 1:.2f}x",
                             "-" if r["first_win_s"] is None else f"{r['first_win_s']:.1f}",
                             "-" if r["search_s"] is None else f"{r['search_s']:.1f}", f"{time.perf_counter() - started:.1f}"])
                console.print(f"[run] {kernel} {label}: {r['status']} first win {r['first_win_s']} s; "
                              f"{r['message'][:160]}", markup=False)
                if r["status"].startswith("rc "):
                    console.print(r["log"][-1500:], markup=False)
                save("warm_service", records)
        subprocess.run(["pkill", "-f", "fsr_lsp.evaluator.service"], check=False)
        service_log = Path(tmp) / "fsr" / "service.log"  # the service's own timeline (debug: the runs' logs are)
        if logs is not None and service_log.exists():
            shutil.copy(service_log, logs / "service.log")
    table("fsr optimize one after another: local, then the service cold and warm (fresh workspace each run)",
          ["kernel", "backend", "verdict", "speedup", "first win s", "search s", "wall s"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
