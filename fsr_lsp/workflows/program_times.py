"""A search's numbers held against the user's own build and run: the final line names the flags
the kernels were built with (a speedup holds for the build it was measured on), and fsr's timing
of a captured original is compared with that launch's GPU time in the user's program (the
capture's CUPTI records), the cache tried as the cause where it can be."""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from ..drafting.origin import KernelSpec
from ..evaluator.backends import EvalRequest
from ..search import SearchOutcome
from ..search.gpu_bench import GpuBench

log = logging.getLogger(__name__)


def say_build(outcome: SearchOutcome, spec: KernelSpec | None) -> None:
    """The final line names how the kernels were built: a speedup holds for the build it was
    measured on (a kernel built with --use_fast_math can time 2.6x apart without it)."""
    if spec is not None and spec.build:
        if outcome.status == "improved":
            outcome.message = f"{outcome.message.rstrip('.')}; {spec.build}"
        else:
            outcome.notes.append(spec.build)
    elif outcome.status == "improved":
        outcome.notes.append("built with fsr's own flags and the settings' (no compile database names this file): "
                             "a build with other flags (--use_fast_math, -D) may time otherwise; `fsr capture --build "
                             "CMD` or a compile_commands.json makes every compile take your build's flags")


APART = 0.25  # fsr's timing of the original and the user's run further apart than this are said
SHORT_MS = 0.03  # a launch this short, timed by events, is mostly the launch's own work


def short_launch(run_ms: float, clock: str = "") -> str:
    """The first likely cause where the kernel runs so briefly in the user's run that fsr's
    timing by events around each launch holds mostly the launch's own work, which the run's
    kernel durations (CUPTI's records) leave out; '' for a longer kernel, or one fsr timed by the
    kernel's own stamps (`clock` "kernel"; "" where unknown)."""
    if not 0 < run_ms < SHORT_MS or clock == "kernel":
        return ""
    return (f"a launch this short ({run_ms * 1000:.3g} µs in your run): where fsr times it by events around each "
            "launch (no kernel clock: CUPTI held by another profiler or missing), they add a few microseconds of "
            "launch work that your run's kernel durations leave out, so fsr reads so short a kernel slower, and a "
            "rewrite's speedup smaller, than your program sees them; ")


WarmTimes = Callable[[], "tuple[float, float | None] | None"]


def warm_times(bench: GpuBench, outcome: SearchOutcome) -> tuple[float, float | None] | None:
    """The original and the winner timed as a program that launches them again and again runs
    them: L2 not emptied between runs, nothing judged (each was verified, or is the original)."""
    best = outcome.best
    timing = dataclasses.replace(bench.options.timing, flush_l2=False)
    options = dataclasses.replace(bench.options, timing=timing, time_only=best is not None,
                                  candidate_flags=best.proposal.flags if best is not None else ())
    try:
        result = bench.backend.evaluate([EvalRequest(bench.source, bench.kernel, best.proposal.source if best else None,
                                                     options)], bench.cancel)[0]
    except Exception as e:  # noqa: BLE001 - an extra measurement: the search's result stands without it
        log.warning("the warm timing after the search failed: %s", e)
        return None
    if result.original_time is None:
        return None
    return result.original_time.median_ms, result.candidate_time.median_ms if result.candidate_time else None


def against_the_run(outcome: SearchOutcome, spec: KernelSpec | None, warm: WarmTimes | None = None) -> None:
    """fsr's timing of the original at the captured launch's sizes, against that launch's GPU
    time in the user's own run: a speedup is only the user's where the two agree. Where fsr is
    slower and the launch's memory fits L2 (a program launching it again and again runs it
    warm), the original and the winner are timed warm too: the cache is named as the cause only
    where that closes the gap, and the warm speedup is said."""
    ours = outcome.baseline.original_time if outcome.baseline is not None else None
    if spec is None or not spec.captured_ms or ours is None or ours.median_ms <= 0:
        return
    theirs, ratio = spec.captured_ms, ours.median_ms / spec.captured_ms
    said = (f"fsr times the original at {ours.median_ms:.4g} ms; in your run ({spec.captured_timed} launch"
            f"{'es' if spec.captured_timed != 1 else ''} at these sizes) it took {theirs:.4g} ms")
    if abs(ratio - 1) <= APART:
        outcome.notes.append(f"{said}: they agree within {abs(ratio - 1):.0%}")
        return
    gpu = outcome.baseline.gpu if outcome.baseline is not None else None
    fits = ratio > 1 and gpu is not None and gpu.l2_bytes and 0 < spec.captured_bytes <= gpu.l2_bytes
    times = warm() if fits and warm is not None else None
    said += f": {max(ratio, 1 / ratio):.2f}x apart, so the speedup may not be your program's"
    causes = ("flags your build has that fsr's compile has not (`fsr capture --build CMD` records them), the inputs "
              "(work that depends on the data: bench_inputs = \"captured\" times on the run's own), other work on "
              "the GPU during either run, or clocks (another GPU, power or thermal state)")
    causes = (short_launch(theirs, outcome.baseline.clock if outcome.baseline else "") if ratio > 1 else "") + causes
    if times is None:
        outcome.notes.append(f"{said}. Likely causes: {causes}")
        return
    original, rewrite = times
    speedup = f"; the rewrite warm: {rewrite:.4g} ms, {original / rewrite:.2f}x" if rewrite else ""
    if abs(original / theirs - 1) <= APART:
        outcome.notes.append(
            f"{said}. The cache: its {spec.captured_bytes / 2**20:.3g} MiB fit the GPU's {gpu.l2_bytes / 2**20:.0f} "
            f"MiB L2, and timed warm (L2 kept, as your program's launches find it) fsr gets {original:.4g} ms, "
            f"{original / theirs:.2f}x your run's{speedup}")
    else:
        outcome.notes.append(f"{said}. Not the cache: timed warm as well, fsr gets {original:.4g} ms{speedup}. "
                             f"Likely causes: {causes}")
