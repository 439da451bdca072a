"""fsr against the hand-written kernels of public projects (issue 36, item 4): projects that ship
a naive kernel and hand-optimised versions of the same computation. Per entry: the naive
kernel's time, the project's fastest hand-written version's time (each with its own spec as
`fsr spec` drafts it from the project's own launch, proven on the GPU as `fsr optimize` proves
a draft, and timed by that proof), fsr's
built-in search on the naive kernel through `fsr optimize --time-budget SECONDS` as a user runs it
(in a copy of the project's folder, nothing stored from before), and fsr's share of the
hand-written speedup.

Only kernels the projects wrote: nothing here was written for the benchmark. Each entry's
kernels must be drafted at one bench size (the table says when they are not). A kernel whose
static draft cannot be proven (a histogram's bins filled at random index out of range) is
taken as a user would take it next: its program is built with nvcc and run under `fsr capture`
in a copy of its folder, and the spec comes from that capture (the table's "spec" column says
which); `fsr optimize` then runs in that folder, where it finds the capture itself.

    python bench/real_programs.py CORPUS [--seconds 60] [--only NAME...]

CORPUS holds the projects' checkouts, one folder each, named as ENTRIES name them.
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
from dataclasses import dataclass
from pathlib import Path

from _common import console, fsr_optimize, save, table

from fsr_lsp.capture import latest_capture
from fsr_lsp.drafting.placement import place_spec
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec
from fsr_lsp.drafting.proof import Proof, prove_with
from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.evaluator.backends.local import LocalBackend
from fsr_lsp.kernels import find_kernel
from fsr_lsp.settings import Settings
from fsr_lsp.workflows.optimize import Optimizer, KernelJob, plan_spec
from fsr_lsp.evaluator import Evaluator


@dataclass(frozen=True)
class Entry:
    name: str
    project: str  # folder under CORPUS
    naive: tuple[str, str]  # (file, kernel)
    hand: tuple[tuple[str, str], ...]  # the project's optimised versions


BRUCE = "CUDA-Programming/src/"
CBA = "cuda_programming/"
BBUF = "how-to-optim-algorithm-in-cuda/cuda-kernels/"
OLCF = "cuda-training-series/exercises/"
COURSE = "cuda-course/05_Writing_your_First_Kernels/03 Profiling/"
ENTRIES = [
    Entry("matrix multiply", "CoffeeBeforeArch/cuda_programming", (CBA + "02_matrix_mul/baseline/mmul.cu", "matrixMul"),
          ((CBA + "02_matrix_mul/tiled/mmul.cu", "matrixMul"),)),
    Entry("sum reduction", "CoffeeBeforeArch/cuda_programming",
          (CBA + "03_sum_reduction/diverged/sumReduction.cu", "sumReduction"),
          ((CBA + "03_sum_reduction/bank_conflicts/sumReduction.cu", "sumReduction"),
           (CBA + "03_sum_reduction/no_confliicts/sumReduction.cu", "sum_reduction"),
           (CBA + "03_sum_reduction/reduce_idle/sumReduction.cu", "sum_reduction"),
           (CBA + "03_sum_reduction/device_function/sumReduction.cu", "sum_reduction"))),
    Entry("histogram", "CoffeeBeforeArch/cuda_programming", (CBA + "04_histogram/global_atomic/histogram.cu", "histogram"),
          ((CBA + "04_histogram/shmem_atomic/histogram.cu", "histogram"),)),
    Entry("1-D convolution", "CoffeeBeforeArch/cuda_programming",
          (CBA + "05_convolution/1d_naive/convolution.cu", "convolution_1d"),
          ((CBA + "05_convolution/1d_constant_memory/convolution.cu", "convolution_1d"),
           (CBA + "05_convolution/1d_tiled/convolution.cu", "convolution_1d"),
           (CBA + "05_convolution/1d_cache/convolution.cu", "convolution_1d"))),
    Entry("matrix transpose", "brucefan1983/CUDA-Programming", (BRUCE + "07-global-memory/matrix.cu", "transpose1"),
          ((BRUCE + "07-global-memory/matrix.cu", "transpose2"), (BRUCE + "07-global-memory/matrix.cu", "transpose3"),
           (BRUCE + "08-shared-memory/bank.cu", "transpose1"), (BRUCE + "08-shared-memory/bank.cu", "transpose2"))),
    Entry("array sum", "brucefan1983/CUDA-Programming", (BRUCE + "08-shared-memory/reduce2gpu.cu", "reduce_global"),
          ((BRUCE + "08-shared-memory/reduce2gpu.cu", "reduce_shared"),
           (BRUCE + "08-shared-memory/reduce2gpu.cu", "reduce_dynamic"))),
    Entry("block reduce", "BBuf/how-to-optim-algorithm-in-cuda", (BBUF + "reduce/reduce_v0_baseline.cu", "reduce_v0"),
          tuple((BBUF + f"reduce/{f}", k) for f, k in [
              ("reduce_v1_interleaved_addressing.cu", "reduce_v1"), ("reduce_v2_bank_conflict_free.cu", "reduce_v2"),
              ("reduce_v3_idle_threads_free.cu", "reduce_v3"), ("reduce_v4_unroll_last_warp.cu", "reduce_v4"),
              ("reduce_v5_completely_unroll.cu", "reduce_v5"), ("reduce_v6_multi_add.cu", "reduce_v6"),
              ("reduce_v7_shfl_down_sync.cu", "reduce7"), ("reduce_v8_shfl_down_sync_pack.cu", "reduce_v8")])),
    Entry("array sum, one atomic result", "brucefan1983/CUDA-Programming", (BRUCE + "09-atomic/reduce.cu", "reduce"),
          ((BRUCE + "10-warp/reduce.cu", "reduce_syncwarp"), (BRUCE + "10-warp/reduce.cu", "reduce_shfl"),
           (BRUCE + "10-warp/reduce.cu", "reduce_cp"))),
    Entry("matrix multiply (float, 1024²)", "Infatoshi/cuda-course", (COURSE + "01_naive_matmul.cu", "matrixMultiply"),
          ((COURSE + "02_tiled_matmul.cu", "matrixMultiplyOptimized"),)),
    Entry("matrix multiply (float, 8192²)", "olcf/cuda-training-series", (OLCF + "hw1/matrix_mul_solution.cu", "mmul"),
          ((OLCF + "hw2/matrix_mul_shared_solution.cu", "mmul"),)),
    Entry("row sums (16384²)", "olcf/cuda-training-series", (OLCF + "hw4/matrix_sums_solution.cu", "row_sums"),
          ((OLCF + "hw5/matrix_sums_solution.cu", "row_sums"),)),
    Entry("array sum by atomics (8 M)", "olcf/cuda-training-series", (OLCF + "hw5/reductions.cu", "atomic_red"),
          ((OLCF + "hw5/reductions.cu", "reduce_a"), (OLCF + "hw5/reductions.cu", "reduce_ws"))),
    Entry("matrix transpose (double, 4096²)", "olcf/cuda-training-series",
          (OLCF + "hw8/task1/task1_solution.cu", "naive_cuda_transpose"),
          ((OLCF + "hw8/task2/task2_solution.cu", "smem_cuda_transpose"),
           (OLCF + "hw8/task3/task3_solution.cu", "smem_cuda_transpose"))),
]


def proven(evaluator: Evaluator, path: Path, kernel: str, workspace: Path) -> tuple[Proof | None, str, str]:
    """The kernel's spec and its proof as `fsr optimize` has them before its first round:
    `plan_spec` over the workspace, the project's folder (its launches, its captures; the project's header
    folders as include paths, as the user's settings would say), then `Optimizer.prepare`. A
    spec of the file's own or one inferred from the signature is proven as `fsr spec --check`
    proves it. (the proof or None, the spec's origin or why none, the block proven)."""
    text = path.read_text(errors="replace")
    found = find_kernel(text, kernel)
    if found is None:
        return None, "no such kernel", ""
    includes = tuple(sorted({str(p.parent) for p in path.parent.parent.rglob("*") if p.suffix in (".h", ".cuh", ".hpp")}))
    settings = Settings(include_paths=includes)
    plan = plan_spec(LaunchIndex(workspace, first_wait=None), path.resolve(), text, found, settings)
    if plan.spec.spec is None:
        return None, "; ".join(plan.spec.problems[:2]) or "no spec", ""
    job = KernelJob(text, path.resolve(), kernel, workspace, settings, plan)
    optimizer = Optimizer(LocalBackend(evaluator))
    if plan.draft is None:
        proof = prove_with(optimizer.backend(settings), text, kernel, None, job.eval_options(), timeout=300)
        return proof, plan.spec.origin, plan.spec.spec
    optimizer.prepare(job, lambda _: None)
    return job.proof, plan.spec.origin, plan.draft


def buffers_at_bench(path: Path, kernel: str, block: str) -> tuple[tuple[str, int], ...] | None:
    """The kernel's buffers at its spec's bench size, as (direction, elements), sorted: two
    kernels compute the same thing only where these agree (a reduction that writes one partial
    sum per 512 elements instead of per 256 changed its contract, and its host code with it)."""
    text = path.read_text(errors="replace")
    try:
        placed = place_spec(text, kernel, block).text if block.lstrip().startswith("/*") else text
    except Exception:  # noqa: BLE001 - a bench row, not a verdict: unknown shapes compare as unknown
        return None
    src = SourceText(placed)
    found = find_kernel(src, kernel)
    spec = parse_spec(src, found).spec if found else None
    if spec is None:
        return None
    bench = build_plans(found, spec)[-1]
    return tuple(sorted(("in" if a.direction == "in" else "out", a.numel) for a in bench.args if a.kind == "buffer"))


def captured_copy(corpus: Path, file: str, work: Path) -> tuple[Path | None, str]:
    """The file's folder copied to `work` (a workspace of its own), its program built with nvcc
    and run under `fsr capture`, as a user does when a static draft is not enough: the copy's
    path to the file, or None and why."""
    source = corpus / file
    folder = work / ("captured_" + re.sub(r"\W+", "_", file))
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(source.parent, folder)
    (folder / ".git").mkdir(exist_ok=True)
    built = subprocess.run(["nvcc", "-O3", "-arch=native", "-I", str(folder), "-o", "program", source.name],
                           cwd=folder, capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        return None, f"nvcc: {(built.stderr or built.stdout).strip().splitlines()[-1:]}"
    ran = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "capture", "--timeout", "60",
                          "--snapshot-bytes", str(64 << 20), "--", "./program"],
                         cwd=folder, capture_output=True, text=True, timeout=240)
    if latest_capture(folder) is None:
        return None, f"fsr capture recorded nothing (rc {ran.returncode}): {(ran.stderr or ran.stdout)[-200:]}"
    return folder / source.name, "captured"


