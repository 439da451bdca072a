"""`fsr confirm` on rewrites applied to public programs (issue 58, item 3), as a user runs it:
`fsr capture --build "make ..." -- ./prog ARGS`, `fsr optimize FILE -k K --time-budget S --apply`,
then `fsr confirm FILE -k K`. Per program: the speedup fsr verified, the kernel's GPU time a
launch in the program before and after (the capture's records), the program's own gain, and
whether exit status and output stayed the same.

    python bench/confirm_programs.py CORPUS [--seconds 40] [--only NAME...]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import console, save, table
from build_agreement import HECBENCH_CMAKE


@dataclass(frozen=True)
class Program:
    name: str
    project: str
    folder: str
    build: str
    run: tuple[str, ...]
    file: str
    kernel: str


PROGRAMS = [
    Program("softmax", "zjin-lcf/HeCBench", "hecbench/src/softmax-cuda", "make ARCH=sm_90",
            ("./main", "100000", "784", "0", "10"), "main.cu", "softMax"),
    Program("reduce v0", "Liu-xiandong/How_to_optimize_in_GPU", "htogpu/reduce", "mkdir -p bin && make",
            ("./bin/reduce_v0",), "reduce_v0_baseline.cu", "reduce0"),
    Program("stddev", "zjin-lcf/HeCBench", "hecbench/src/stddev-cuda", "make ARCH=sm_90",
            ("./main", "16384", "16384", "10"), "main.cu", "sopKernel"),
    Program("cooling", "zjin-lcf/HeCBench", "hecbench/src/cooling-cuda", "make ARCH=sm_90",
            ("./main", "1000000", "100"), "main.cu", "cool_kernel"),
    Program("md", "zjin-lcf/HeCBench", "hecbench/src/md-cuda", "make ARCH=sm_90 SP=yes", ("./main", "3", "100"),
            "main.cu", "md"),
    Program("reduce v1", "Liu-xiandong/How_to_optimize_in_GPU", "htogpu/reduce",
            "mkdir -p bin && nvcc -o bin/reduce_v1 reduce_v1_no_divergence_branch.cu", ("./bin/reduce_v1",), "reduce_v1_no_divergence_branch.cu", "reduce1"),
    Program("reduce v3", "Liu-xiandong/How_to_optimize_in_GPU", "htogpu/reduce",
            "mkdir -p bin && nvcc -o bin/reduce_v3 reduce_v3_add_during_load.cu", ("./bin/reduce_v3",), "reduce_v3_add_during_load.cu", "reduce3"),
    Program("hellinger", "zjin-lcf/HeCBench", "hecbench/src/hellinger-cuda", "make ARCH=sm_90", ("./main", "10"),
            "main.cu", "hellinger"),
    Program("softmax (CMake)", "zjin-lcf/HeCBench", "hecbench", HECBENCH_CMAKE.format(target="softmax-cuda"),
            ("./build/cuda-sm90/bin/cuda/softmax", "100000", "784", "0", "10"), "src/softmax-cuda/main.cu", "softMax"),
    Program("stddev (CMake)", "zjin-lcf/HeCBench", "hecbench", HECBENCH_CMAKE.format(target="stddev-cuda"),
            ("./build/cuda-sm90/bin/cuda/stddev", "16384", "16384", "10"), "src/stddev-cuda/main.cu", "sopKernel"),
    Program("matrix multiply", "CoffeeBeforeArch/cuda_programming", "cuda_programming/02_matrix_mul/baseline",
            "nvcc -o mmul mmul.cu", ("./mmul",), "mmul.cu", "matrixMul"),
    Program("matrix transpose", "brucefan1983/CUDA-Programming", "CUDA-Programming/src/07-global-memory",
            "nvcc -O3 -arch=sm_90 -o matrix matrix.cu", ("./matrix", "2048"), "matrix.cu", "transpose1"),
    Program("array sum", "brucefan1983/CUDA-Programming", "CUDA-Programming/src/08-shared-memory",
            "nvcc -O3 -arch=sm_90 -o reduce2gpu reduce2gpu.cu", ("./reduce2gpu",), "reduce2gpu.cu", "reduce_global"),
    Program("sum reduction", "CoffeeBeforeArch/cuda_programming", "cuda_programming/03_sum_reduction/diverged",
            "nvcc -o sumReduction sumReduction.cu", ("./sumReduction",), "sumReduction.cu", "sumReduction"),
    Program("matrix multiply (float)", "Infatoshi/cuda-course", "cuda-course/05_Writing_your_First_Kernels/03 Profiling",
            "nvcc -o 01 01_naive_matmul.cu", ("./01",), "01_naive_matmul.cu", "matrixMultiply"),
]


def fsr(*args: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def one(p: Program, corpus: Path, work: Path, seconds: float) -> dict:
    folder = work / re.sub(r"\W+", "_", p.name)
    shutil.copytree(corpus / p.folder, folder)
    (folder / ".git").mkdir()
    row: dict = {"program": p.name, "project": p.project, "kernel": p.kernel}
    captured = fsr("capture", "--build", p.build, "--timeout", "120", "--", *p.run, cwd=folder, timeout=300)
    if captured.returncode != 0:
        row["why"] = "capture: " + (captured.stderr or captured.stdout).strip()[-200:]
        return row
    optimized = fsr("optimize", p.file, "-k", p.kernel, "--time-budget", str(seconds), "--apply", cwd=folder,
                    timeout=seconds + 240)
    verified = re.search(r"([\d.]+)x", optimized.stdout.split("applied to")[0].splitlines()[-1]
                         if "applied to" in optimized.stdout else "")
    row["optimize"] = (optimized.stdout + optimized.stderr).strip().splitlines()[-3:]
    if "applied to" not in optimized.stdout:
        row["why"] = "no verified rewrite applied"
        listed = fsr("history", p.file, "-k", p.kernel, cwd=folder, timeout=60)
        row["history"] = (listed.stdout + listed.stderr).strip().splitlines()[-40:]  # what was tried, and its verdicts
        return row
    confirmed = fsr("confirm", p.file, "-k", p.kernel, "--timeout", "200", cwd=folder, timeout=500)
    row["confirm"] = confirmed.stdout.strip().splitlines()
    row["status"] = {0: "confirmed", 1: "differs", 2: "failed"}.get(confirmed.returncode, str(confirmed.returncode))
    text = confirmed.stdout
    if m := re.search(r"([\d.]+) ms -> ([\d.]+) ms a launch", text):
        row["before_ms"], row["after_ms"] = float(m.group(1)), float(m.group(2))
    if m := re.search(r"fsr verified ([\d.]+)x", text):
        row["verified"] = float(m.group(1))
    elif verified:
        row["verified"] = float(verified.group(1))
    row["exit_same"] = "as before" in text
    row["output_same"] = "the same output" in text
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--budget", type=float, default=400.0, help="start no program after this many seconds")
    args = parser.parse_args()
    rows = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for p in PROGRAMS:
            if args.only and not any(o in p.name for o in args.only):
                continue
            if time.monotonic() - started > args.budget:
                rows.append({"program": p.name, "why": "not run: the budget was spent"})
                continue
            t0 = time.monotonic()
            rows.append(one(p, args.corpus.resolve(), Path(tmp), args.seconds))
            console.print(f"{p.name}: {time.monotonic() - t0:.0f} s", highlight=False)
            save("confirm_programs", rows)
    shown = []
    for r in rows:
        gain = r["before_ms"] / r["after_ms"] if r.get("before_ms") and r.get("after_ms") else None
        share = gain / r["verified"] if gain and r.get("verified") else None
        shown.append([r["program"], r.get("kernel", ""), r.get("verified", "-"), r.get("before_ms", "-"),
                      r.get("after_ms", "-"), f"{gain:.2f}" if gain else "-", f"{share:.0%}" if share else "-",
                      r.get("exit_same", "-"), r.get("output_same", "-"), r.get("status", r.get("why", ""))[:50]])
    table("fsr confirm after fsr optimize --apply, in the programs' own runs",
          ["program", "kernel", "verified x", "run ms before", "after", "run x", "of verified", "exit same",
           "output same", "status"], shown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
