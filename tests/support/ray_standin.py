"""A GPU-less backend for the Ray tests, built inside each Ray actor: verdicts from markers in
the candidate, a worker that dies once or always, one that hangs."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import time
from pathlib import Path

from fsr_lsp.evaluator.profile.profile import Profiled
from fsr_lsp.evaluator.records import EvalResult, GpuInfo, TimingStats

SECONDS = 0.5  # each request's "GPU time", so that fan-out shows in the wall clock


def scripted_backend() -> "ScriptedGpuBackend":
    return ScriptedGpuBackend()


def _stats(ms: float) -> TimingStats:
    return TimingStats(ms, ms, ms, ms, ms, 50)


class ScriptedGpuBackend:
    def __init__(self) -> None:
        import ray

        ids = ray.get_gpu_ids()
        gpu = str(ids[0]) if ids else "none"
        self.info = GpuInfo(0, "Stand-in GPU", "9.0", 132, 50 << 20, 80 << 30, uuid=f"GPU-standin-{gpu}",
                            host=socket.gethostname())

    def start(self) -> GpuInfo:
        return self.info

    def evaluate(self, requests, cancel=None):
        """Each request in turn; each result says how many came in its batch (one task)."""
        results = [self._one(r) for r in requests]
        for r in results:
            r.warnings.append(f"batch of {len(requests)}")
        return results

    def _one(self, r) -> EvalResult:
        text = r.candidate or ""
        if "die-once" in text:
            flag = Path(os.environ["FSR_RAY_TEST_DIR"]) / hashlib.sha256(text.encode()).hexdigest()
            if not flag.exists():
                flag.touch()
                os._exit(1)
        if "die-always" in text:
            os._exit(1)
        if "hang" in text:
            time.sleep(3600)
        time.sleep(SECONDS)
        m = re.search(r"verified ([\d.]+)", text)
        speedup = float(m.group(1)) if m else 1.0
        return EvalResult(kernel=r.kernel, status="verified", message=f"{speedup}x", gpu=self.info, speedup=speedup,
                          original_time=_stats(2.0), candidate_time=_stats(2.0 / speedup), speedup_ci=(speedup, speedup))

    def profile(self, request, lines: bool = False) -> Profiled:
        return Profiled(None, "stand-in: no profiler")

    def close(self) -> None:
        pass


def echo(backend, payload):
    return {**payload, "gpu": backend.start().uuid}


def fails(backend, payload):
    raise RuntimeError("a bug in the function run remotely")