def timed(evaluator: Evaluator, corpus: Path, file: str, kernel: str, work: Path) -> dict:
    """One kernel timed at its spec's bench size, as a search measures its original: the spec as
    `fsr spec` drafts it, proven on the GPU (relaxed where a draft must be), the proof's time;
    when that spec cannot be had or proven, the spec from a capture of its program."""
    row = {"file": file, "kernel": kernel, "origin": "", "ms": None, "bench": "", "folder": None, "buffers": None}
    proof, origin, block = proven(evaluator, corpus / file, kernel, corpus / Path(file).parts[0])
    if proof is None or not (proof.proven and proof.original_ms):
        first = origin if proof is None else f"{origin}: {proof.status}: {proof.message[:120]}"
        copy, how = captured_copy(corpus, file, work)
        if copy is None:
            row.update(origin=origin, why=f"{first}; {how}")
            return row
        proof, origin, block = proven(evaluator, copy, kernel, copy.parent)  # its workspace's capture now counts
        if proof is None:
            row.update(origin=origin, why=f"{first}; after a capture: {origin}")
            return row
        row["folder"] = str(copy.parent)
    row["origin"] = origin
    where = Path(row["folder"]) / Path(file).name if row["folder"] else corpus / file
    row["buffers"] = buffers_at_bench(where, kernel, proof.spec or block)
    bench = re.search(r"^bench\s*=\s*\{(.*)\}", proof.spec or block, re.M)
    row["bench"] = " ".join(bench.group(1).split()) if bench else ""
    if proof.proven and proof.original_ms:
        row["ms"] = proof.original_ms
    else:
        row["why"] = f"{proof.status}: {proof.message[:200]}"
    return row


