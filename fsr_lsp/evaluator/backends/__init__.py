"""Where GPU work runs: one interface (`Backend`), two kinds behind it, one factory.

`local`: this machine's GPUs, an evaluator worker process each (local.py). `service`: the same
GPUs through one warm service shared by the editor and every command (service_client.py). `ray`:
the GPUs of a Ray cluster, an actor each (ray_cluster.py). Requests and results are plain data
(request.py); work of the layers above runs on a backend's GPU by registered name (calls.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Literal, Protocol, runtime_checkable

from ..profile.profile import Profiled
from ..records import EvalResult, GpuInfo
from ..support import gpu_support_missing
from .calls import REMOTE_CALLS, remote_call
from .local import LocalBackend, gpu_workers, local_gpus
from .ray_cluster import RayBackend, ray_missing
from .request import EvalRequest
from .service_client import ServiceBackend


@runtime_checkable
class Backend(Protocol):
    """GPUs that take requests and answer with records; every method is safe to call from the
    search's thread while another thread cancels. A backend whose `evaluate` also takes calls
    from two threads at once says so with a `concurrent = True` attribute (the search then
    confirms its first win beside its round: search/early_confirm.py)."""

    def start(self) -> GpuInfo:
        """Start the workers if needed; the first GPU's facts. Raises EvaluatorUnavailable."""

    @property
    def gpus(self) -> int:
        """How many GPUs a round's requests fan out over."""

    def evaluate(self, requests: list[EvalRequest], cancel: threading.Event | None = None,
                 on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
        """A result per request, in their order, each also handed to `on_result(index, result)`
        as it arrives; never raises for what a candidate does."""

    def profile(self, request: EvalRequest, lines: bool = False, cancel: threading.Event | None = None) -> Profiled:
        """Nsight Compute facts about one kernel at the bench size (and, with `lines`, its
        per-line counters and ncu's rules), or why there are none; `cancel` stops a line
        profile where the backend can (a cluster's finishes, its result unused)."""

    def call(self, name: str, payload: dict, timeout: float | None = None) -> dict:
        """The registered call `name` (calls.py) where the GPU is."""

    def cancel(self) -> None:
        """Stop what runs now."""

    def close(self) -> None:
        """Stop the workers."""


@dataclass(frozen=True)
class BackendChoice:
    """Which backend, from the settings: `local` GPUs (`gpus`: "0", "0,1" or "all") or a `ray`
    cluster at `address` (auto, ray://host:10001, local)."""

    kind: Literal["local", "service", "ray"] = "local"
    gpus: str = "0"
    address: str = "auto"
    timeout: float = 120.0  # per job, before a hung kernel is killed
    idle: float = 600.0  # with `service`: seconds without a request before the service exits


def backend_missing(choice: BackendChoice, needs: str = "GPU evaluation needs") -> str:
    """Why this machine cannot use the chosen backend ('' when it can)."""
    return ray_missing() if choice.kind == "ray" else gpu_support_missing(needs)


def make_backend(choice: BackendChoice) -> Backend:
    """The one place that chooses between the local and the Ray backend. Raises ValueError
    for a `gpus` that is no index, list or `all`."""
    if choice.kind == "ray":
        return RayBackend(choice.address, timeout=choice.timeout)
    if choice.kind == "service":
        local_gpus(choice.gpus)  # a bad GPU list is said here, not by the service
        return ServiceBackend(choice.gpus, choice.timeout, choice.idle)
    return LocalBackend(gpu_workers(local_gpus(choice.gpus), choice.timeout))


__all__ = ["Backend", "BackendChoice", "EvalRequest", "LocalBackend", "REMOTE_CALLS", "RayBackend", "backend_missing",
           "local_gpus", "make_backend", "ray_missing", "remote_call"]
