"""Issue 59: where a cold `fsr eval --candidate` spends its seconds, for the design of its start.

**The worker's start** step by step (bench/worker_start.py), then **the sanitizers**, on children
already loaded (as a Prewarm leaves them), for each candidate: every size the plan admits, the test and edge sizes alone, and the bench size alone,
which says what starting the test sizes before the worker is up could save.

    python bench/cold_start.py [--only NAME...]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import worker_start
from _common import ROOT, console, save, table

CANDIDATES = {"matmul_tiled32": ("examples/matmul.cu", "matmul"), "reduce_sum_warp1024": (
    "bench/naive_kernels/reduction.cu", "reduce_sum"), "saxpy_float4": ("examples/saxpy.cu", "saxpy")}


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
    args = parser.parse_args()
    worker_start.main()
    parts = sanitizer_parts(args.only)
    table("the sanitizers on loaded children (s)", ["candidate", "sizes", "seconds", "checks"], parts)
    save("cold_start", {"sanitizers": parts})
    return 0


if __name__ == "__main__":
    sys.exit(main())
