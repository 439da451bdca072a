"""Evaluation throughput: candidates per minute for a small kernel, compile + verify + time.

Each candidate is a distinct saxpy rewrite (block size x elements per thread x __restrict__),
so every one is really compiled (a fresh cache) and fully verified and timed with the
default settings the search uses: every defence on (chained launches, poisoned shared memory,
guard bands, unmapped-page placements; the sanitizers run on round leaders only, not here). The
pipelined runs time as a search times a round: a candidate that cannot win stops its timed runs
once that is known (TimingConfig.win_above), a winner is timed to the precision.
A third run switches those defences off, to show what they cost. Target (issue 59): >= 400
candidates a minute on one GPU.

    python bench/throughput.py [--pipelined-only] [--per-gpu N ...]

Each pipelined run also says where its wall time went: the worker's phases a candidate, how long
its jobs waited for a share of the GPU and for the GPU alone, and each worker's idle time between
jobs (its next candidate not compiled yet, or nothing left).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import tempfile
import time

from _common import ROOT, console, save, table

from fsr_lsp.evaluator import EvalOptions, Evaluator, evaluate
from fsr_lsp.evaluator.records import Defences, TimingConfig
from fsr_lsp.search.config import SearchConfig

SOURCE = (ROOT / "examples" / "saxpy.cu").read_text()
BENCH_SEED, ROUND_SEED = 11, 12  # as a search draws them from the kernel's text
SPEC = SOURCE[SOURCE.index("/* @fsr"):SOURCE.index("*/") + 2]


def candidate(block: int, per_thread: int, restrict: bool) -> str:
    r = "__restrict__ " if restrict else ""
    spec = SPEC.replace('grid  = "cdiv(n, 256)"', f'grid  = "cdiv(n, {block * per_thread})"').replace(
        "block = 256", f"block = {block}")
    return f"""{spec}
