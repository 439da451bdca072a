"""Confirm an applied rewrite in the user's own program (`fsr confirm`, the editor's "Confirm in
the program"): rebuild with the build command the capture ran, rerun the captured program under
the capture, and hold the run against the captured one: the kernel's GPU time in each (the
capture's own records), the program's exit status, and its standard output (numbers within the
kernel's tolerance). The speedup fsr verified at the bench size should be the program's; where
it is not, the report says so and why it may be. Nothing is edited: the build writes what it
always writes, and the run is kept apart from the captures specs are taken from."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from ..capture import Capture, CaptureError, CaptureOptions, latest_capture, run_capture
from ..capture.build_watch import run_build
from ..capture.launches import CapturedLaunch
from ..capture.program_output import compare_outputs
from ..kernels import find_kernel, kernel_source
from ..profiling.timings import Timings
from ..settings import Settings
from ..source import SourceText
from ..specs import Spec, parse_spec
from .program_times import short_launch

CONFIRMS = Path(".fsr") / "confirms"  # the reruns: never a source of specs
AGREES = 0.20  # the program's gain and the verified one further apart than this are explained
SAME = 0.05  # kernel times of two runs this close are the same time


@dataclass
class Confirmation:
    kernel: str
    status: Literal["confirmed", "differs", "failed"]
    lines: list[str] = field(default_factory=list)
    before_ms: float = 0.0  # mean GPU time a launch in the captured run
    after_ms: float = 0.0  # the same in the rerun
    verified: float | None = None  # the speedup fsr verified for the applied rewrite

    @property
    def exit_code(self) -> int:
        return {"confirmed": 0, "differs": 1, "failed": 2}[self.status]


def confirm(workspace: Path, file: Path, kernel: str, settings: Settings, *, rebuild: bool | str = True,
            timeout: float | None = None, on_output: Callable[[str], None] | None = None,
            cancel: threading.Event | None = None) -> Confirmation:
    """Build, rerun and compare; every step that cannot run ends in one line saying why. `rebuild`:
    True, by the captured build command; a command of the user's; False, the user rebuilt it."""
    capture = latest_capture(workspace)
    if capture is None or not capture.of(kernel):
        return Confirmation(kernel, "failed", [
            f"no capture launched {kernel}: before applying a rewrite, run `fsr capture --build \"BUILD\" -- PROGRAM "
            "ARGS`, so there is a run to confirm against"])
    first = capture.run_of(kernel)
    before = capture.of(kernel)
    out = Confirmation(kernel, "confirmed")
    command = rebuild if isinstance(rebuild, str) else first.build
    if rebuild is not False:
        if not command:
            return Confirmation(kernel, "failed", [
                f"the run of {kernel} was captured without --build, so fsr does not know how your program is built: "
                "give the command (fsr confirm --build \"make\"), or rebuild it yourself and pass --no-build"])
        built = run_build(command, workspace, cwd=first.cwd, nvcc=settings.compiler_nvcc, on_output=on_output,
                          timeout=timeout)
        if built.exit_code != 0:
            why = f" ({built.problems[0]})" if built.exit_code in (124, 127) and built.problems else ""
            return Confirmation(kernel, "failed", [
                f"the build `{command}` failed (exit status {built.exit_code}){why}: nothing was run; the file is as "
                "applied and nothing else was changed"])
        if not any(Path(e["directory"], e["file"]).resolve() == file.resolve() for e in built.entries):
            out.lines.append(f"the build did not compile {file.name} that fsr could see: if the program was not "
                             "rebuilt, the run below is of the binary before the rewrite")
    try:
        again = run_capture(first.command, workspace,
                            CaptureOptions(kernels=(kernel,), cwd=first.cwd, nvcc=settings.compiler_nvcc, timeout=timeout,
                                           build=command or "", root=workspace / CONFIRMS),
                            on_output=on_output, cancel=cancel)
    except CaptureError as e:
        return Confirmation(kernel, "failed", [str(e)])
    applied = _applied(file, kernel)
    _launch_kept(out, applied.spec, again.of(kernel))
    _times(out, before, again.of(kernel))
    _against_verified(out, workspace, file, kernel, applied.definition)
    _exit_status(out, first, again)
    _outputs(out, first, again, applied.spec)
    return out


@dataclass(frozen=True)
class _Applied:
    """The kernel as the file holds it now (read once): its definition and its spec, where any."""

    definition: str = ""
    spec: Spec | None = None


