"""This machine's GPUs as a backend: one evaluator worker process per GPU; candidates compile
in parallel on the CPU cores while the GPUs run, one job at a time per GPU."""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import shutil
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ..api import evaluate as evaluate_one
from ..api import JobControl, confirm_together, run_prepared
from ..worker.gpu_gate import gate
from ..sanitize.sanitizer import TOOLS, Prewarm
from ..worker.worker_client import Evaluator, EvaluatorUnavailable
from ..job.prepare import prepare
from ..profile.profile import Profiled, profile
from ..profile.profile_lines import profile_lines
from ..records import KEEP_TIMED_MS, EvalResult, GpuInfo
from ..support import predicted_arch
from .calls import remote_call
from .request import EvalRequest

log = logging.getLogger("fsr_lsp.evaluator")

class LocalBackend:
    """This machine's GPUs: candidates compile in parallel on the CPU cores, then run on the
    GPUs, one job at a time per GPU, each in its own evaluator worker process."""

    concurrent = True  # `evaluate` from two threads at once: their jobs take turns on each worker (its lock)

    def __init__(self, evaluators: Evaluator | list[Evaluator], workers: int = 0) -> None:
        """`evaluators`: one or more a GPU (gpu_workers): a GPU's first takes every request; the
        others, once up, take requests of kernels whose original is quick to run again."""
        self.evaluators = evaluators if isinstance(evaluators, list) else [evaluators]
        self.evaluator = self.evaluators[0]  # profiles and single requests
        self.firsts = _first_of_each_gpu(self.evaluators)
        self._starting: set[int] = set()  # the second workers being started in the background (their ids)
        self.workers = workers or os.cpu_count() or 2
        self._warm: dict[int, Prewarm] = {}  # per GPU: sanitizer children loaded for the next confirmation
        self._warm_lock = threading.Lock()
        self._started_all = False
        self._original_ms: dict[tuple[str, str], float] = {}  # per kernel (its source's digest, its name)

    def start(self) -> GpuInfo:
        """Every GPU's first worker, started side by side: each start makes a CUDA context and
        measures the GPU's bandwidth, and a search waits for the slowest, not for their sum."""
        if len(self.firsts) == 1:
            return self.evaluator.start()
        with ThreadPoolExecutor(max_workers=len(self.firsts)) as pool:
            infos = list(pool.map(lambda e: e.start(), self.firsts))
        return infos[0]

    def _start_every_worker_soon(self) -> None:
        """The first job needs one GPU, the next round all: the other workers start in the
        background meanwhile (seconds each), not after the first job. A start that fails here
        fails again, with its reason, where its worker is used."""
        if self._started_all or len(self.evaluators) == 1:
            return
        self._started_all = True
        for e in self.evaluators:
            threading.Thread(target=_start_quietly, args=(e,), daemon=True,
                             name=f"fsr-start-worker-{e.device_index}").start()

    @property
    def gpus(self) -> int:
        return len(self.firsts)

    def _second_may_take(self, requests: list[EvalRequest]) -> bool:
        """Whether a GPU's second worker may take these: its first job of a kernel runs the
        original again (its outputs per input set, its timed runs where they are kept), which only
        a quick original makes worth it; unknown (no baseline seen) counts as quick."""
        return all(self._original_ms.get(_kernel_key(r), 0.0) < KEEP_TIMED_MS for r in requests)

    def _start_in_background(self, evaluator: Evaluator) -> None:
        with self._warm_lock:
            if id(evaluator) in self._starting:
                return
            self._starting.add(id(evaluator))

        def start() -> None:
            _start_quietly(evaluator)
            with self._warm_lock:
                self._starting.discard(id(evaluator))

        threading.Thread(target=start, daemon=True, name=f"fsr-start-worker-{evaluator.device_index}").start()

    def _note_original(self, request: EvalRequest, result: EvalResult) -> None:
        if request.candidate is None and result.original_time is not None:
            self._original_ms[_kernel_key(request)] = result.original_time.median_ms

    def compile_ahead(self, requests: list[EvalRequest]) -> threading.Thread | None:
        """Compile these on a thread while the search measures the original (and, where the worker
        is cold, while it starts: about 4 s of torch and CUDA), for the worker's arch, or the one
        nvidia-smi predicts before it is up: their cubins land in the compile cache the real
        requests read (one that comes mid-compile waits for it: cubin_cache.building), so the
        first candidates wait for no compiler. Nothing where the arch cannot be told; a failure
        here is the real request's to report."""
        if not requests:
            return None
        up = self.evaluator.gpu.arch if getattr(self.evaluator, "alive", False) and self.evaluator.gpu else ""
        arch = ""

        def one(r: EvalRequest) -> None:
            try:
                prepare(r.source, r.kernel, r.candidate, arch, r.options)
            except Exception:  # noqa: BLE001 - said again, with its reason, when the request runs
                log.debug("compiling ahead failed", exc_info=True)

        def run() -> None:
            nonlocal arch
            arch = up or predicted_arch(self.evaluator.device_index) or ""  # nvidia-smi: off the search's thread
            if not arch:
                return
            with ThreadPoolExecutor(max_workers=min(self.workers, len(requests))) as pool:
                list(pool.map(one, requests))
            log.debug("compiled ahead: %d requests", len(requests))

        thread = threading.Thread(target=run, daemon=True, name="fsr-compile-ahead")
        thread.start()
        return thread

    def evaluate(self, requests: list[EvalRequest], cancel: threading.Event | None = None,
                 on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
        cancel = cancel or threading.Event()
        confirms = [i for i, r in enumerate(requests) if r.action == "confirm"]
        if len(confirms) > 1:
            return self._confirming_together(requests, confirms, cancel, on_result)
        self._start_every_worker_soon()
        log.debug("backend: %d requests (%s)", len(requests), ", ".join(sorted({r.action for r in requests})))
        plain = [i for i, r in enumerate(requests) if r.action == "evaluate" and r.candidate is not None]
        try:
            arch = self.evaluator.start(cancel).arch if plain else ""
        except EvaluatorUnavailable as e:
            status = "cancelled" if cancel.is_set() else "unavailable"
            return [EvalResult(kernel=r.kernel, status=status, message=str(e)) for r in requests]  # type: ignore[arg-type]
        if plain:  # a search is under way: its leaders' sanitizers will be wanted, let them load now
            self.keep_warm()
        results: list[EvalResult | None] = [None] * len(requests)
        pending = queue.SimpleQueue()
        for i in range(len(requests)):
            pending.put(i)
        # Every candidate compiles on the CPU cores while the GPUs verify and time the ones ready:
        # the GPU waits only for the first compile.
        compile_pool = ThreadPoolExecutor(max_workers=min(self.workers, max(len(plain), 1)))
        try:
            prepared = {i: compile_pool.submit(prepare, requests[i].source, requests[i].kernel, requests[i].candidate,
                                               arch, requests[i].options) for i in plain}

            seconds_may = self._second_may_take(requests)

            def drain(evaluator: Evaluator) -> None:
                if evaluator not in self.firsts and not (seconds_may and evaluator.alive):
                    if seconds_may:
                        self._start_in_background(evaluator)  # not up (a restart): for the next batch
                    return
                while True:
                    try:
                        i = pending.get_nowait()
                    except queue.Empty:
                        return
                    r = requests[i]
                    if cancel.is_set():
                        results[i] = EvalResult(kernel=r.kernel, status="cancelled", message="search cancelled")
                    elif i in prepared and _arch(evaluator, cancel) == arch:
                        results[i] = run_prepared(evaluator, prepared[i].result(),
                                                  control=JobControl(timeout=r.timeout, cancel=cancel))
                    else:
                        confirm = r.action == "confirm"
                        control = JobControl(r.timeout, cancel=cancel,
                                             prewarm=self._take_warm(evaluator) if confirm else None)
                        results[i] = evaluate_one(evaluator, r.source, r.kernel, r.candidate, r.options,
                                                  sanitize_winner=confirm, control=control)
                    self._note_original(r, results[i])  # type: ignore[arg-type]
                    if on_result is not None:
                        on_result(i, results[i])  # type: ignore[arg-type]

            with ThreadPoolExecutor(max_workers=len(self.evaluators)) as gpu_pool:
                list(gpu_pool.map(drain, self.evaluators))  # re-raises what a worker thread raised
        finally:
            compile_pool.shutdown(wait=not cancel.is_set(), cancel_futures=True)  # a cancel waits for no compile
        log.debug("backend: %d requests done", len(requests))
        assert all(r is not None for r in results)  # every request was drained
        return results  # type: ignore[return-value]

    def _confirming_together(self, requests: list[EvalRequest], confirms: list[int], cancel: threading.Event,
                             on_result: Callable[[int, EvalResult], None] | None) -> list[EvalResult]:
        """Several confirmations (a round's leaders) on the first GPU, their sanitizers in one
        child per tool (api.confirm_together); any other requests as usual, first."""
        results: list[EvalResult | None] = [None] * len(requests)
        others = [i for i in range(len(requests)) if i not in confirms]
        if others:
            said = (lambda k, r: on_result(others[k], r)) if on_result is not None else None
            for i, r in zip(others, self.evaluate([requests[i] for i in others], cancel, said)):
                results[i] = r
        asked = [requests[i] for i in confirms]
        together = confirm_together(self.evaluator, [(r.source, r.kernel, r.candidate or "", r.options) for r in asked],
                                    JobControl(asked[0].timeout, cancel=cancel, prewarm=self._take_warm(self.evaluator)))
        for i, result in zip(confirms, together):
            results[i] = result
            if on_result is not None:
                on_result(i, result)
        return results  # type: ignore[return-value]

    def evaluate_one(self, request: EvalRequest, sanitize: bool = False, on_stage: Callable[[str], None] | None = None,
                     cancel: threading.Event | None = None) -> EvalResult:
        """One request on the first GPU, each stage said as it starts (`fsr eval`), the
        sanitizers after a verified candidate where `sanitize`."""
        return evaluate_one(self.evaluator, request.source, request.kernel, request.candidate, request.options,
                            sanitize_winner=sanitize, control=JobControl(request.timeout, on_stage, cancel))

    def profile(self, request: EvalRequest, lines: bool = False, cancel: threading.Event | None = None) -> Profiled:
        try:
            arch = self.start().arch
        except EvaluatorUnavailable as e:
            return Profiled(None, str(e))
        prepared = prepare(request.source, request.kernel, request.candidate, arch, request.options)
        if prepared.job is None:
            return Profiled(None, f"not profiled: {prepared.result.message if prepared.result else 'no job'}")
        who = "candidate" if request.candidate is not None else "original"
        with gate(self.evaluator.device_index).exclusive():  # ncu times what it replays: beside nothing (checks share the GPU)
            if lines:
                return profile_lines(prepared.job, self.evaluator.device_index, who, cancel=cancel)
            return profile(prepared.job, self.evaluator.device_index, who)

    def keep_warm(self, wait: bool = False) -> None:
        """Sanitizer children loaded, their contexts made, for each GPU's next confirmation;
        `wait`: until they are (a bench that measures a round as after a search's first)."""
        for e in self.evaluators:
            self._keep_warm(e)
        if wait:
            with self._warm_lock:
                warm = list(self._warm.values())
            for w in warm:
                if w.contexts is not None:
                    w.contexts.join()

    def _keep_warm(self, evaluator: Evaluator) -> None:
        """Sanitizer children loaded and waiting for this GPU's next confirmation."""
        with self._warm_lock:
            warm = self._warm.get(evaluator.device_index)
            if warm is None or not warm.alive:
                if warm is not None:
                    warm.close()
                self._warm[evaluator.device_index] = Prewarm(TOOLS, evaluator.device_index)

    def _take_warm(self, evaluator: Evaluator) -> Prewarm | None:
        with self._warm_lock:
            warm = self._warm.pop(evaluator.device_index, None)
        self._keep_warm(evaluator)  # the next confirmation's, loading while this one runs
        return warm

    def call(self, name: str, payload: dict, timeout: float | None = None) -> dict:
        """The registered call `name` (calls.py) on this machine's first GPU."""
        return remote_call(name)(self, payload)

    def cancel(self) -> None:
        """Stop the jobs running now (the search's own cancel event stops the rest)."""
        for e in self.evaluators:
            e.cancel()

    def close_warm(self) -> None:
        """Kill the sanitizer children kept warm for the next confirmations (the workers stay)."""
        with self._warm_lock:
            warm, self._warm = list(self._warm.values()), {}
        for w in warm:
            w.close()

    def close(self) -> None:
        self.close_warm()
        for e in self.evaluators:
            e.close()


def gpu_workers(indices: list[int], timeout: float, cancel_grace: float = 0.0, per_gpu: int = 2) -> list[Evaluator]:
    """`per_gpu` workers a GPU: a job's checks share the GPU and only its timed runs have it
    alone (gpu_gate.py), so a second worker checks one candidate while the first times another;
    the first has a spare for its restarts."""
    return [Evaluator(i, timeout=timeout, cancel_grace=cancel_grace, spare=n == 0)
            for i in indices for n in range(per_gpu)]


def _first_of_each_gpu(evaluators: list[Evaluator]) -> list[Evaluator]:
    firsts: dict[int, Evaluator] = {}
    for e in evaluators:
        firsts.setdefault(e.device_index, e)
    return list(firsts.values())


def _kernel_key(request: EvalRequest) -> tuple[str, str]:
    return hashlib.sha256(request.source.encode()).hexdigest(), request.kernel


def _start_quietly(evaluator: Evaluator) -> None:
    try:
        evaluator.start()
    except EvaluatorUnavailable as e:
        log.debug("worker %d: did not start in the background: %s", evaluator.device_index, e)


def _arch(evaluator: Evaluator, cancel: threading.Event) -> str:
    """The GPU's arch, or '' when its worker cannot start (the request then says why)."""
    try:
        return evaluator.start(cancel).arch
    except EvaluatorUnavailable:
        return ""


def local_gpus(spec: str | int) -> list[int]:
    """GPU indices from `0`, `0,2` or `all` (every GPU nvidia-smi lists; 0 when it cannot tell)."""
    text = str(spec).strip()
    if text != "all":
        return [int(x) for x in text.split(",") if x.strip()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return list(range(len([x for x in visible.split(",") if x.strip()]))) or [0]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return [0]
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return [0]
    count = sum(1 for line in out.splitlines() if line.startswith("GPU "))
    return list(range(count)) or [0]