__global__ void saxpy(int n, float a, const float* {r}x, float* {r}y)
{{
    int base = blockIdx.x * {block * per_thread} + threadIdx.x;
#pragma unroll
    for (int u = 0; u < {per_thread}; ++u) {{
        int i = base + u * {block};
        if (i < n) y[i] = a * x[i] + y[i];
    }}
}}
"""


class Timeline:
    """Where a pipelined run's wall time went: each worker's jobs (start, end), the gate's waits
    (for a share, for the GPU alone), read by wrapping the worker clients and the gate."""

    def __init__(self, evaluators: list[Evaluator]) -> None:
        from fsr_lsp.evaluator.worker.gpu_gate import gate

        self.jobs: dict[int, list[tuple[float, float]]] = {}
        self.waits: dict[str, list[float]] = {"share": [], "alone": []}
        self.gate = gate(evaluators[0].device_index)
        self._undo: list = []
        for n, ev in enumerate(evaluators):
            self._wrap_run(n, ev)
        for kind, name in (("share", "take_shared"), ("alone", "take_exclusive")):
            self._wrap_gate(kind, name)

    def _wrap_run(self, n: int, ev: Evaluator) -> None:
        run = ev.run

        def timed_run(*a, **k):
            t0 = time.perf_counter()
            try:
                return run(*a, **k)
            finally:
                self.jobs.setdefault(n, []).append((t0, time.perf_counter()))

        ev.run = timed_run  # type: ignore[method-assign]
        self._undo.append(lambda: delattr(ev, "run"))

    def _wrap_gate(self, kind: str, name: str) -> None:
        take = getattr(self.gate, name)

        def waited(*a, **k):
            t0 = time.perf_counter()
            try:
                return take(*a, **k)
            finally:
                self.waits[kind].append(time.perf_counter() - t0)

        setattr(self.gate, name, waited)
        self._undo.append(lambda: delattr(self.gate, name))

    def close(self) -> None:
        for undo in self._undo:
            undo()

    def summary(self, started: float, wall: float) -> dict:
        idle = {n: _idle(spans, started, started + wall) for n, spans in self.jobs.items()}
        return {"jobs": {n: len(s) for n, s in self.jobs.items()}, "idle_s": idle,
                "share_wait_s": sum(self.waits["share"]), "alone_wait_s": sum(self.waits["alone"]),
                "share_waits": len(self.waits["share"]), "alone_waits": len(self.waits["alone"])}


def _idle(spans: list[tuple[float, float]], start: float, end: float) -> float:
    busy = sum(b - a for a, b in spans)
    return max(end - start - busy, 0.0)


PHASES = ("load", "verify", "unmapped pages", "waiting for the GPU", "time")


AB = {  # --ab: one worker, each way in turn: the round's shared input sets against fresh ones every job
    "as shipped": {},
    "fresh test seeds every job (before session 26)": {"shared_seeds": False},
}


def pipelined(evaluators: list[Evaluator], variants: list, rows: list, records: list, name: str = "",
              shared_seeds: bool = True) -> None:
    """As a search runs them: one batch to the backend, every candidate compiling on the CPU
    cores while the GPU verifies and times the ones ready; with two workers on the GPU (as fsr
    builds its backends: gpu_workers), one checks a candidate while the other times one."""
    from fsr_lsp.evaluator.backends import EvalRequest, LocalBackend

    backend = LocalBackend(evaluators)
    with tempfile.TemporaryDirectory() as cache:
        # timed as a search times a round's candidates: a loser's only as far as "not a win beyond the
        # search's min_gain" (search/gpu_bench.py); every check runs as before
        timing = dataclasses.replace(TimingConfig(), win_above=1.0 + SearchConfig().min_gain)
        # ... and on the input sets a search's round shares (search/gpu_bench.py: one seed for the bench
        # size, one for every other set), the original's runs on them made by the first job alone
        options = EvalOptions(cache_dir=cache, timing=timing, bench_seed=BENCH_SEED,
                              base_seed=ROUND_SEED if shared_seeds else None)
        for ev in evaluators:  # each worker up, with the original's runs of its own (as after a search's first round)
            evaluate(ev, SOURCE, "saxpy", None, options)
            evaluate(ev, SOURCE, "saxpy", candidate(64, 1, False), options)
        backend.keep_warm(wait=True)  # the leaders' sanitizer children ready, as after a search's first round
        timeline = Timeline(evaluators)
        started = time.perf_counter()
        try:
            results = backend.evaluate([EvalRequest(SOURCE, "saxpy", candidate(*v), options) for v in variants])
        finally:
            wall = time.perf_counter() - started
            timeline.close()
    where = timeline.summary(started, wall)
    phases = {k: sum(r.phase_seconds.get(k, 0.0) for r in results) / len(results) for k in PHASES}
    job_s = sum(r.seconds for r in results) / len(results)
    console.print(f"{len(evaluators)} worker(s), {wall:.2f} s: a candidate's job {job_s:.4f} s in the worker ("
                  + ", ".join(f"{k} {v:.4f}" for k, v in phases.items()) + f"); the gate's waits: share "
                  f"{where['share_wait_s']:.2f} s over {where['share_waits']}, alone {where['alone_wait_s']:.2f} s "
                  f"over {where['alone_waits']}; each worker idle between jobs: "
                  + ", ".join(f"{v:.2f} s" for v in where["idle_s"].values()))
    verified = sum(r.verified for r in results)
    compile_s = sum(r.compile["candidate"].seconds for r in results if "candidate" in r.compile)
    gpu_s = sum(r.seconds for r in results)
    reps = [r.candidate_time.reps for r in results if r.candidate_time is not None]
    console.print(f"{len(evaluators)} worker(s): timed runs a candidate, mean {sum(reps) / max(len(reps), 1):.1f}")
    label = f"auto, pipelined (as a search), {len(evaluators)} worker{'s' if len(evaluators) > 1 else ''}" + \
        (f", {name}" if name else "")
    backend.close_warm()
    rows.append([label, len(results), verified, wall, 60 * len(results) / wall, compile_s / len(results),
                 gpu_s / len(results)])
    records.append({"compiler": "auto", "pipelined": True, "workers": len(evaluators), "way": name, "candidates": len(results),
                    "verified": verified, "wall_s": wall, "per_minute": 60 * len(results) / wall,
                    "reps": reps, "phases": phases, "job_s": job_s, "where": where, "failures": [r.message for r in results if not r.verified]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pipelined-only", action="store_true", help="only the search's way (one and two workers)")
    parser.add_argument("--per-gpu", type=int, nargs="*", default=[2],
                        help="the workers a GPU of each pipelined run beside the one-worker run (fsr builds 2)")
    parser.add_argument("--ab", action="store_true", help="one worker, each way of AB three times in turn, nothing else")
    args = parser.parse_args()
    variants = list(itertools.product((128, 256, 512, 1024), (1, 2, 4, 8), (False, True)))
    rows, records = [], []
    if args.ab:
        with Evaluator() as ev:
            ev.start()
            for name, way in list(AB.items()) * 3:
                pipelined([ev], variants, rows, records, name, **way)
        table("evaluation throughput, each way three times in turn (saxpy, n=2^24)",
              ["way", "candidates", "verified", "wall s", "per minute", "compile s/cand", "GPU s/cand"], rows)
        save("throughput_ab", {"gpu": ev.gpu.name if ev.gpu else None, "runs": records})
        return
    from fsr_lsp.evaluator.backends.local import gpu_workers

    for per_gpu in args.per_gpu:
        several = gpu_workers([0], timeout=120.0, per_gpu=per_gpu)
        try:
            pipelined(several, variants, rows, records)
        finally:
            for worker in several:
                worker.close()
    with Evaluator() as ev:
        ev.start()
        pipelined([ev], variants, rows, records)
        runs = [] if args.pipelined_only else [("auto", Defences()), ("nvcc", Defences()),
                                               ("auto", Defences(chained_launches=1, poison_shared=False,
                                                                 unmapped_pages=False))]
        for compiler, defences in runs:
            with tempfile.TemporaryDirectory() as cache:
                options = EvalOptions(cache_dir=cache, compiler=compiler, defences=defences)
                evaluate(ev, SOURCE, "saxpy", None, options)  # the original's cubin: shared by every candidate
                evaluate(ev, SOURCE, "saxpy", candidate(64, 1, False), options)  # a warm compiler, as in a search
                started = time.perf_counter()
                results = [evaluate(ev, SOURCE, "saxpy", candidate(*v), options) for v in variants]
                wall = time.perf_counter() - started
            verified = sum(r.verified for r in results)
            compile_s = sum(r.compile["candidate"].seconds for r in results if "candidate" in r.compile)
            gpu_s = sum(r.seconds for r in results)
            used = {r.compile["candidate"].compiler for r in results if "candidate" in r.compile}
            label = compiler + f" ({'/'.join(sorted(used))})" + ("" if defences == Defences() else ", defences off")
            rows.append([label, len(results), verified, wall, 60 * len(results) / wall,
                         compile_s / len(results), gpu_s / len(results)])
            phases = {k: sum(r.phase_seconds.get(k, 0.0) for r in results) / len(results)
                      for k in ("load", "verify", "unmapped pages", "time")}
            console.print(f"{compiler}: seconds per candidate in the worker: "
                          + ", ".join(f"{k} {v:.4f}" for k, v in phases.items()))
            records.append({"phases": phases, "compiler": compiler, "defences": dataclasses.asdict(defences), "used": sorted(used), "candidates": len(results), "verified": verified,
                            "wall_s": wall, "per_minute": 60 * len(results) / wall,
                            "best": max((r.speedup or 0) for r in results),
                            "failures": [r.message for r in results if not r.verified]})
    table("evaluation throughput (saxpy, n=2^24; compile + verify at 4 sizes, 10 input sets + time)",
          ["compiler", "candidates", "verified", "wall s", "per minute", "compile s/cand", "GPU s/cand"], rows)
    save("throughput", {"gpu": ev.gpu.name if ev.gpu else None, "runs": records})


if __name__ == "__main__":
    main()
