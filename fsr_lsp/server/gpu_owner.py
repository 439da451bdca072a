"""The server's GPU, for every feature that needs it: Optimize's searches, Profile, the timing on
save, and the cluster for on-save compiles this machine cannot do. One owner, made when first
needed, so that no feature reaches the GPU through another's state."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..instruments import GPU, Instruments
from ..settings import Settings

if TYPE_CHECKING:
    from ..evaluator.backends import Backend
    from ..workflows.optimize import Optimizer


class GpuOwner:
    """The backends the settings choose (a worker per GPU, a warm service, or a cluster), behind
    the use cases that run on them; `instruments`: test doubles standing in for the GPU work."""

    def __init__(self, instruments: Instruments = GPU) -> None:
        self.instruments = instruments
        self._optimizer: Optimizer | None = None
        self._lock = threading.Lock()

    @property
    def optimizer(self) -> Optimizer:
        """The use cases' runner, made when first needed (it brings the search and the evaluator)."""
        with self._lock:
            if self._optimizer is None:
                from ..workflows.optimize import Optimizer

                self._optimizer = Optimizer(instruments=self.instruments)
            return self._optimizer

    def unavailable(self, settings: Settings, needs: str = "searches need") -> str:
        """Why the GPU work `needs` names cannot run here, or ''."""
        return self.optimizer.unavailable(settings, needs)

    def backend(self, settings: Settings) -> Backend:
        return self.optimizer.backend(settings)

    def remote(self, settings: Settings) -> Backend | None:
        """The cluster, for work this machine cannot do (an on-save compile without nvcc)."""
        if settings.evaluator_backend != "ray":
            return None
        from ..evaluator.backends import ray_missing

        if ray_missing():
            return None
        return self.optimizer.backend(settings)

    def interrupt(self) -> None:
        """What runs on the GPU for a cancelled job stops (a search's batch, its sanitizers)."""
        if self._optimizer is not None:
            self._optimizer.cancel()

    def close(self) -> None:
        if self._optimizer is not None:
            self._optimizer.cancel()
            self._optimizer.close()
