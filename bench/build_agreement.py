"""Numbers the user's own build shows (issue 58): public programs built their own way (their
Makefiles, some with --use_fast_math or -D flags that change a kernel), captured with
`fsr capture --build`, then each captured kernel's spec proven as `fsr optimize` proves it before
its first round, the proof timing the original at the captured launch's sizes. Per kernel: the
flags fsr read from the build, the kernel's median GPU time in the program's own run (the
capture's CUPTI records), fsr's time with the build's flags, and fsr's time without them.

    python bench/build_agreement.py CORPUS [--only NAME...] [--budget SECONDS] [--snapshot-bytes N]

With --snapshot-bytes the capture saves the run's inputs (up to N bytes a launch) and fsr times the
original on them (`bench_inputs = "captured"`): the agreement where the kernel's work depends on
its data (branches on values, indices from the data).

CORPUS holds the projects' folders as ENTRIES name them (hecbench/src/softmax-cuda, ...).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import console, save, table

from fsr_lsp.capture import latest_capture
from fsr_lsp.drafting.proof import prove_with
from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.evaluator import Evaluator
from fsr_lsp.evaluator.backends.local import LocalBackend
from fsr_lsp.kernels import find_kernel
from fsr_lsp.settings import Settings
from fsr_lsp.specs.edit import set_key
from fsr_lsp.workflows.optimize import KernelJob, Optimizer, plan_spec


@dataclass(frozen=True)
class Entry:
    name: str
    project: str
    folder: str  # under CORPUS
    build: str
    run: tuple[str, ...]
    kernels: int = 2  # the most time-taking kernels of the run, at most


# HeCBench's own CMake build (its CMAKE_BUILD.md: the cuda-sm90 preset; Ninja where it is installed, as the
# preset asks, else Make): -use_fast_math from the benchmark's CMakeLists, relocatable device code, the
# include paths in CMake's response files
HECBENCH_CMAKE = ("{{ command -v ninja > /dev/null && G=Ninja || G='Unix Makefiles'; }} && "
                  "cmake --preset cuda-sm90 -G \"$G\" -DHECBENCH_ENABLE_TESTING=OFF > /dev/null "
                  "&& cmake --build build/cuda-sm90 --target {target}")

ENTRIES = [
    Entry("softmax", "zjin-lcf/HeCBench", "hecbench/src/softmax-cuda", "make ARCH=sm_90", ("./main", "100000", "784", "0", "10"), 1),
    Entry("softmax2", "zjin-lcf/HeCBench", "hecbench/src/softmax-cuda", "make ARCH=sm_90", ("./main", "100000", "784", "1", "10"), 1),
    Entry("stddev", "zjin-lcf/HeCBench", "hecbench/src/stddev-cuda", "make ARCH=sm_90", ("./main", "16384", "16384", "10")),
    Entry("cooling", "zjin-lcf/HeCBench", "hecbench/src/cooling-cuda", "make ARCH=sm_90", ("./main", "1000000", "100")),
    Entry("logprob", "zjin-lcf/HeCBench", "hecbench/src/logprob-cuda", "make ARCH=sm_90", ("./main", "256", "8", "50257", "10")),
    Entry("p4", "zjin-lcf/HeCBench", "hecbench/src/p4-cuda", "make ARCH=sm_90", ("./main", "10")),
    Entry("md (-DSINGLE_PRECISION)", "zjin-lcf/HeCBench", "hecbench/src/md-cuda", "make ARCH=sm_90 SP=yes", ("./main", "3", "100")),
    Entry("hellinger", "zjin-lcf/HeCBench", "hecbench/src/hellinger-cuda", "make ARCH=sm_90", ("./main", "10")),
    Entry("gups (-DSTATIC_SHMEM)", "NVIDIA-developer-blog/code-samples", "codesamples/posts/gups", "make GPU_ARCH=90",
          ("./gups", "-n", "24")),
    Entry("reduce v0", "Liu-xiandong/How_to_optimize_in_GPU", "htogpu/reduce", "mkdir -p bin && make",
          ("./bin/reduce_v0",), 1),
    Entry("reduce v3", "Liu-xiandong/How_to_optimize_in_GPU", "htogpu/reduce", "mkdir -p bin && make",
          ("./bin/reduce_v3",), 1),
    Entry("memory-coalescing (CMake)", "Kobzol/hardware-effects-gpu", "kobzol",
          "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "
          "&& cmake --build build --target memory-coalescing", ("./build/memory-coalescing/memory-coalescing", "1", "32"), 1),
    Entry("softmax (CMake)", "zjin-lcf/HeCBench", "hecbench", HECBENCH_CMAKE.format(target="softmax-cuda"),
          ("./build/cuda-sm90/bin/cuda/softmax", "100000", "784", "0", "10"), 1),
    Entry("stddev (CMake)", "zjin-lcf/HeCBench", "hecbench", HECBENCH_CMAKE.format(target="stddev-cuda"),
          ("./build/cuda-sm90/bin/cuda/stddev", "16384", "16384", "10"), 1),
    Entry("hellinger (CMake)", "zjin-lcf/HeCBench", "hecbench", HECBENCH_CMAKE.format(target="hellinger-cuda"),
          ("./build/cuda-sm90/bin/cuda/hellinger", "10"), 1),
    Entry("matrix multiply", "CoffeeBeforeArch/cuda_programming", "cuda_programming/02_matrix_mul/baseline",
          "nvcc -o mmul mmul.cu", ("./mmul",), 1),
    Entry("matrix transpose", "brucefan1983/CUDA-Programming", "CUDA-Programming/src/07-global-memory",
          "nvcc -O3 -arch=sm_90 -o matrix matrix.cu", ("./matrix", "2048"), 4),
    Entry("array sum", "brucefan1983/CUDA-Programming", "CUDA-Programming/src/08-shared-memory",
          "nvcc -O3 -arch=sm_90 -o reduce2gpu reduce2gpu.cu", ("./reduce2gpu",), 3),
    Entry("sum reduction", "CoffeeBeforeArch/cuda_programming", "cuda_programming/03_sum_reduction/diverged",
          "nvcc -o sumReduction sumReduction.cu", ("./sumReduction",), 1),
    Entry("matrix multiply (float)", "Infatoshi/cuda-course", "cuda-course/05_Writing_your_First_Kernels/03 Profiling",
          "nvcc -o 01 01_naive_matmul.cu", ("./01",), 1),
]


def captured(entry: Entry, corpus: Path, work: Path, snapshot: int = 0) -> tuple[Path | None, str]:
    folder = work / entry.name.split()[0]
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(corpus / entry.folder, folder)
    (folder / ".git").mkdir(exist_ok=True)
    ran = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "capture", "--workspace", str(folder),
                          "--timeout", "120", "--build", entry.build, "--snapshot-bytes", str(snapshot), "--",
                          *entry.run],
                         cwd=folder, capture_output=True, text=True, timeout=400)
    if latest_capture(folder) is None:
        return None, f"rc {ran.returncode}: {(ran.stderr or ran.stdout).strip()[-300:]}"
    return folder, ""


def kernel_file(folder: Path, kernel: str) -> Path | None:
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".cu", ".cuh", ".h") and find_kernel(path.read_text(errors="replace"), kernel):
            return path
    return None


def rows_of(entry: Entry, folder: Path, evaluator: Evaluator, own_inputs: bool = False) -> list[dict]:
    capture = latest_capture(folder)
    assert capture is not None
    by_time = sorted({x.base for x in capture.launches},
                     key=lambda k: -sum(x.gpu_ns * x.count for x in capture.of(k)))[:entry.kernels]
    rows = []
    for kernel in by_time:
        row = {"program": entry.name, "project": entry.project, "kernel": kernel}
        rows.append(row)
        path = kernel_file(folder, kernel)
        if path is None:
            row["why"] = "no file of the folder defines it"
            continue
        text = path.read_text(errors="replace")
        settings = Settings(include_paths=(str(folder),))
        plan = plan_spec(LaunchIndex(folder, first_wait=None), path, text, find_kernel(text, kernel), settings)
        row.update(origin=plan.spec.origin, flags=plan.spec.build.partition(": ")[2] or "(none read)",
                   run_ms=plan.spec.captured_ms, timed=plan.spec.captured_timed)
        if plan.draft is None:
            row["why"] = "; ".join(plan.spec.problems[:2]) or f"spec {plan.spec.origin}"
            continue
        job = KernelJob(text, path, kernel, folder, settings, plan)
        backend = Optimizer(LocalBackend(evaluator)).backend(settings)
        draft = plan.draft
        if own_inputs and job.eval_options().real_inputs:  # timed on the run's own inputs
            draft = set_key(draft, "bench_inputs", '"captured"')
            row["inputs"] = "the run's"
        with_flags = prove_with(backend, text, kernel, draft, job.eval_options(), timeout=300)
        row["fsr_ms"] = with_flags.original_ms
        if not with_flags.proven:
            row["why"] = f"{with_flags.status}: {with_flags.message[:160]}"
            continue
        options = job.eval_options()
        warm = dataclasses.replace(options, timing=dataclasses.replace(options.timing, flush_l2=False))
        warmed = prove_with(backend, text, kernel, draft, warm, timeout=300)  # as the program runs it, L2 kept
        row["warm_ms"] = warmed.original_ms if warmed.proven else None
        evented = dataclasses.replace(options, timing=dataclasses.replace(options.timing, clock="events"))
        by_events = prove_with(backend, text, kernel, draft, evented, timeout=300)  # the clock before the kernel clock
        row["events_ms"] = by_events.original_ms if by_events.proven else None
        if plan.spec.flags:
            bare_spec = dataclasses.replace(plan.spec, flags=())
            bare = KernelJob(text, path, kernel, folder, settings, dataclasses.replace(plan, spec=bare_spec))
            without = prove_with(backend, text, kernel, draft, bare.eval_options(), timeout=300)
            row["bare_ms"] = without.original_ms if without.proven else None
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--budget", type=float, default=500.0, help="start no entry after this many seconds")
    parser.add_argument("--snapshot-bytes", type=int, default=0, help="save the run's inputs; time on them")
    args = parser.parse_args()
    started = time.monotonic()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp, Evaluator() as evaluator:
        evaluator.start()
        for entry in ENTRIES:
            if args.only and not any(o in entry.name for o in args.only):
                continue
            if time.monotonic() - started > args.budget:
                rows.append({"program": entry.name, "project": entry.project, "why": "not run: the budget was spent"})
                continue
            t0 = time.monotonic()
            folder, why = captured(entry, args.corpus.resolve(), Path(tmp), args.snapshot_bytes)
            if folder is None:
                rows.append({"program": entry.name, "project": entry.project, "why": f"capture: {why}"})
            else:
                rows += rows_of(entry, folder, evaluator, own_inputs=args.snapshot_bytes > 0)
            console.print(f"{entry.name}: {time.monotonic() - t0:.0f} s", highlight=False)
            save("build_agreement", rows)
    shown = []
    for r in rows:
        run_ms, fsr_ms, bare, warm = r.get("run_ms"), r.get("fsr_ms"), r.get("bare_ms"), r.get("warm_ms")
        ratio = fsr_ms / run_ms if run_ms and fsr_ms else None
        events = r.get("events_ms")
        shown.append([r["program"], r.get("kernel", ""), r.get("flags", ""), run_ms or "-", fsr_ms or "-",
                      f"{ratio:.2f}" if ratio else "-", warm or "-", f"{warm / run_ms:.2f}" if warm and run_ms else "-",
                      events or "-", f"{events / run_ms:.2f}" if events and run_ms else "-",
                      bare or "-", r.get("why", "")[:60]])
    table("fsr's timing of captured originals against the programs' own runs (ms; fsr by the kernel clock, "
          "and by events as before it)",
          ["program", "kernel", "build's flags", "run", "fsr (L2 emptied)", "/run", "fsr warm", "/run", "by events",
           "/run", "no flags", "why"], shown)
    timed = [r for r in rows if r.get("run_ms") and r.get("fsr_ms")]
    near = lambda ms, r: ms and abs(ms / r["run_ms"] - 1) <= 0.15  # noqa: E731
    console.print(f"within 15%: {sum(bool(near(r['fsr_ms'], r)) for r in timed)} of {len(timed)} cold, "
                  f"{sum(bool(near(r.get('warm_ms'), r) or near(r['fsr_ms'], r)) for r in timed)} cold or warm; "
                  f"{len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
