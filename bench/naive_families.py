"""Issue 45's first target: the built-in search on our naive kernels of the usual families
(`bench/naive_kernels/`), each through `fsr optimize --time-budget SECONDS` as a user runs it, in
a fresh workspace of its own (nothing stored from before), sanitizers on as by default.

Targets: geometric-mean speedup >= 3.9x at 40 s a kernel; the first fully verified win (as
`fsr optimize` prints it: seconds into the search, the sanitizers' verdict included) <= 8 s on
each kernel.

    python bench/naive_families.py [SECONDS] [KERNEL...]
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, console, fsr_optimize, save, table

from fsr_lsp.kernels import discover
from fsr_lsp.source import SourceText

KERNELS = sorted((ROOT / "bench" / "naive_kernels").glob("*.cu"))
TARGET_GEOMEAN, TARGET_FIRST_WIN = 3.9, 8.0


def main(seconds: float, only: list[str]) -> int:
    rows, records, speedups, misses = [], {}, [], []
    with tempfile.TemporaryDirectory() as tmp:
        for path in KERNELS:
            if only and path.stem not in only:
                continue
            kernel = discover(SourceText(path.read_text())).kernels[0].name
            folder = Path(tmp) / path.stem
            folder.mkdir()
            (folder / ".git").mkdir()  # the workspace root: its own .fsr/
            shutil.copy(path, folder / path.name)
            logs = Path(os.environ["OUT"]) / "logs" if os.environ.get("OUT") else None
            r = fsr_optimize(folder, path.name, kernel, seconds, keep=logs / f"{path.stem}.log" if logs else None)
            speedup = r["speedup"] or 1.0
            speedups.append(speedup)
            first = r["first_win_s"]
            if first is None or first > TARGET_FIRST_WIN:
                misses.append(f"{path.stem}: first win {first if first is not None else 'none'} s")
            rows.append([path.stem, r["status"], f"{speedup:.2f}x", r["winner"] or "-",
                         "-" if first is None else f"{first:.1f}", f"{r['search_s'] or 0:.0f}", f"{r['wall_s']:.0f}"])
            console.print(f"[naive] {path.stem}: {r['status']} {speedup:.2f}x ({r['winner']}), first win {first} s, "
                          f"wall {r['wall_s']:.0f} s; {r['message'][:200]}", markup=False)
            if r["status"].startswith("rc "):
                console.print(r["log"][-1500:], markup=False)
            records[path.stem] = {k: v for k, v in r.items() if k != "log"} | {"log_tail": r["log"][-1500:]}
            save("naive_families", {"date": time.strftime("%Y-%m-%d"), "seconds": seconds, "kernels": records})
    geo = math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else 0.0
    table(f"fsr optimize --time-budget {seconds:g} on bench/naive_kernels (built-in generator, sanitizers on)",
          ["kernel", "verdict", "speedup", "winner", "first win s", "search s", "wall s"], rows)
    print(f"geomean {geo:.3f}x (target {TARGET_GEOMEAN}x)")
    if geo < TARGET_GEOMEAN:
        misses.insert(0, f"geomean {geo:.2f}x")
    for m in misses:
        print("TARGET MISSED:", m)
    save("naive_families", {"date": time.strftime("%Y-%m-%d"), "seconds": seconds, "kernels": records,
                            "geomean": geo, "misses": misses})
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    budget = float(args.pop(0)) if args and args[0].replace(".", "").isdigit() else 40.0
    sys.exit(main(budget, args))
