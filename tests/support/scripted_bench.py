"""The evaluator stand-in for search tests: scripted verdicts, no GPU.

A candidate's verdict comes from a marker comment in its source:
  // verdict: verified 1.8     verified, 1.8x faster
  // verdict: wrong            wrong output (a mismatch the fix prompt must describe)
  // verdict: compile_error    with a compiler message
  // verdict: unconfirmed 3.0  verified at first, fails the stricter confirmation
  // verdict: verified 1.05 ci 1.01 1.09   with the speedup's interval from the run
Anything without a marker is rejected as the real evaluator would reject a non-kernel.
"""

from __future__ import annotations

import re

from fsr_lsp.evaluator.records import Check, EvalResult, Mismatch, TimingStats
from fsr_lsp.search.outcome import Bench

from .search_helpers import GPU

_MARK = re.compile(r"//\s*verdict:\s*(\w+)(?:\s+([\d.]+))?(?:\s+ci\s+([\d.]+)\s+([\d.]+))?")
BASE_MS = 2.0


def stats(ms: float, spread: float = 0.01) -> TimingStats:
    return TimingStats(ms, ms * (1 - spread), ms * (1 + spread), ms * (1 - spread / 2), ms * (1 + spread / 2), 50)


class ScriptedBench(Bench):
    flags: tuple[str, ...] = ()  # type: ignore[assignment]
    gpu = GPU  # type: ignore[assignment]

    def __init__(self, spread: float = 0.01) -> None:
        self.evaluated: list[str] = []
        self.confirmed: list[str] = []
        self.spread = spread

    def baseline(self) -> EvalResult:
        return EvalResult(kernel="k", status="verified", message="original", gpu=GPU, original_time=stats(BASE_MS))

    def evaluate(self, proposals, on_result=None):
        results = [self._verdict(p.source) for p in proposals]
        for i, r in enumerate(results):
            if on_result is not None:
                on_result(i, r)
        return results

    def confirm(self, proposal):
        self.confirmed.append(proposal.source)
        r = self._verdict(proposal.source)
        if "unconfirmed" in proposal.source:
            return EvalResult(kernel="k", status="wrong", message="failed with 8 seeds")
        r.checks.append(Check("sanitizer memcheck", "pass", "0 errors"))
        return r

    def _verdict(self, source: str) -> EvalResult:
        self.evaluated.append(source)
        m = _MARK.search(source)
        if "__global__" not in source or m is None:
            return EvalResult(kernel="k", status="rejected", message="the candidate defines no __global__ kernel", gpu=GPU)
        kind, value = m.group(1), float(m.group(2) or 1.0)
        if kind in ("verified", "unconfirmed"):
            ms = BASE_MS / value
            return EvalResult(kernel="k", status="verified", message=f"{value}x", gpu=GPU,
                              original_time=stats(BASE_MS, self.spread), candidate_time=stats(ms, self.spread),
                              speedup=value, sizes_checked=["n=1", "n=1000"], seeds=[1, 2, 3, 4, 5, 6],
                              range_sets=["x10", "x100", "offset"],
                              speedup_ci=(float(m.group(3)), float(m.group(4))) if m.group(3) else None)
        if kind == "wrong":
            return EvalResult(kernel="k", status="wrong", message="the candidate's output differs", gpu=GPU,
                              mismatch=Mismatch("matches original", "n=1000", 7, "y", 12, 1000, 0.5, 999, "nan", "1.5",
                                                unwritten=12))
        if kind == "compile_error":
            return EvalResult(kernel="k", status="compile_error", gpu=GPU,
                              message='the candidate does not compile:\nkernel.cu(7): error: identifier "q" is undefined\n'
                                      "      y[i] = q;\n             ^\n\n1 error detected")
        return EvalResult(kernel="k", status=kind, message=f"scripted {kind}", gpu=GPU)  # type: ignore[arg-type]


class BrokenBench(ScriptedBench):
    """A bench whose first call fails as a bug of ours or a locked history would."""

    def baseline(self):
        raise RuntimeError("database is locked")


class SlowBench(ScriptedBench):
    """Each evaluation takes a moment unless the search interrupts it (a CLI's Ctrl-C, piped
    progress, a kill); each result is handed on as it comes, and logged to $FSR_BENCH_LOG."""

    def __init__(self):
        super().__init__()
        import threading

        self.stop = threading.Event()

    def interrupt(self):
        self.stop.set()

    def evaluate(self, proposals, on_result=None):
        import os

        results = []
        for i, p in enumerate(proposals):
            self.stop.wait(0.25)
            results.append(self._verdict(p.source))
            if os.environ.get("FSR_BENCH_LOG"):
                with open(os.environ["FSR_BENCH_LOG"], "a") as log:
                    log.write(f"{results[-1].status}\n")
            if on_result is not None:
                on_result(i, results[-1])
        return results
