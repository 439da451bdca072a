"""GPU work as plain data: a request names the source, the kernel, the candidate and the
options; a backend answers with result records. Nothing in a request needs this machine's
files, compiler or GPU, so it crosses to a cluster as it is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..job.prepare import EvalOptions

Action = Literal["evaluate", "confirm"]  # confirm: with the sanitizers on a verified candidate


@dataclass(frozen=True)
class EvalRequest:
    source: str
    kernel: str
    candidate: str | None = None  # None: the original alone (a baseline)
    options: EvalOptions = field(default_factory=EvalOptions)
    action: Action = "evaluate"
    timeout: float | None = None  # per job, on the GPU; None: the evaluator's own
