"""The start `fsr optimize` and `fsr profile` share: the file's kernel and the settings read,
the workspace writable (history and proofs live there), the GPU work possible here, and the
kernel's spec planned (its block, a capture, a draft from a launch in the workspace). Each failure
is one line and an exit status: 2 for bad input, 3 where the work cannot run here."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from ..drafting.origin import Drafter
from ..drafting.workspace import LaunchIndex
from ..settings import Settings, settings_from_args
from ..workflows.optimize import KernelJob, plan_spec
from .arguments import unwritable, workspace_of
from .console import InputError, fail, kernel_of


@dataclass(frozen=True)
class KernelCommand:
    """What the command is: what follows the spec's planning ("searching", "profiling"), why its
    GPU work cannot run here (given the settings; '' where it can), and a model's drafter."""

    then: str
    unavailable: Callable[[Settings], str]
    model_drafter: Callable[[Settings], Callable[[], Drafter]] | None = None


def kernel_job(args: argparse.Namespace, command: KernelCommand, started: float = 0.0) -> KernelJob | int:
    """The job on the kernel `args` name, or the exit status after its one-line failure."""
    try:
        source, kernel = kernel_of(args.file, args.kernel)
        settings = settings_from_args(args)
    except (InputError, ValueError) as e:
        return fail(str(e), 2)
    workspace = workspace_of(args.file, args.workspace)
    why = unwritable(workspace)  # the history and the proofs are kept there: said now, not after the work
    if why:
        return fail(why, 2)
    missing = command.unavailable(settings)
    if missing:
        return fail(missing.removeprefix("fsr: "), 3)
    drafter = command.model_drafter(settings) if command.model_drafter is not None else None
    plan = plan_spec(LaunchIndex(workspace, first_wait=None), args.file.resolve(), source, kernel, settings,
                     model_drafter=drafter, then=command.then)
    return KernelJob(source, args.file.resolve(), args.kernel, workspace, settings, plan, started=started)

