"""Where a verified candidate's GPU seconds go (issue 59's throughput): the worker's own code
(`gpu/run.py: run_job`) run in this process on a GpuSession, under cProfile, for the
throughput bench's saxpy rewrites, each job prepared (compiled) beforehand so that only the
worker's part is profiled. Prints the phases' seconds a candidate, then the functions that
take the most time, by their own time and with what they call.

    python bench/worker_profile.py [CANDIDATES] [--top N]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import pstats
import statistics
import sys
import time

from _common import console, save, table
from throughput import SOURCE, candidate


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("candidates", nargs="?", type=int, default=24)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    from fsr_lsp.evaluator import EvalOptions
    from fsr_lsp.evaluator.gpu.run import run_job
    from fsr_lsp.evaluator.gpu.session import GpuSession
    from fsr_lsp.evaluator.job.prepare import prepare

    session = GpuSession(0)
    session.measure_bandwidth()
    arch = session.info.arch
    variants = list(itertools.product([128, 256, 512, 1024], [1, 2, 4], [False, True]))[: args.candidates]
    jobs = []
    for block, per_thread, restrict in variants:
        prepared = prepare(SOURCE, "saxpy", candidate(block, per_thread, restrict), arch, EvalOptions())
        assert prepared.job is not None, prepared.result
        jobs.append(prepared.job)
    run_job(session, jobs[0])  # the original's kept runs and the clock's first build: not a candidate's cost
    phases: dict[str, list[float]] = {}
    walls = []
    profile = cProfile.Profile()
    for job in jobs[1:]:
        started = time.perf_counter()
        profile.enable()
        result = run_job(session, job)
        profile.disable()
        walls.append(time.perf_counter() - started)
        for name, seconds in result.phase_seconds.items():
            phases.setdefault(name, []).append(seconds)
        if result.status != "verified":
            console.print(f"{job.kernel}: {result.status} {result.message[:200]}", markup=False)
    rows = [[name, round(statistics.median(v), 4), round(sum(v) / len(v), 4)] for name, v in phases.items()]
    rows.append(["whole job (wall)", round(statistics.median(walls), 4), round(sum(walls) / len(walls), 4)])
    table(f"run_job per candidate, {len(walls)} saxpy rewrites (s)", ["phase", "median", "mean"], rows)
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).strip_dirs().sort_stats(order).print_stats(args.top)
        console.print(out.getvalue(), markup=False, highlight=False)
    save("worker_profile", {"phases": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
