"""GPU work as plain data: a request names the source, the kernel, the candidate and the
options; a backend (a local worker, or GPUs on a Ray cluster) answers with result records.
Nothing in a request needs this machine's files, compiler or GPU."""

from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from .api import evaluate, run_prepared
from .pool import Evaluator
from .prepare import EvalOptions, prepare
from .profile import Profiled, profile
from .records import EvalResult, GpuInfo

Action = Literal["evaluate", "confirm"]  # confirm: with the sanitizers on a verified candidate


@dataclass(frozen=True)
class EvalRequest:
    source: str
    kernel: str
    candidate: str | None = None  # None: the original alone (a baseline)
    options: EvalOptions = field(default_factory=EvalOptions)
    action: Action = "evaluate"
    timeout: float | None = None  # per job, on the GPU; None: the evaluator's own


class LocalBackend:
    """This machine's GPU: candidates compile in parallel on the CPU cores, then run one at a
    time in the evaluator's worker process."""

    def __init__(self, evaluator: Evaluator, workers: int = 0) -> None:
        self.evaluator = evaluator
        self.workers = workers or os.cpu_count() or 2

    def start(self) -> GpuInfo:
        return self.evaluator.start()

    @property
    def gpus(self) -> int:
        return 1

    def handle(self, requests: list[EvalRequest], cancel: threading.Event | None = None) -> list[EvalResult]:
        cancel = cancel or threading.Event()
        results: list[EvalResult] = []
        plain = [r for r in requests if r.action == "evaluate" and r.candidate is not None]
        arch = self.start().arch if plain else ""
        with ThreadPoolExecutor(max_workers=min(self.workers, max(len(plain), 1))) as pool:
            futures = {id(r): pool.submit(prepare, r.source, r.kernel, r.candidate, arch, r.options) for r in plain}
            for r in requests:
                if cancel.is_set():
                    results.append(EvalResult(kernel=r.kernel, status="cancelled", message="search cancelled"))
                    continue
                if id(r) in futures:
                    results.append(run_prepared(self.evaluator, futures[id(r)].result(), timeout=r.timeout))
                else:
                    results.append(evaluate(self.evaluator, r.source, r.kernel, r.candidate, r.options,
                                            sanitize_winner=r.action == "confirm", timeout=r.timeout))
        return results

    def profile(self, request: EvalRequest) -> Profiled:
        prepared = prepare(request.source, request.kernel, request.candidate, self.start().arch, request.options)
        if prepared.job is None:
            return Profiled(None, f"not profiled: {prepared.result.message if prepared.result else 'no job'}")
        return profile(prepared.job, self.evaluator.device_index,
                       "candidate" if request.candidate is not None else "original")

    def cancel(self) -> None:
        """Stop the job running now (the search's own cancel event stops the rest)."""
        self.evaluator.cancel()

    def close(self) -> None:
        self.evaluator.close()


def with_options(request: EvalRequest, **changes: object) -> EvalRequest:
    return dataclasses.replace(request, options=dataclasses.replace(request.options, **changes))
