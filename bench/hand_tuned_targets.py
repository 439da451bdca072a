"""Issue 57's targets, each through `fsr optimize --time-budget SECONDS` as a user runs it (built-in
generator, sanitizers on, a fresh workspace), beside the yardstick measured in the same run:
cuBLAS (TF32 off) for a matrix product, a device-to-device copy for data movement.

Targets: the 4096^3 worklog-form product >= 36 TFLOPS within 120 s, its first win <= 15 s;
other sizes and layouts >= 2/3 of cuBLAS; an 8192^2 transpose >= 80% of a copy; a 3x3 stencil
>= 70%.

    python bench/hand_tuned_targets.py [NAME...] [--scale S]   (S scales every time budget)
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import ROOT, console, event_median_ms, fsr_optimize, save, table


@dataclass(frozen=True)
class Target:
    name: str
    file: Path
    kernel: str
    bench: str
    seconds: float
    kind: str  # "matmul" or "move"
    goal: float  # TFLOPS share of cuBLAS (or absolute TFLOPS when > 1), or share of a copy


FORMS = ROOT / "bench" / "matmul_forms"
NAIVE = ROOT / "bench" / "naive_kernels"
TARGETS = [
    Target("sgemm 4096^3, x walks C's rows, alpha/beta", FORMS / "sgemm_xrows.cu", "gemm_naive",
           "{ M = 4096, N = 4096, K = 4096 }", 120, "matmul", 36.0),
    Target("sgemm 1000x3000x777, B column-major", FORMS / "sgemm_colmajor_b.cu", "matmul_bt",
           "{ M = 1000, N = 3000, K = 777 }", 60, "matmul", 2 / 3),
    Target("sgemm batched 16 x 512 x 512 x 256", FORMS / "sgemm_batched.cu", "bmm",
           "{ batch = 16, M = 512, N = 512, K = 256 }", 60, "matmul", 2 / 3),
    Target("transpose 8192^2", NAIVE / "transpose.cu", "transpose_naive", "{ rows = 8192, cols = 8192 }", 40,
           "move", 0.8),
    Target("3x3 stencil 8192^2", NAIVE / "stencil3x3.cu", "blur3x3", "{ h = 8192, w = 8192 }", 40, "move", 0.7),
]


def sizes_of(bench: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+) = (\d+)", bench)}


def timed(torch, run) -> float:
    flush = torch.empty(64 << 20, dtype=torch.int8, device="cuda")
    return event_median_ms(torch, run, flush.zero_)


def yardstick(t: Target) -> float:
    """cuBLAS's ms for the same product, or a copy's GB/s (bytes read plus written)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    s = sizes_of(t.bench)
    if t.kind == "matmul":
        batch = s.get("batch", 1)
        a = torch.randn(batch, s["M"], s["K"], device="cuda")
        b = torch.randn(batch, s["K"], s["N"], device="cuda")
        c = torch.empty(batch, s["M"], s["N"], device="cuda")
        return timed(torch, lambda: torch.bmm(a, b, out=c))
    n = 1
    for v in s.values():
        n *= v
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    return 2 * n * 4 / timed(torch, lambda: dst.copy_(src)) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("only", nargs="*")
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    rows, records, misses = [], {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for t in TARGETS:
            if args.only and not any(o in t.name for o in args.only):
                continue
            folder = Path(tmp) / re.sub(r"\W+", "_", t.name)
            folder.mkdir()
            (folder / ".git").mkdir()
            text = re.sub(r"bench\s*=\s*\{[^}]*\}", f"bench = {t.bench}", t.file.read_text(), count=1)
            (folder / t.file.name).write_text(text)
            logs = Path(os.environ["OUT"]) / "logs" if os.environ.get("OUT") else None
            r = fsr_optimize(folder, t.file.name, t.kernel, t.seconds * args.scale,
                             keep=logs / f"{folder.name}.log" if logs else None)
            ms = re.search(r"-> ([\d.e+-]+) ms", r["message"])
            best_ms = float(ms.group(1)) if ms and r["speedup"] else None
            yard = yardstick(t)
            s = sizes_of(t.bench)
            if t.kind == "matmul":
                flops = 2.0 * s["M"] * s["N"] * s["K"] * s.get("batch", 1)
                got = flops / best_ms / 1e9 if best_ms else 0.0
                cublas = flops / yard / 1e9
                share = got / cublas
                met = got >= t.goal if t.goal > 1 else share >= t.goal
                measure = f"{got:.1f} TFLOPS ({share:.0%} of cuBLAS's {cublas:.1f})"
            else:
                n = 1
                for v in s.values():
                    n *= v
                got = 2 * n * 4 / best_ms / 1e6 if best_ms else 0.0
                share = got / yard
                met = share >= t.goal
                measure = f"{got:.0f} GB/s ({share:.0%} of a copy's {yard:.0f})"
            first = r["first_win_s"]
            if t.name.startswith("sgemm 4096") and (first is None or first > 15):
                misses.append(f"{t.name}: first win {first} s (target 15 s)")
            if not met:
                misses.append(f"{t.name}: {measure}")
            rows.append([t.name, f"{t.seconds * args.scale:g}", r["status"], f"{r['speedup'] or 1:.2f}x",
                         f"{best_ms:.4g}" if best_ms else "-", measure, "-" if first is None else f"{first:.1f}",
                         "met" if met else "MISSED"])
            console.print(f"[target] {t.name}: {r['status']} {measure}, first win {first} s; {r['message'][:240]}",
                          markup=False)
            if r["status"].startswith("rc "):
                console.print(r["log"][-2000:], markup=False)
            records[t.name] = {k: v for k, v in r.items() if k != "log"} | {"measure": measure, "met": met,
                                                                            "log_tail": r["log"][-3000:]}
            save("hand_tuned_targets", {"date": time.strftime("%Y-%m-%d"), "targets": records})
    table("fsr optimize on issue 57's targets (built-in generator, sanitizers on)",
          ["kernel", "budget s", "verdict", "speedup", "ms", "against the yardstick", "first win s", "target"], rows)
    for m in misses:
        print("TARGET MISSED:", m)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
