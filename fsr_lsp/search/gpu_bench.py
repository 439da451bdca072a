"""The Bench the search uses on real GPUs: every piece of work goes to a backend as a plain
request (this machine's GPU, or the GPUs of a Ray cluster), and comes back as a record."""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from typing import Callable

from ..evaluator import EvalOptions, Evaluator
from ..evaluator.profile.profile import Profiled
from ..evaluator.records import EvalResult, GpuInfo
from ..evaluator.backends import Backend, EvalRequest, LocalBackend
from .generators.screening import SLOW_ORIGINAL_MS
from .outcome import Bench
from .proposal import Proposal

CONFIRM_SEEDS = 8


def _round_options(options: EvalOptions, digest: bytes, min_gain: float | None) -> EvalOptions:
    """What a round's candidates are checked with. Every input set is the same for each of them (a
    seed from the kernel's text, unless the caller chose one), so the worker runs the original on
    each set once and keeps it (gpu/oracle_runs.py): a candidate pays only for its own runs. A
    candidate that passes only on these inputs gains nothing: a leader is confirmed on input sets
    drawn afresh, under the sanitizers, before it seeds a round, is shown to a model or answers.
    A round's candidates are timed only as far as the search decides: a win's interval clears
    1 + min_gain, and a loser's is known sooner (timing_stats.py); confirmations, to the precision."""
    if options.base_seed is None:
        options = dataclasses.replace(options, base_seed=int.from_bytes(digest[4:8], "little"))
    if min_gain is None:
        return options
    return dataclasses.replace(options, timing=dataclasses.replace(options.timing, win_above=1.0 + min_gain))


class GpuBench(Bench):
    screens = True
    profiles = True

    @property
    def confirms_beside(self) -> bool:  # type: ignore[override]
        """Whether a confirmation may run while a round is evaluated: a backend whose `evaluate`
        takes calls from two threads at once (this machine's GPUs, the warm service)."""
        return bool(getattr(self.backend, "concurrent", False))

    def __init__(self, backend: Backend | Evaluator, source: str, kernel: str, options: EvalOptions | None = None,
                 workers: int = 0, cancel: threading.Event | None = None, min_gain: float | None = None) -> None:
        self.backend: Backend = LocalBackend(backend, workers) if isinstance(backend, Evaluator) else backend
        self.source = source
        self.kernel = kernel
        options = options or EvalOptions()
        digest = hashlib.sha256(f"{kernel}\0{source}".encode()).digest()
        if options.bench_seed is None:  # one bench input set for the kernel as it is: the original's runs
            # there are made once and kept by the worker for every candidate of this search and of later
            # searches of the same code on a warm service (gpu/oracle_cache.py)
            options = dataclasses.replace(options, bench_seed=int.from_bytes(digest[:4], "little"))
        self.options = options  # the baseline's and the confirmations': test sizes drawn fresh every job
        self.checking = _round_options(options, digest, min_gain)
        self.cancel = cancel or threading.Event()
        self.original_ms = 0.0  # one run of the original, once the baseline has timed it

    @property
    def gpu(self) -> GpuInfo:
        return self.backend.start()

    @property
    def flags(self) -> tuple[str, ...]:
        return self.options.flags

    def compile_ahead(self, proposals: list[Proposal]) -> None:
        """Let the backend compile these while its GPU worker starts (where it can)."""
        ahead = getattr(self.backend, "compile_ahead", None)
        if ahead is not None:
            ahead([self._request(p, self.checking) for p in proposals])

    def baseline(self) -> EvalResult:
        result = self.backend.evaluate([EvalRequest(self.source, self.kernel, None, self.options)], self.cancel)[0]
        if result.original_time is not None:
            self.original_ms = result.original_time.median_ms
        return result

    def evaluate(self, proposals: list[Proposal],
                 on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
        return self.backend.evaluate([self._request(p, self.checking) for p in proposals], self.cancel, on_result)

    def screen(self, proposals: list[Proposal]) -> list[EvalResult]:
        """The bench size only, one input set, few repetitions: enough to rank configurations.
        Its results are marked `screened` and never count as verified. Past SLOW_ORIGINAL_MS an
        original run, the candidate is timed alone and nothing compared."""
        screening = dataclasses.replace(self.options, screen=True, screen_alone=self.original_ms > SLOW_ORIGINAL_MS)
        return self.backend.evaluate([self._request(p, screening) for p in proposals], self.cancel)

    def confirm(self, proposal: Proposal) -> EvalResult:
        return self.confirm_many([proposal])[0]

    def confirm_many(self, proposals: list[Proposal]) -> list[EvalResult]:
        """The stricter verification of each, asked in one batch: the backend runs the
        sanitizers of several in one child per tool where it can."""
        strict = dataclasses.replace(self.options, seeds_per_size=CONFIRM_SEEDS)
        return self.backend.evaluate([dataclasses.replace(self._request(p, strict), action="confirm")
                                      for p in proposals], self.cancel)

    def interrupt(self) -> None:
        """Stop the GPU work in flight now (the search's deadline or cancel; its cancel event,
        already set, stops what is queued)."""
        self.backend.cancel()

    def profile(self, proposal: Proposal | None) -> Profiled:
        """Nsight Compute facts about a candidate (the original when None) at the bench size."""
        if proposal is None:
            return self.backend.profile(EvalRequest(self.source, self.kernel, None, self.options))
        return self.backend.profile(self._request(proposal, self.options))

    def _request(self, p: Proposal, options: EvalOptions) -> EvalRequest:
        return EvalRequest(self.source, self.kernel, p.source, dataclasses.replace(options, candidate_flags=p.flags))
