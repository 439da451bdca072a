"""The Bench the search uses on a real GPU: candidates compile in parallel on the CPU cores,
then run one at a time in the evaluator's worker."""

from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from ..evaluator import EvalOptions, Evaluator, evaluate, prepare, run_prepared
from ..evaluator.profile import Profiled, profile
from ..evaluator.records import EvalResult, GpuInfo
from .proposal import Proposal

CONFIRM_SEEDS = 8


class GpuBench:
    def __init__(self, evaluator: Evaluator, source: str, kernel: str, options: EvalOptions | None = None,
                 workers: int = 0, cancel: threading.Event | None = None) -> None:
        self.evaluator = evaluator
        self.source = source
        self.kernel = kernel
        self.options = options or EvalOptions()
        self.workers = workers or os.cpu_count() or 2
        self.cancel = cancel or threading.Event()

    @property
    def gpu(self) -> GpuInfo:
        return self.evaluator.start()

    @property
    def flags(self) -> tuple[str, ...]:
        return self.options.flags

    def baseline(self) -> EvalResult:
        return evaluate(self.evaluator, self.source, self.kernel, None, self.options)

    def evaluate(self, proposals: list[Proposal]) -> list[EvalResult]:
        return self._run(proposals, self.options)

    def screen(self, proposals: list[Proposal]) -> list[EvalResult]:
        """The bench size only, one input set, few repetitions: enough to rank configurations.
        Its results are marked `screened` and never count as verified."""
        return self._run(proposals, dataclasses.replace(self.options, screen=True))

    def profile(self, proposal: Proposal | None) -> Profiled:
        """Nsight Compute facts about a candidate (the original when None) at the bench size."""
        candidate = proposal.source if proposal else None
        flags = proposal.flags if proposal else ()
        prepared = prepare(self.source, self.kernel, candidate, self.gpu.arch,
                           dataclasses.replace(self.options, candidate_flags=flags))
        if prepared.job is None:
            return Profiled(None, f"not profiled: {prepared.result.message if prepared.result else 'no job'}")
        return profile(prepared.job, self.evaluator.device_index, "candidate" if proposal else "original")

    def _run(self, proposals: list[Proposal], options: EvalOptions) -> list[EvalResult]:
        arch = self.gpu.arch
        results: list[EvalResult] = []
        with ThreadPoolExecutor(max_workers=min(self.workers, max(len(proposals), 1))) as pool:
            futures = [pool.submit(prepare, self.source, self.kernel, p.source, arch,
                                   dataclasses.replace(options, candidate_flags=p.flags)) for p in proposals]
            for future in futures:
                if self.cancel.is_set():
                    future.cancel()
                    results.append(EvalResult(kernel=self.kernel, status="cancelled", message="search cancelled"))
                    continue
                results.append(run_prepared(self.evaluator, future.result()))
        return results

    def confirm(self, proposal: Proposal) -> EvalResult:
        strict = dataclasses.replace(self.options, candidate_flags=proposal.flags, seeds_per_size=CONFIRM_SEEDS)
        return evaluate(self.evaluator, self.source, self.kernel, proposal.source, strict, sanitize_winner=True)
