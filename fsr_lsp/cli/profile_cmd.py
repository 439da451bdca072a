"""`fsr profile FILE.cu --kernel NAME`: where the kernel loses time, line by line (the editor's
Profile: one run under Nsight Compute at the spec's bench size), as text or JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from rich.markup import escape

from ..failures import said
from ..evaluator.backends import backend_missing
from ..profiling.findings import KernelProfile
from ..settings import Settings
from ..instruments import Instruments
from ..workflows.optimize import Optimizer
from ..workflows.profile_kernel import profile_kernel
from .console import fail, make_console
from .kernel_job import KernelCommand, kernel_job





def run(args: argparse.Namespace) -> int:
    console = make_console(stderr=True)
    job = kernel_job(args, KernelCommand("profiling", lambda settings: unavailable(settings, args.instruments)))
    if isinstance(job, int):
        return job
    optimizer = Optimizer(instruments=args.instruments)
    try:
        outcome = profile_kernel(optimizer, job, lambda message: console.print(escape(message), highlight=False))
    except Exception as e:  # a bug of ours: one line, never a traceback
        return fail(f"the profile failed: {said(e)}", 1)
    finally:
        optimizer.close()
    if outcome.profile is None:
        return fail(outcome.message, 3 if outcome.spec_problem or outcome.unavailable else 1)
    if outcome.message:
        console.print(escape(outcome.message), highlight=False)
    print(as_json(outcome.profile, args.file) if args.json else as_text(outcome.profile, args.file))
    return 0


def unavailable(settings: Settings, instruments: Instruments) -> str:
    """Why a profile cannot run here ('' when it can), said as a profile's need: the Optimizer's
    own answer speaks of searches. A recorded profiler or an evaluator stand-in (tests) needs no GPU."""
    if instruments.profiler is not None or instruments.stands_in_for_searches():
        return ""
    return backend_missing(settings.backend_choice(), "fsr profile needs")


def as_text(profile: KernelProfile, file: Path) -> str:
    out = [profile.summary, f"(ncu took {profile.seconds:.1f} s)"]
    for f in profile.findings:
        text = profile.lines[f.line].text if f.line in profile.lines else ""
        out.append(f"{file}:{f.line}: {'warning' if f.severe else 'note'}: {f.message}")
        if text:
            out.append(f"    {text}")
    if not profile.findings:
        out.append("no findings: no line stands out")
    if profile.outside:  # inlined from headers: summed, never listed among the file's lines
        out.append(profile.outside)
    return "\n".join(out)


def as_json(profile: KernelProfile, file: Path) -> str:
    return json.dumps({"file": str(file), "kernel": profile.kernel, "summary": profile.summary, "size": profile.size,
                       "gpu": profile.gpu, "seconds": profile.seconds,
                       "facts": dataclasses.asdict(profile.facts) if profile.facts else None,
                       "findings": [dataclasses.asdict(f) for f in profile.findings],
                       "lines": [dataclasses.asdict(c) for c in profile.lines.values()],
                       "samples": profile.samples, "outside_samples": profile.outside_samples,
                       "outside": profile.outside,
                       "rules": [dataclasses.asdict(r) for r in profile.rules]}, indent=2)
