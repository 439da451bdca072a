"""What a generator sees in a round: the kernel, the GPU, the baseline and the history."""

from __future__ import annotations

import threading

from dataclasses import dataclass, field
from typing import Callable

from ..evaluator.records import EvalResult, GpuInfo, SizePlan
from ..kernels import Kernel
from ..specs import Spec
from ..evaluator.profile.profile import ProfileFacts
from .proposal import Proposal, Tried
from .workload import Workload


@dataclass
class RoundContext:
    kernel: Kernel
    kernel_text: str  # the kernel's definition with its @fsr block right above it
    spec: Spec
    spec_text: str  # the @fsr block as the user wrote (or fsr inferred) it
    bench: SizePlan  # the bench size, concretely
    gpu: GpuInfo
    baseline: EvalResult
    workload: Workload
    round: int
    rounds: int
    mode: str  # "fsr" or "staged"
    history: list[Tried] = field(default_factory=list)  # every candidate so far, oldest first
    seeds: list[Tried] = field(default_factory=list)  # the fastest verified so far, fastest first
    definition_text: str = ""  # the definition alone ('' : kernel_text has no spec block)
    declarations: str = ""  # device-side declarations between the @fsr block and the kernel in the file
    # A cheap look at candidates (bench size only, few repetitions), for generators that tune;
    # None where the bench cannot screen. Its results are never verdicts.
    screen: Callable[[list[Proposal]], list[EvalResult]] | None = None
    note: Callable[[str], None] | None = None  # a generator's progress line ("screened 48 configurations")
    deadline: float | None = None  # time.monotonic() by which the whole search should end
    reserve: float = 0.0  # seconds the round needs after its proposals (its best ones checked, a leader confirmed)
    cancel: threading.Event | None = None  # the search's cancel: a generator stops waiting when it is set
    profile: ProfileFacts | None = None  # profiler facts about the leader (from round 2 on)
    profile_note: str = ""  # why there are none, when profiling was attempted
    focus: str = ""  # a profile finding the user asked the search to address, from round 1 on
    screened_out: list[str] = field(default_factory=list)  # rewrites dropped as slower at their screening, by note
    launch_fixed: bool = False  # the program's launch cannot follow a new one (SearchConfig.launch_fixed)

    @property
    def definition(self) -> str:
        return self.definition_text or self.kernel_text

    @property
    def baseline_ms(self) -> float:
        t = self.baseline.original_time
        return t.median_ms if t else 0.0
