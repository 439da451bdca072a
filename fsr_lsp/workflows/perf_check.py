"""Performance on save: a kernel with a stored timing (.fsr/timings.sqlite) whose definition a
save changed is re-timed at the bench size against the fastest stored version, both in one run
on the same GPU, outputs not judged (the edit may change them on purpose). Slower beyond the
timing noise (the whole interval of the ratio) is a regression; a comment-only change is the
same code and is not timed. Searches record what they timed (`record_search`)."""

from __future__ import annotations

import dataclasses
import functools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..capture import latest_capture
from ..drafting.origin import requested_inputs
from ..evaluator.backends import Backend, EvalRequest
from ..evaluator.records import EvalResult
from ..kernels import discover_kernels, find_kernel, kernel_source
from ..profiling.timings import TimedVersion, Timings
from ..search import SearchOutcome
from ..search.outcome import ranked
from ..search.apply import ApplyError, rewrite_file
from ..settings import Settings
from ..source import SourceText
from ..specs import parse_spec
from ..instruments import STAND_IN_GPU



@dataclass
class PerfVerdict:
    kernel: str
    definition: str  # the definition as checked: the verdict holds while the kernel reads so
    kind: str  # "slower", "faster", "same", "not compared"
    message: str


def check_performance(backend: Backend | None, text: str, path: Path, workspace: Path, settings: Settings,
                      cancel: threading.Event, only: set[str] | None = None,
                      timer: Callable[[EvalRequest], EvalResult] | None = None) -> list[PerfVerdict]:
    """A verdict for each changed kernel of `text` with a stored timing (or `only` those);
    `timer` times in place of the backend (a test's stand-in, Instruments.timer)."""
    gpu = STAND_IN_GPU if timer is not None else (backend.start().name if backend is not None else "")
    src = SourceText(text)
    capture = functools.cache(lambda: latest_capture(workspace))  # for specs holding a run's bytes (captured())
    out = []
    with Timings(workspace) as timings:
        for kernel in discover_kernels(src):
            if cancel.is_set():
                break
            if not kernel.complete or (only and kernel.name not in only):
                continue
            reference = timings.fastest(str(path), kernel.name, gpu)
            definition = kernel_source(src, kernel).definition
            if reference is None or definition == reference.definition:
                continue
            saved = requested_inputs(parse_spec(src, kernel).spec, kernel, capture, text)
            options = dataclasses.replace(settings.eval_options(path), time_only=True,
                                          real_inputs=tuple(sorted(saved.items())))
            request = EvalRequest(reference.source, kernel.name, definition, options)
            result = timer(request) if timer is not None else backend.evaluate([request], cancel)[0]  # type: ignore[union-attr]
            verdict = _verdict(kernel.name, definition, reference, result, settings.search_min_gain)
            if verdict is None:
                continue
            out.append(verdict)
            if result.status == "timed" and result.candidate_time is not None:
                timings.record(str(path), kernel.name, text, definition, result.candidate_time.median_ms, gpu, "saved")
    return out


def _verdict(kernel: str, definition: str, ref: TimedVersion, r: EvalResult, min_gain: float) -> PerfVerdict | None:
    if r.status in ("unchanged", "compile_error", "cancelled"):  # the same code; the save's own diagnostics; stopped
        return None
    if r.status != "timed" or not r.speedup or r.original_time is None or r.candidate_time is None:
        return PerfVerdict(kernel, definition, "not compared", f"{kernel}: not re-timed against the version of "
                                                               f"{ref.when}: {r.message}")
    low, high = r.speedup_ci or (r.speedup, r.speedup)
    then, now = r.original_time.median_ms, r.candidate_time.median_ms
    where = f"at {r.bench_size}" if r.bench_size else "at the bench size"
    interval = f"interval {1 / high:.2f}-{1 / low:.2f}x the time"
    if high < 1.0 / (1.0 + min_gain):  # the whole interval: slower beyond the noise
        return PerfVerdict(kernel, definition, "slower", f"{kernel}: {100 * (1 / r.speedup - 1):.0f}% slower than at "
                                                         f"{ref.when} ({then:.4g} ms -> {now:.4g} ms {where}, both timed "
                                                         f"now; {interval}; {ref.label})")
    if low > 1.0 + min_gain:
        return PerfVerdict(kernel, definition, "faster", f"{kernel}: {100 * (1 - 1 / r.speedup):.0f}% faster than at "
                                                         f"{ref.when} ({then:.4g} ms -> {now:.4g} ms {where}; {interval})")
    return PerfVerdict(kernel, definition, "same", f"{kernel}: as fast as at {ref.when} within the noise "
                                                   f"({then:.4g} ms -> {now:.4g} ms; {interval})")


UNDER_LAUNCH_KEPT = 3  # wins under the original's launch stored beside the fastest


def record_search(workspace: Path, path: Path, searched_text: str, kernel: str, outcome: SearchOutcome) -> None:
    """What a search timed: the original as searched, the fastest verified win, and the fastest
    few wins under the original's launch (search/applicable.py applies one of those where the
    program's launch cannot take the fastest's: `fsr confirm` holds the program's run against
    whichever is in the file). Each is a rewrite of the whole file, so not every win is kept."""
    base = outcome.baseline
    if base is None or base.original_time is None or base.gpu is None:
        return
    src = SourceText(searched_text)
    found = find_kernel(src, kernel)
    if found is None:
        return
    with Timings(workspace) as timings:
        timings.record(str(path), kernel, searched_text, kernel_source(src, found).definition, base.original_time.median_ms,
                       base.gpu.name, "the original a search timed")
        under_launch = [t for t in ranked(outcome.tried)
                        if t is not outcome.best and t.proposal.keeps_launch and (t.result.speedup or 0.0) > 1.0]
        for win in ([outcome.best] if outcome.best is not None else []) + under_launch[:UNDER_LAUNCH_KEPT]:
            if win.result.candidate_time is None or win.result.gpu is None:
                continue
            try:
                rewritten = rewrite_file(searched_text, kernel, win.proposal.source)
            except ApplyError:
                continue
            new = SourceText(rewritten.text)
            k = find_kernel(new, kernel)
            if k is not None:
                timings.record(str(path), kernel, rewritten.text, kernel_source(new, k).definition,
                               win.result.candidate_time.median_ms, win.result.gpu.name, "the rewrite a search found")