def _applied(file: Path, kernel: str) -> _Applied:
    try:
        src = SourceText(file.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return _Applied()
    found = find_kernel(src, kernel)
    if found is None:
        return _Applied()
    spec = parse_spec(src, found).spec if found.spec is not None else None
    return _Applied(kernel_source(src, found).definition.strip(), spec)


def _launch_kept(out: Confirmation, spec: Spec | None, after: list[CapturedLaunch]) -> None:
    """A rewrite verified under another launch than the program makes is not the rewrite that
    ran: said first, as the likeliest cause of whatever follows."""
    if spec is None or not after:
        return
    made = after[0].block
    wanted = tuple(spec.block) + (1,) * (3 - len(spec.block))
    if tuple(made) != wanted:
        out.status = "differs"
        out.lines.append(f"the applied rewrite was verified with block {wanted} (its @fsr block), but your program "
                         f"launches it with block {tuple(made)}: change the program's launch as the block says "
                         "(grid and block), or the rewrite runs as it was never verified")


def _mean_ms(launches: list[CapturedLaunch]) -> tuple[float, int]:
    """(mean GPU ms a launch, launches) over the timed launches, each shape weighted by its count."""
    timed = [x for x in launches if x.timed]
    count = sum(x.count for x in timed)
    return (sum(x.gpu_ns * x.count for x in timed) / count / 1e6, count) if count else (0.0, 0)


def _times(out: Confirmation, before: list[CapturedLaunch], after: list[CapturedLaunch]) -> None:
    out.before_ms, n_before = _mean_ms(before)
    out.after_ms, n_after = _mean_ms(after)
    if not after:
        out.status = "differs"
        out.lines.append(f"the rerun launched no {out.kernel}: the program took another path, or failed before it")
        return
    if not out.before_ms or not out.after_ms:
        out.status = "differs"
        out.lines.append("no kernel times to compare: " + ("the first run was captured before fsr recorded them; "
                                                           "capture it again (with the original) to confirm"
                                                           if not out.before_ms else "the rerun recorded none"))
        return
    gain = out.before_ms / out.after_ms
    said = (f"{out.kernel} in your program: {out.before_ms:.4g} ms -> {out.after_ms:.4g} ms a launch "
            f"({n_before} launches timed before, {n_after} after): ")
    if gain >= 1 + SAME:
        out.lines.append(said + f"{gain:.2f}x faster")
    elif gain > 1 / (1 + SAME):
        out.lines.append(said + f"{gain:.2f}x, the same within {SAME:.0%} (a run's own noise)")
    else:
        out.status = "differs"
        out.lines.append(said + f"{1 / gain:.2f}x SLOWER: a regression in the real run")
    if {(x.grid, x.block, x.smem) for x in before} != {(x.grid, x.block, x.smem) for x in after}:
        out.lines.append("the rerun launched other shapes than the first run (grid, block or shared memory): "
                         "the times are of different launches")


def _against_verified(out: Confirmation, workspace: Path, file: Path, kernel: str, definition: str) -> None:
    """The speedup fsr verified for the rewrite now in the file, against the program's."""
    if not definition:
        return
    with Timings(workspace) as timings:
        versions = timings.versions(str(file), kernel)
    rewrite = next((v for v in reversed(versions) if v.label == "the rewrite a search found"
                    and v.definition == definition), None)
    original = next((v for v in reversed(versions) if rewrite is not None and v.label == "the original a search timed"
                     and v.created <= rewrite.created and v.gpu == rewrite.gpu), None)
    if rewrite is None or original is None:
        out.lines.append(f"no search of fsr's found the {kernel} now in {file.name}: nothing verified to hold the "
                         "run against")
        return
    out.verified = original.time_ms / rewrite.time_ms
    if not out.before_ms or not out.after_ms:
        return
    gain = out.before_ms / out.after_ms
    ratio = gain / out.verified
    said = f"fsr verified {out.verified:.2f}x at its bench size on {rewrite.gpu}; the program gains {gain:.2f}x"
    if abs(ratio - 1) <= AGREES:
        out.lines.append(f"{said}: within {abs(ratio - 1):.0%}")
        return
    out.status = "differs"
    short = short_launch(out.before_ms) if ratio > 1 else ""
    out.lines.append(f"{said}, {ratio:.0%} of it. Likely causes: {short}the program's launches are not the bench's sizes or "
                     "inputs, its data stays in cache between launches, other work shares the GPU, the build's "
                     "flags differ from the search's, or clocks")


def _exit_status(out: Confirmation, first: Capture, again: Capture) -> None:
    if again.exit_code == first.exit_code:
        out.lines.append(f"exit status {again.exit_code}, as before")
    else:
        out.status = "differs"
        out.lines.append(f"exit status {again.exit_code}, where the first run's was {first.exit_code}")
    out.lines += [f"problem in the rerun: {p}" for p in again.problems]


def _outputs(out: Confirmation, first: Capture, again: Capture, spec: Spec | None) -> None:
    was, now = first.output(), again.output()
    if was is None:
        out.lines.append("the first run's output was not kept (captured before fsr kept outputs): not compared")
        return
    rtol, atol = _tolerance(spec)
    compared = compare_outputs(was, now or "", rtol, atol)
    if not compared.same:
        out.status = "differs"
    out.lines.append(compared.describe())


def _tolerance(spec: Spec | None) -> tuple[float, float]:
    """The kernel's spec's tolerance, where it has one; else a float's."""
    return (spec.rtol if spec is not None and spec.rtol is not None else 1e-5,
            spec.atol if spec is not None and spec.atol is not None else 1e-8)
