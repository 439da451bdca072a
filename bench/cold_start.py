"""Issue 59: where a cold `fsr eval --candidate` spends its seconds, for the design of its start.

Two tables. **The worker's start**, each step in a fresh process as the worker takes it: Python
with torch imported, torch's CUDA context, pycuda joining it, the whole `GpuSession` (its L2
flush buffer and bandwidth probe), and `Evaluator.start()` from a parent (a spawned process up to
its "ready"). **The sanitizers**, on children already loaded (as a Prewarm leaves them), for each
candidate: every size the plan admits, the test and edge sizes alone, and the bench size alone,
which says what starting the test sizes before the worker is up could save.

    python bench/cold_start.py [--only NAME...] [--repeat N]
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import time

from _common import ROOT, console, save, table

STEPS = {
    "fsr eval's imports": "import fsr_lsp.cli.eval_cmd",
    "+ gpu_support_missing()": "import fsr_lsp.cli.eval_cmd as m; m.gpu_support_missing('x')",
    "+ local_gpus()": "import fsr_lsp.cli.eval_cmd as m; m.gpu_support_missing('x'); m.local_gpus('0')",
    "python + import torch": "import torch",
    "+ torch's CUDA context": "import torch; torch.empty(1, device='cuda')",
    "+ pycuda joins it": ("import torch; torch.empty(1, device='cuda'); import pycuda.driver as d; d.init(); "
                          "c = d.Device(0).retain_primary_context(); c.push(); c.pop()"),
    "GpuSession(0)": "from fsr_lsp.evaluator.gpu.session import GpuSession; GpuSession(0)",
    "GpuSession(0) + run_job imported": ("from fsr_lsp.evaluator.gpu.session import GpuSession; GpuSession(0); "
                                         "from fsr_lsp.evaluator.gpu.run import run_job"),
    "Evaluator(0).start() (spawned worker)": "from fsr_lsp.evaluator import Evaluator; e = Evaluator(0); e.start(); e.close()",
}
CANDIDATES = {"matmul_tiled32": ("examples/matmul.cu", "matmul"), "reduce_sum_warp1024": (
    "bench/naive_kernels/reduction.cu", "reduce_sum"), "saxpy_float4": ("examples/saxpy.cu", "saxpy")}


def timed(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - started


def start_steps(repeat: int) -> list[list[object]]:
    rows = []
    for name, code in STEPS.items():
        seconds = [timed(code) for _ in range(repeat)]
        rows.append([name, *[round(s, 2) for s in seconds]])
        console.print(f"{name}: {seconds}", highlight=False)
    return rows


def sanitizer_parts(only: list[str]) -> list[list[object]]:
    from fsr_lsp.evaluator import EvalOptions, Evaluator, evaluate
    from fsr_lsp.evaluator.job.prepare import prepare
    from fsr_lsp.evaluator.sanitize.sanitizer import TOOLS, Prewarm, sanitize

    rows = []
    with Evaluator(0) as evaluator:
        arch = evaluator.start().arch
        for name, (file, kernel) in CANDIDATES.items():
            if only and name not in only:
                continue
            source, candidate = (ROOT / file).read_text(), (ROOT / "bench" / "verify_candidates" / f"{name}.cu").read_text()
            result = evaluate(evaluator, source, kernel, candidate, EvalOptions())
            job = prepare(source, kernel, candidate, arch, EvalOptions()).job
            assert job is not None
            resources = result.resources.get("candidate")
            shared = resources.shared_bytes if resources else None
            parts = {"all sizes": job.sizes, "test and edge sizes": [p for p in job.sizes if p.role != "bench"],
                     "bench size": [p for p in job.sizes if p.role == "bench"]}
            for part, sizes in parts.items():
                prewarm = Prewarm(TOOLS, 0)
                time.sleep(4.0)  # the children load (Python, pycuda, numpy) as they would behind a worker's start
                started = time.perf_counter()
                checks = sanitize(dataclasses.replace(job, sizes=sizes), 0, native_ms=result.native_ms,
                                  static_shared=shared, prewarm=prewarm)
                seconds = time.perf_counter() - started
                rows.append([name, part, round(seconds, 2), "; ".join(f"{c.name.split()[-1]} {c.status}: {c.detail[:50]}"
                                                                      for c in checks)])
                console.print(" | ".join(str(x) for x in rows[-1]), highlight=False)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    steps = start_steps(args.repeat)
    table("the worker's start, each step in a fresh process (s)", ["step", *[f"run {i + 1}" for i in range(args.repeat)]],
          steps)
    parts = sanitizer_parts(args.only)
    table("the sanitizers on loaded children (s)", ["candidate", "sizes", "seconds", "checks"], parts)
    save("cold_start", {"start": steps, "sanitizers": parts})
    return 0


if __name__ == "__main__":
    sys.exit(main())
