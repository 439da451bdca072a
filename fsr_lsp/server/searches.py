"""Background searches started from the editor: one thread each (never pygls's pool), progress
reported back onto the event loop, cancellable from the client."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..drafting.cache import ProofCache
from ..drafting.placement import place_spec
from ..drafting.draft import Draft
from ..drafting.proof import Proof, prove_with
from ..evaluator import EvalOptions, Evaluator
from ..evaluator.backends.ray_cluster import RayBackend, ray_missing
from ..evaluator.backends.local import LocalBackend, local_gpus
from ..evaluator.support import gpu_support_missing, load
from ..llmclient import LLMConfig
from ..search import HistoryStore, Progress, SearchOutcome, run_search
from ..search.generators.tuner.generator import BuiltinGenerator
from ..search.generators.llm import LLMGenerator
from ..search.gpu_bench import GpuBench
from .settings import Settings

STAND_IN = "FSR_LSP_BENCH"  # "module:factory" of an evaluator stand-in (tests only)
PROVER = "FSR_LSP_PROVER"  # "module:function" proving drafts without a GPU (tests only)


@dataclass
class SearchJob:
    uri: str
    kernel: str
    searched_text: str  # the document when the search started: an edit applies only if its kernel is unchanged
    token: str
    cancel: threading.Event = field(default_factory=threading.Event)
    outcome: SearchOutcome | None = None
    thread: threading.Thread | None = None
    draft: str | None = None  # a drafted spec block: proven on the original first, then searched with
    proof: Proof | None = None
    ask_model: Callable[[LLMConfig], Draft] | None = None  # no draft from a launch: the model drafts one

    @property
    def key(self) -> tuple[str, str]:
        return self.uri, self.kernel


def new_token() -> str:
    """A fresh work-done progress token (pygls never forgets one)."""
    return f"fsr-{uuid.uuid4().hex}"


class Searches:
    """The searches of one server; knows nothing of LSP (the server passes callbacks)."""

    def __init__(self) -> None:
        self.running: dict[tuple[str, str], SearchJob] = {}
        self.finished: dict[tuple[str, str], SearchJob] = {}
        self._local: LocalBackend | None = None
        self._ray: RayBackend | None = None
        self._evaluator_lock = threading.Lock()

    def unavailable(self, settings: Settings | None = None) -> str:
        """Why searches cannot run here, or ''. With the ray backend this machine needs Ray,
        not CUDA: the cluster's GPU machines compile and run."""
        if os.environ.get(STAND_IN):
            return ""
        if settings is not None and settings.evaluator_backend == "ray":
            missing = ray_missing()
            return f"fsr: {missing}" if missing else ""
        missing = gpu_support_missing("searches need")
        return f"fsr: {missing}" if missing else ""

    def start(self, uri: str, kernel: str, text: str, path: Path, workspace: Path, settings: Settings,
              on_progress: Callable[[SearchJob, Progress], None], on_done: Callable[[SearchJob], None],
              draft: str | None = None, ask_model: Callable[[LLMConfig], Draft] | None = None,
              token: str | None = None) -> SearchJob:
        job = SearchJob(uri, kernel, text, token=token or new_token(), draft=draft, ask_model=ask_model)
        self.running[job.key] = job
        loop = asyncio.get_running_loop()

        def work() -> None:
            try:
                job.outcome = self._search(job, path, workspace, settings,
                                           lambda p: loop.call_soon_threadsafe(on_progress, job, p))
            except Exception as e:  # a bug of ours must not take the server down
                job.outcome = SearchOutcome("failed", f"internal error: {type(e).__name__}: {e}")
            loop.call_soon_threadsafe(self._done, job, on_done)

        job.thread = threading.Thread(target=work, name=f"fsr-search-{kernel}", daemon=True)
        job.thread.start()
        return job

    def cancel(self, uri: str, kernel: str) -> bool:
        job = self.running.get((uri, kernel))
        if job is None:
            return False
        job.cancel.set()
        if self._local is not None:
            self._local.cancel()
        return True

    def shutdown(self) -> None:
        for job in list(self.running.values()):
            job.cancel.set()
        if self._local is not None:
            self._local.cancel()
            self._local.close()
        if self._ray is not None:
            self._ray.close()

    def _done(self, job: SearchJob, on_done: Callable[[SearchJob], None]) -> None:
        self.running.pop(job.key, None)
        self.finished[job.key] = job
        on_done(job)

    def _search(self, job: SearchJob, path: Path, workspace: Path, settings: Settings,
                report: Callable[[Progress], None]) -> SearchOutcome:
        config = settings.search_config()
        if job.ask_model is not None and config.llm.configured:
            report(Progress(0, config.rounds, 0, 0, None, f"asking {config.llm.model} to draft the @fsr spec"))
            drafted = job.ask_model(config.llm)
            if drafted.text is None:
                return SearchOutcome("failed", f"{job.kernel} has no @fsr spec and none could be drafted: "
                                               + "; ".join(drafted.problems))
            job.draft = drafted.text
        if job.draft is not None:
            job.proof = self._prove(job, path, workspace, settings, report)
            if not job.proof.proven:
                return SearchOutcome("failed", f"the drafted @fsr spec of {job.kernel} failed its proof: "
                                               f"{job.proof.message}")
            job.draft = job.proof.spec  # with the tolerance the proof may have added
            job.searched_text = place_spec(job.searched_text, job.kernel, job.draft).text
            if job.cancel.is_set():
                return SearchOutcome("cancelled", "cancelled after the proof of the drafted spec")
        generator = LLMGenerator(config.llm) if config.llm.configured else BuiltinGenerator()
        with HistoryStore(workspace, secrets=[os.environ.get(config.llm.api_key_env, "")]) as store:
            return run_search(job.searched_text, str(path), job.kernel, config, self._bench(job, path, settings),
                              generator, store, report, job.cancel)

    def _prove(self, job: SearchJob, path: Path, workspace: Path, settings: Settings,
               report: Callable[[Progress], None]) -> Proof:
        """The draft's proof on the original kernel (cached per kernel text and GPU in .fsr/)."""
        rounds = settings.search_config().rounds

        def stage(message: str) -> None:
            report(Progress(0, rounds, 0, 0, None, message))

        assert job.draft is not None
        stand_in = os.environ.get(PROVER)
        if stand_in:
            return load(stand_in)(job.searched_text, job.kernel, job.draft)
        with ProofCache(workspace) as cache:
            return prove_with(self._backend(settings), job.searched_text, job.kernel, job.draft,
                              self._options(path, settings), cache=cache, on_stage=stage)

    def _options(self, path: Path, settings: Settings) -> EvalOptions:
        return EvalOptions(flags=settings.compiler_flags, include_dirs=(str(path.parent), *settings.include_paths),
                           nvcc=settings.compiler_nvcc or None)

    def _bench(self, job: SearchJob, path: Path, settings: Settings) -> Any:
        stand_in = os.environ.get(STAND_IN)
        if stand_in:
            return load(stand_in)()
        return GpuBench(self._backend(settings), job.searched_text, job.kernel, self._options(path, settings),
                        cancel=job.cancel)

    def remote(self, settings: Settings) -> RayBackend | None:
        """The cluster, for work this machine cannot do (an on-save compile without nvcc)."""
        if settings.evaluator_backend != "ray" or ray_missing():
            return None
        return self._backend(settings)

    def _backend(self, settings: Settings) -> Any:
        """This machine's GPU(s), or the Ray cluster the settings name (one connection per address)."""
        if settings.evaluator_backend != "ray":
            return self._local_backend(settings)
        with self._evaluator_lock:
            if self._ray is None or self._ray.address != settings.evaluator_address:
                self._ray = RayBackend(settings.evaluator_address)
            return self._ray

    def _local_backend(self, settings: Settings) -> LocalBackend:
        """One worker per local GPU for every search and proof of this server; a round's
        candidates fan out over them."""
        gpus = local_gpus(settings.gpus) if settings.gpus else [settings.gpu]
        with self._evaluator_lock:
            if self._local is None or [e.device_index for e in self._local.evaluators] != gpus:
                if self._local is not None:
                    self._local.close()
                self._local = LocalBackend([Evaluator(i) for i in gpus])
            return self._local
