"""The editor's searches: one thread each (never pygls's pool) running the Optimize use case,
progress reported back onto the event loop, cancellable from the client. No LSP here: the
server passes callbacks."""

from __future__ import annotations

import asyncio
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..failures import said
from .gpu_owner import GpuOwner

if TYPE_CHECKING:
    from ..search import Progress, SearchOutcome
    from ..workflows.optimize import KernelJob


def new_token() -> str:
    """A fresh work-done progress token (pygls never forgets one)."""
    return f"fsr-{uuid.uuid4().hex}"


@dataclass
class SearchJob:
    """A search the editor started: the use case's run, the document it is about, its token."""

    uri: str
    run: KernelJob
    token: str
    thread: threading.Thread | None = None

    @property
    def kernel(self) -> str:
        return self.run.kernel

    @property
    def key(self) -> tuple[str, str]:
        return self.uri, self.run.kernel

    @property
    def outcome(self) -> SearchOutcome | None:
        return self.run.outcome

    @property
    def searched_text(self) -> str:
        """The document the search ran on: an edit applies only if its kernel is unchanged."""
        return self.run.searched_text or self.run.text

    @property
    def draft(self) -> str | None:
        return self.run.draft

    @property
    def proof(self) -> Any:
        return self.run.proof

    @property
    def cancel(self) -> threading.Event:
        return self.run.cancel


class Searches:
    """The searches of one server, run on the server's GPU owner."""

    def __init__(self, gpu: GpuOwner) -> None:
        self.gpu = gpu
        self.running: dict[tuple[str, str], SearchJob] = {}
        self.planning: dict[tuple[str, str], threading.Event] = {}  # spec planned before the search: its cancel
        self.finished: dict[tuple[str, str], SearchJob] = {}

    def start(self, uri: str, run: KernelJob, on_progress: Callable[[SearchJob, Progress], None],
              on_done: Callable[[SearchJob], None], token: str | None = None) -> SearchJob:
        job = SearchJob(uri, run, token=token or new_token())
        self.running[job.key] = job
        loop = asyncio.get_running_loop()

        def work() -> None:
            try:
                self.gpu.optimizer.run(run, lambda p: loop.call_soon_threadsafe(on_progress, job, p))
            except Exception as e:  # a bug of ours must not take the server down
                from ..search import SearchOutcome

                run.outcome = SearchOutcome("failed", f"internal error: {said(e)}")
            loop.call_soon_threadsafe(self._done, job, on_done)

        job.thread = threading.Thread(target=work, name=f"fsr-search-{run.kernel}", daemon=True)
        job.thread.start()
        return job

    def busy(self, key: tuple[str, str]) -> bool:
        """A search of the kernel is running, or its spec is being planned."""
        return key in self.running or key in self.planning

    def cancel(self, uri: str, kernel: str) -> bool:
        planning = self.planning.get((uri, kernel))
        if planning is not None:  # no search yet: none is started
            planning.set()
            return True
        job = self.running.get((uri, kernel))
        if job is None:
            return False
        job.cancel.set()
        self.gpu.interrupt()
        return True

    def shutdown(self) -> None:
        for job in list(self.running.values()):
            job.cancel.set()
        self.gpu.close()

    def _done(self, job: SearchJob, on_done: Callable[[SearchJob], None]) -> None:
        self.running.pop(job.key, None)
        self.finished[job.key] = job
        on_done(job)
