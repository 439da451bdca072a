"""The sanitizers' test sizes, run while a cold worker starts.

A command that starts its own worker waits 4-5 s for it (torch's import, the CUDA context:
docs/benchmarks.md, session 20), then verifies, then runs the sanitizers (2.5 s for a tiled
sgemm). The sanitizers' runs at the test and edge sizes need neither the worker nor its native
times (their plan admits every test size under the unmeasured default), so they start as soon
as the candidate compiles, beside the worker's start. They share the GPU gate: the worker's
bandwidth probe and its job wait for them. After the verification, `sanitize` runs only what
they did not finish (the bench size where its native time allows it), and each tool's verdict
reads all its runs: nothing is checked less, and a verification that fails still says so first
(these runs are then dropped).

Bounded: runs still going after EARLY_LIMIT_S are stopped and run again, as before, after the
verification; a candidate built for another arch than the worker's drops them (`done_for`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Callable

from ..records import EvalJob
from ..worker.gpu_gate import gate
from .sanitizer import TOOLS, Done, Prewarm, ToolChild, calls_printf, find_sanitizer, run_children, sanitize_job, tool_plans

EARLY_LIMIT_S = 5.0  # about a worker's start: early runs must not hold back the job they overlap
log = logging.getLogger("fsr_lsp.evaluator")

# the compiled job (or None: it did not compile, or nothing to sanitize) and the candidate's static
# shared memory from ptxas (None: unknown, so racecheck is assumed needed); blocks until compiled
JobSource = Callable[[], "tuple[EvalJob, int | None] | None"]


class EarlySanitizers(threading.Thread):
    """Started with the compile's result to wait for and the children a Prewarm is loading."""

    def __init__(self, job_source: JobSource, prewarm: Prewarm, device_index: int = 0,
                 tools: tuple[str, ...] = TOOLS, limit_s: float = EARLY_LIMIT_S) -> None:
        super().__init__(daemon=True, name="fsr-sanitize-early")
        self._job_source, self._prewarm, self._tools = job_source, prewarm, tools
        self.device_index, self.limit_s = device_index, limit_s
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._done: Done = {}
        self._job: EvalJob | None = None
        self.later: Prewarm | None = None  # children for what is left, loading while the worker verifies
        self.start()

    def run(self) -> None:
        got = self._job_source()
        tool_path = find_sanitizer()
        if got is None or tool_path is None or got[0].candidate is None or self._stopped.is_set():
            return
        job, static_shared = got
        sizes = [p for p in job.sizes if p.role != "bench"]
        work = _test_size_work(dataclasses.replace(job, sizes=sizes), static_shared, self._tools)
        if not work:
            return
        with gate(self.device_index).shared():
            if self._stopped.is_set():
                return
            log.debug("sanitizers early, at the test sizes")
            outputs = run_children([(t, sanitize_job(job, s, original=False)) for t, s in work.items()], tool_path,
                                   self.device_index, self.limit_s, self._stopped, self._prewarm)
        self._job = job
        self._done = {t: (frozenset(p.label for p in work[t]), outputs[t]) for t in work if outputs[t][0] is not None}
        left = tuple(t for t in work if t not in self._done or _bench_may_run(job))
        with self._lock:
            if left and not self._stopped.is_set():
                self.later = Prewarm(left, self.device_index)

    def take(self, tool: str) -> ToolChild | None:
        """A loaded child for what is left: the later set's, else one the early runs left unused."""
        child = self.later.take(tool) if self.later is not None else None
        return child or self._prewarm.take(tool)

    def done_for(self, job: EvalJob) -> Done:
        """The finished runs, where `job` is the one they checked (the same original and
        candidate binaries); waits for them (at most `limit_s` and a child's load)."""
        self.join()
        mine = self._job
        if mine is None or job.candidate is None or mine.candidate is None:
            return {}
        if (mine.candidate.cubin, mine.original.cubin) != (job.candidate.cubin, job.original.cubin):
            return {}
        return dict(self._done)

    def close(self) -> None:
        """Stop whatever still runs and kill the children kept for later (the verdict is in, or
        the job failed before the sanitizers' turn)."""
        with self._lock:
            self._stopped.set()
            if self.later is not None:
                self.later.close()


def _test_size_work(job: EvalJob, static_shared: int | None, tools: tuple[str, ...]) -> dict:
    """Each tool's sizes as `sanitize` plans them, with no native time measured yet (the plan's
    unmeasured default): every test and edge size a tool would check."""
    plans = tool_plans(job, tools, {}, static_shared)
    return {t: plan.sizes for t, plan in plans.items() if not plan.skipped and plan.sizes}


def _bench_may_run(job: EvalJob) -> bool:
    """Whether the plan could admit the bench size once its native time is known."""
    return not calls_printf(job.original) and any(
        p.role == "bench" and p.buffer_bytes <= job.defences.layered_max_bytes for p in job.sizes)