def optimized(corpus: Path, entry: Entry, seconds: float, work: Path, captured: str | None) -> dict:
    """`fsr optimize` on the naive kernel in a copy of its folder, as a user runs it (in the
    copy its program was captured in, when its spec came from a capture)."""
    file, kernel = entry.naive
    source = corpus / file
    if captured:
        folder = Path(captured)
    else:
        folder = work / re.sub(r"\W+", "_", entry.name)
        shutil.copytree(source.parent, folder)
        (folder / ".git").mkdir(exist_ok=True)  # the workspace root: its own .fsr/, nothing from an earlier run
    logs = Path(os.environ["OUT"]) / "logs" if os.environ.get("OUT") else None
    name = re.sub(r"\W+", "_", entry.name)
    return fsr_optimize(folder, source.name, kernel, seconds, keep=logs / f"{name}.log" if logs else None)


AT = 0.98  # fsr's speedup within 2% of the hand-written one (the search's own noise margin) counts as at it


def compared(entry: Entry, gpu: str, naive: dict, hands: list[dict], ours: dict) -> dict:
    """One entry's result: the fastest hand-written kernel of the same contract (the same
    buffers at the bench size: fsr may not change what a kernel writes, its host code depends on
    it), the hand-written speedup, and the verdict, with the reason for a miss."""
    same = [h for h in hands if h["ms"] and h.get("buffers") and h["buffers"] == naive.get("buffers")]
    other = [h for h in hands if h["ms"] and h not in same]
    best = min(same, key=lambda h: h["ms"], default=None)
    faster_other = min(other, key=lambda h: h["ms"], default=None)
    hand_x = naive["ms"] / best["ms"] if best and naive["ms"] else None
    fsr_x = ours["speedup"] or 1.0
    if not naive["ms"]:
        verdict = f"miss: the naive kernel was not timed ({naive.get('why', '')[:120]})"
    elif hand_x is None:
        verdict = "no comparable hand-written kernel"
    elif fsr_x >= AT * hand_x:
        verdict = f"at or above ({fsr_x / hand_x:.0%})"
    elif ours["status"] not in ("improved", "no win"):
        verdict = f"miss: fsr optimize ended '{ours['status']}': {ours['message'][:160]}"
    else:
        verdict = f"miss ({fsr_x / hand_x:.0%}): {ours['message'][:160]}"
    if faster_other and (best is None or faster_other["ms"] < best["ms"]):
        verdict += (f"; {faster_other['kernel']} ({faster_other['file'].rsplit('/', 2)[-2]}) is faster "
                    f"({faster_other['ms']:.4g} ms) but writes other buffers ({faster_other.get('buffers')} against "
                    f"{naive.get('buffers')})")
    return {"entry": entry.name, "project": entry.project, "gpu": gpu, "naive": naive, "hand": hands, "best": best,
            "hand_speedup": hand_x, "ours": ours, "verdict": verdict}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--only", nargs="*", default=None, help="entry names to run")
    args = ap.parse_args()
    entries = [e for e in ENTRIES if args.only is None or e.name in args.only]
    results = []
    with tempfile.TemporaryDirectory() as tmp, Evaluator(timeout=300.0) as evaluator:
        gpu = evaluator.start().name
        for entry in entries:
            began = time.perf_counter()
            naive = timed(evaluator, args.corpus, *entry.naive, Path(tmp))
            hands = [timed(evaluator, args.corpus, f, k, Path(tmp)) for f, k in entry.hand]
            ours = optimized(args.corpus, entry, args.seconds, Path(tmp), naive["folder"])
            results.append(compared(entry, gpu, naive, hands, ours) | {"entry_s": time.perf_counter() - began})
            best = results[-1]["best"]
            console.print(f"{entry.name}: naive {naive['ms']} ms, best hand {best and best['ms']} ms "
                          f"({best and best['kernel']}), fsr {ours['status']} {ours['speedup']}x "
                          f"(first win {ours['first_win_s']} s); {time.perf_counter() - began:.0f} s", markup=False)
            for h in [naive, *hands]:
                if not h["ms"]:
                    console.print(f"  not timed: {h['file']} {h['kernel']}: {h.get('why', '')}", markup=False)
            save("real_programs", results)  # after each entry: a run cut short keeps what it measured
    rows = []
    for r in results:
        b, o = r["best"], r["ours"]
        rows.append([r["entry"], r["project"], f"{r['naive']['ms']:.4f}" if r["naive"]["ms"] else "-",
                     f"{b['ms']:.4f} ({b['kernel']})" if b else "-",
                     f"{r['hand_speedup']:.2f}x" if r["hand_speedup"] else "-",
                     f"{o['speedup']:.2f}x" if o["speedup"] else o["status"],
                     f"{o['first_win_s']}" if o["first_win_s"] is not None else "-", r["verdict"],
                     "/".join(sorted({h["origin"] for h in [r["naive"], *r["hand"]] if h["ms"]})) or "-"])
    table(f"fsr's built-in search ({args.seconds:g} s) against the projects' hand-written kernels",
          ["kernel", "project", "naive ms", "best hand-written ms (same contract)", "hand", "fsr", "first win s",
           "verdict", "spec"], rows)
    judged = [r for r in results if not r["verdict"].startswith("no comparable hand-written kernel")]
    at = sum(r["verdict"].startswith("at or above") for r in judged)
    print(f"fsr at or above the hand-written kernel on {at} of {len(judged)} entries with a comparable one "
          f"({len(results)} entries, {len({r['project'] for r in results})} projects)")
    save("real_programs", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
