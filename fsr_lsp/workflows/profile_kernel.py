"""Profile one kernel, as the editor and `fsr profile` both do it: the spec it runs with (its
block; a draft from a launch or a capture, proven first), one run under Nsight Compute on the
backend's GPU at the bench size, and the findings read from it. Where it shows them is the
caller's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..drafting.placement import Placed, place_spec
from ..evaluator import EvaluatorUnavailable
from ..evaluator.backends import EvalRequest
from ..evaluator.profile.profile import Profiled
from ..profiling.findings import KernelProfile, read_profile
from ..instruments import STAND_IN_GPU
from .optimize import KernelJob, Optimizer



@dataclass
class ProfileOutcome:
    profile: KernelProfile | None
    message: str  # why there is no profile, or what the user should know of it
    spec_problem: bool = False  # the kernel needs a spec first
    cancelled: bool = False
    unavailable: bool = False  # no GPU could be reached (a Ray cluster down): said as every command says it


def profile_kernel(optimizer: Optimizer, job: KernelJob, report: Callable[[str], None]) -> ProfileOutcome:
    """The kernel's profile, or a one-line reason there is none."""
    plan = job.plan
    if plan is not None and plan.spec.origin == "none" and plan.draft is None:
        return ProfileOutcome(None, plan.message or f"{job.kernel} needs an @fsr spec to be profiled", spec_problem=True)
    job.searched_text = job.text
    placed: Placed | None = None
    if plan is not None and plan.draft is not None:
        job.draft = plan.draft
        report(plan.message)
        proof = optimizer.prove(job, lambda p: report(p.message))
        if not proof.proven:
            return ProfileOutcome(None, f"the drafted @fsr spec of {job.kernel} failed its proof: {proof.message}",
                                  spec_problem=True)
        placed = place_spec(job.text, job.kernel, proof.spec)
        job.searched_text = placed.text
    if job.cancel.is_set():
        return ProfileOutcome(None, "cancelled", cancelled=True)
    report(f"profiling {job.kernel} under Nsight Compute")
    request = EvalRequest(job.searched_text, job.kernel, None, job.eval_options())
    if optimizer.instruments.profiler is not None:
        profiled, gpu = optimizer.instruments.profiler(request), STAND_IN_GPU
    else:
        backend = optimizer.backend(job.settings)
        try:
            backend.start()
        except EvaluatorUnavailable as e:
            return ProfileOutcome(None, str(e), unavailable=True)
        profiled = backend.profile(request, lines=True, cancel=job.cancel)
        gpu = _gpu_name(backend)
    if job.cancel.is_set():
        return ProfileOutcome(None, "cancelled", cancelled=True)
    return _outcome(job, profiled, gpu, placed)


def _gpu_name(backend) -> str:
    try:
        return backend.start().name
    except Exception:  # the profile already said what failed
        return ""


def _outcome(job: KernelJob, profiled: Profiled, gpu: str, placed: Placed | None) -> ProfileOutcome:
    kernel = job.kernel
    if profiled.lines is None:
        return ProfileOutcome(None, f"{kernel} was not profiled: {profiled.note.removeprefix('not profiled: ')}")
    line_of = _document_line(job.text, placed) if placed is not None else None
    return ProfileOutcome(read_profile(kernel, profiled.facts, profiled.lines, gpu, job.text, line_of), profiled.note)


def _document_line(document: str, placed: Placed) -> Callable[[int], int | None]:
    """The document's line of a line of the profiled text, which has the drafted spec placed
    above the kernel: lines below the block move up by its height, its own lines are no one's."""
    data = document.encode()
    first = data.count(b"\n", 0, placed.at) + 1  # the block's first line
    last = first + placed.block.rstrip("\n").count("\n")  # and its last
    moved = placed.block.count("\n") - data.count(b"\n", placed.at, placed.at + placed.replaced)

    def line_of(line: int) -> int | None:
        if line < first:
            return line
        return None if line <= last else line - moved

    return line_of

