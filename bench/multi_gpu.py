"""Several local GPUs against one (issue 27): the same candidates through the local backend with
one evaluator worker per GPU, first on GPU 0 alone, then on every GPU; and a search as a user
runs it, `fsr optimize --gpu 0` against `--gpu all`, on one kernel.

While the candidates run, `nvidia-smi` is sampled every 0.1 s for the processes that hold a
context on each GPU: one worker per GPU means no timed run shares its GPU with another
process's kernels, and the table says what was seen.

    python bench/multi_gpu.py [COUNT] [--search-kernel NAME] [--rounds R]

Run on a machine with 2+ GPUs. Goal: >= 1.8x candidates per minute with 2 GPUs over 1.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import console, save, table
from ray_scaling import requests
from search_budget import KERNELS, optimize

from fsr_lsp.evaluator.backends.local import LocalBackend, local_gpus
from fsr_lsp.evaluator.backends.request import EvalRequest
from fsr_lsp.evaluator.worker.worker_client import Evaluator


class ContextSampler:
    """Which processes hold a CUDA context on which GPU, sampled until stopped."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.samples: list[dict[str, set[int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error = ""

    def __enter__(self) -> "ContextSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-compute-apps=gpu_uuid,pid", "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=10).stdout
            except (OSError, subprocess.SubprocessError) as e:
                self.error = str(e)
                return
            seen: dict[str, set[int]] = {}
            for line in out.splitlines():
                parts = [p.strip() for p in line.split(",")]
                if len(parts) == 2 and parts[1].isdigit():
                    seen.setdefault(parts[0], set()).add(int(parts[1]))
            self.samples.append(seen)
            self._stop.wait(self.interval)

    def per_gpu(self) -> dict[str, tuple[int, set[int]]]:
        """GPU uuid -> (most processes seen on it at one sample, every process seen on it)."""
        out: dict[str, tuple[int, set[int]]] = {}
        for sample in self.samples:
            for uuid, pids in sample.items():
                most, every = out.get(uuid, (0, set()))
                out[uuid] = (max(most, len(pids)), every | pids)
        return out


def rate(gpus: list[int], work: list[EvalRequest]) -> dict:
    evaluators = [Evaluator(i) for i in gpus]
    backend = LocalBackend(evaluators)
    try:
        backend.start()
        backend.evaluate(work[:len(gpus)])  # worker start-up and compile caches out of the timing
        workers = {e.gpu.uuid if e.gpu else str(e.device_index): e._proc.pid for e in evaluators}
        with ContextSampler() as sampler:
            started = time.monotonic()
            results = backend.evaluate(work)
            seconds = time.monotonic() - started
        per_gpu = {r.gpu.uuid for r in results if r.gpu}
        return {"gpus": len(gpus), "per_min": len(work) / seconds * 60, "seconds": seconds,
                "verified": sum(r.verified for r in results), "ran_on": sorted(per_gpu), "workers": workers,
                "contexts": {u: (m, sorted(p)) for u, (m, p) in sampler.per_gpu().items()},
                "samples": len(sampler.samples), "sampler_error": sampler.error,
                "by_gpu": {u: sum(1 for r in results if r.gpu and r.gpu.uuid == u) for u in per_gpu}}
    finally:
        backend.close()


def search(name: str, gpu: str, rounds: int) -> dict:
    """One `fsr optimize --apply` on a copy of the kernel's file: the winner is the file it leaves."""
    file, kernel = KERNELS[name]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / file.name
        shutil.copy(file, copy)
        with ContextSampler(0.2) as sampler:
            row = optimize(copy, kernel, 900.0, "--gpu", gpu, "--rounds", str(rounds), "--apply")
        text = copy.read_text()
    row["contexts"] = {u: (m, sorted(p)) for u, (m, p) in sampler.per_gpu().items()}
    row["gpu_arg"] = gpu
    row["winner_sha"] = hashlib.sha256(text.encode()).hexdigest()[:12] if text != file.read_text() else "(none)"
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int, nargs="?", default=48)
    parser.add_argument("--search-kernel", default="transpose", choices=list(KERNELS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--skip-rate", action="store_true")
    parser.add_argument("--repeats", type=int, default=1, help="searches per --gpu value, interleaved")
    args = parser.parse_args()
    every = local_gpus("all")
    if len(every) < 2:
        console.print(f"only {len(every)} GPU here: this benchmark needs two or more")
        return 2
    probe = Evaluator(0)
    try:
        work = requests(args.count, probe.start())
    finally:
        probe.close()
    scaling, one, many = 0.0, {}, {}
    if not args.skip_rate:
        one, many = rate([every[0]], work), rate(every, work)
        scaling = many["per_min"] / one["per_min"]
        report_rates(work, one, many, scaling)
    rows = []
    if not args.skip_search:
        for _ in range(args.repeats):
            for gpu in ("0", "all"):
                rows.append(search(args.search_kernel, gpu, args.rounds))
        table(f"fsr optimize {args.search_kernel} --rounds {args.rounds} --apply",
              ["--gpu", "wall s", "first win s", "status", "winner (sha of the file)", "result", "most processes on a GPU"],
              [[r["gpu_arg"], r["wall"], r["first_win"] or "-", r["status"], r["winner_sha"], r["message"][:60],
                max((m for m, _ in r["contexts"].values()), default=0)] for r in rows])
        winners = {r["gpu_arg"]: {x["winner_sha"] for x in rows if x["gpu_arg"] == r["gpu_arg"]} for r in rows}
        console.print(f"winners by --gpu: {winners}")
    save("multi_gpu", {"date": time.strftime("%Y-%m-%d"), "one": one, "many": many, "scaling": scaling,
                       "search": [{k: v for k, v in r.items() if k != "log"} for r in rows],
                       "search_logs": [r["log"] for r in rows]})
    return 0


def report_rates(work: list[EvalRequest], one: dict, many: dict, scaling: float) -> None:
    table(f"Local backend: {len(work)} candidates, verified and timed in full, one worker per GPU",
          ["GPUs", "candidates/min", "seconds", "verified", "per GPU", "scaling"],
          [[r["gpus"], r["per_min"], r["seconds"], r["verified"], r["by_gpu"], r["per_min"] / one["per_min"]]
           for r in (one, many)])
    for r in (one, many):
        for uuid, (most, pids) in r["contexts"].items():
            worker = [u for u, p in r["workers"].items() if p in pids]
            console.print(f"{r['gpus']} GPU run, {uuid}: {r['samples']} samples, at most {most} process(es) "
                          f"with a context at once; processes seen {pids} (the worker's: {worker or 'none'})",
                          highlight=False)
        if r["sampler_error"]:
            console.print(f"sampler: {r['sampler_error']}")
    console.print(f"2 GPUs over 1: {scaling:.2f}x" if many["gpus"] == 2 else f"{many['gpus']} GPUs over 1: {scaling:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
