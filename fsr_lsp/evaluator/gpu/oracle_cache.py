"""The original's runs, made once per input set and kept by the worker for every later job of
the same original: its outputs at a size and seed (verification), and its timed runs on the
timing's fresh inputs (time and outputs of each). A 275 ms matrix product is otherwise run about
a dozen times again for every candidate, which is most of what a candidate's verification costs.

Kept only where they are worth the memory (the original's runs there took at least
WORTH_SECONDS) and only what a later job reads (outputs), within a byte budget of the GPU's
memory, the least recently used dropped first. The key holds everything the original's runs
depend on: its cubin, its double-precision build, the size's arguments and launch, the seed, the
defences that shape a run; a search that keeps its bench-size seed (EvalJob.bench_seed) meets
its own entries again, a job with fresh seeds never does. An entry is only ever made from runs
that passed the oracle's own checks, so a hit replays what the same runs would give."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..records import EvalJob, SizePlan
from .printed import Printed

WORTH_SECONDS = 0.05  # the original's runs for one entry took at least this long
BUDGET_SHARE = 1 / 16  # of the GPU's memory, for every entry together


@dataclass
class OracleRuns:
    """The original's runs on one input set at one size, as verification uses them."""

    expected: list[dict[str, Any]]  # each chained launch's outputs
    again: dict[str, Any]  # the second run's (the other poison)
    printed: list[Printed]
    printed_again: Printed
    spread: set[str]  # outputs whose two runs differ in rounding (judged by the double-precision run)
    double: dict[str, Any] | None  # the double-precision run's outputs, where there is one


@dataclass
class TimedOriginal:
    """The original's timed runs at the bench size, each on the timing's fresh inputs in order:
    how many warmed up, and per run (warm-up first) its outputs, and each timed run's ms by its
    events and by the kernel clock (None where that clock had none: gpu/kernel_clock.py)."""

    warmup: int
    outputs: list[dict[str, Any]]
    events_ms: list[float]
    kernel_ms: list[float | None]


class OracleCache:
    """Entries by key, least recently used dropped first beyond the byte budget."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self._entries: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self.used = 0
        self.hits = 0

    def get(self, key: str) -> Any:
        hit = self._entries.get(key)
        if hit is None:
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return hit[0]

    def put(self, key: str, value: Any, nbytes: int) -> bool:
        """Keep `value` if it fits the budget (older entries make room); False if it never can."""
        if nbytes > self.budget:
            return False
        old = self._entries.pop(key, None)
        if old is not None:
            self.used -= old[1]
        while self._entries and self.used + nbytes > self.budget:
            _, (_, size) = self._entries.popitem(last=False)
            self.used -= size
        self._entries[key] = (value, nbytes)
        self.used += nbytes
        return True

    def clear(self) -> None:
        self._entries.clear()
        self.used = 0

    def __len__(self) -> int:
        return len(self._entries)


def budget_for(memory_bytes: int) -> int:
    return int(memory_bytes * BUDGET_SHARE)


def tensor_bytes(value: Any) -> int:
    """Bytes of the tensors in a nest of dicts and lists."""
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    nbytes = getattr(value, "nbytes", None)
    return int(nbytes) if isinstance(nbytes, int) else 0


def run_key(kind: str, job: EvalJob, original: str, wide: str, plan: SizePlan, seed: int, **more: Any) -> str:
    """What the original's runs of `kind` depend on, hashed: its cubin (`original`, a digest) and
    double-precision build (`wide`), the size as the original is launched there (the
    candidate's launch left out), the seed, and the job's defences and `__constant__` tables."""
    size = dataclasses.asdict(plan)
    size.pop("candidate", None)
    data = {"kind": kind, "original": original, "wide": wide, "size": size, "seed": seed,
            "defences": dataclasses.asdict(job.defences), "constants": [dataclasses.asdict(c) for c in job.constants],
            **more}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode()).hexdigest()


def has_variables(kernel: Any) -> bool:
    """A module with `__device__` variables of its own: its runs are not kept (what they hold
    between launches is the program's, not the inputs')."""
    return kernel.state is not None and len(kernel.state) > 0


def cacheable(plan: SizePlan) -> bool:
    """Sizes whose inputs one seed decides: no texture (its contents live beside the plan) and no
    memory holding pointers (its outputs are compared as placed)."""
    return not any(a.kind == "texture" or a.links or a.pointers for a in plan.args)
