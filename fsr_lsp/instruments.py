"""What tests replace, as one value: the parts of a workflow that need the GPU, and the server's
slow steps.

Production leaves each one unset: Optimize, Profile and the timing on save then use the
evaluator's backend, and nothing is slowed. Tests pass stand-ins here (a scripted bench, a prover
that needs no GPU, a recorded profile, a scripted clock; seconds a slow step is made to take; a
probe told of each discovery and draft), through the constructor of the use case or of the
server, or the `main` of the server and of the CLI (`tests/doubles.py` is their test entry
point); nothing in the package reads a test switch from the environment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

STAND_IN_GPU = "stand-in GPU"  # the GPU a stand-in's results are recorded against


@dataclass(frozen=True)
class Instruments:
    bench: Callable[[], Any] | None = None  # () -> a search's Bench (search/outcome.py), in place of the GPU's
    prover: Callable[[str, str, str], Any] | None = None  # (text, kernel, draft) -> a draft's Proof
    profiler: Callable[[Any], Any] | None = None  # EvalRequest -> a line profile, as backend.profile gives
    timer: Callable[[Any], Any] | None = None  # EvalRequest -> the EvalResult of one re-timing on save
    large_seconds: float = 0.0  # the server: seconds a large body's decoding, or a large document's change, takes
    plan_seconds: float = 0.0  # the server: seconds planning a spec takes, where it runs
    probe: str = ""  # the server: "module:function" told of each discovery and draft (a path: it reaches the child)

    def stands_in_for_searches(self) -> bool:
        """Whether searches run without the GPU (a bench stands in): none is needed then."""
        return self.bench is not None


GPU = Instruments()  # the real thing
