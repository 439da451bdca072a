"""The GPUs of a Ray cluster as one backend: edit on a machine without CUDA, measure on shared GPUs.

One actor per cluster GPU (`num_gpus=1`) holds a local backend: its own evaluator worker process,
which compiles with that machine's toolkit and kills a hung candidate within its timeout. A
round's requests fan out over the actors. Requests and results cross as plain data (serde),
and each result names its GPU (model, UUID) and host. The original and the candidate of one
request are timed in the same job on the same GPU, so a speedup never mixes GPUs.

An actor that dies (its node or process gone) is restarted by Ray, and its request is sent
again, to whichever actor is free; a request that kills two workers is recorded as crashed. A
request still running long after its own timeout has its actor killed and restarted (the
evaluator inside should have stopped it first). Cancel cancels the requests still queued or
running.
"""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from typing import Any, Callable

from ..worker.worker_client import EvaluatorUnavailable
from ..profile.profile import Profiled
from ..records import EvalResult, GpuInfo
from ..worker.serde import from_data, to_data
from ..support import load
from .calls import remote_call
from .request import EvalRequest

RAY_MISSING = "the ray backend needs Ray on this machine: pip install 'fsr-lsp[ray]'"
DEFAULT_FACTORY = f"{__name__}:local_backend_on_this_gpu"
ATTEMPTS = 2  # a request that kills this many workers is a crash, not bad luck
GRACE_SECONDS = 60.0  # past a request's own timeout before its actor is killed
RESTART_WAIT = 60.0  # how long a worker that Ray is restarting is waited for by a single call
SANITIZER_SECONDS = 900.0  # a confirmation also runs compute-sanitizer tools, each with its own limit


def ray_missing() -> str:
    """'' when Ray can be imported here, else what to install."""
    return "" if importlib.util.find_spec("ray") else RAY_MISSING


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EvaluatorUnavailable(RAY_MISSING) from None
    return ray


def local_backend_on_this_gpu() -> Any:
    """In an actor: Ray has made its one GPU device 0 (CUDA_VISIBLE_DEVICES)."""
    from ..worker.worker_client import Evaluator
    from .local import LocalBackend

    return LocalBackend(Evaluator(0))


class GpuActor:
    """Runs in the cluster; made a Ray actor class by RayBackend (Ray is imported lazily)."""

    def __init__(self, factory: str, calls: dict[str, str] | None = None) -> None:
        self.backend = load(factory)()
        self.calls = calls or {}

    def start(self) -> dict:
        import socket

        info = self.backend.start()
        info.host = info.host or socket.gethostname()
        return to_data(info)

    def evaluate(self, request: dict) -> dict:
        result = self.backend.evaluate([from_data(EvalRequest, request)])[0]
        return to_data(result)

    def evaluate_many(self, requests: list[dict]) -> list[dict]:
        """Several requests as one batch to this GPU's backend: a round's confirmations, whose
        sanitizers the local backend runs in one child per tool."""
        return [to_data(r) for r in self.backend.evaluate([from_data(EvalRequest, d) for d in requests])]

    def profile(self, request: dict, lines: bool = False) -> dict:
        return to_data(self.backend.profile(from_data(EvalRequest, request), lines))

    def call(self, name: str, payload: dict) -> dict:
        """The registered call `name` (calls.py, or the backend's own `calls`) on this GPU's backend."""
        return remote_call(name, self.calls)(self.backend, payload)


class RayBackend:
    def __init__(self, address: str = "auto", *, factory: str = DEFAULT_FACTORY, timeout: float = 120.0,
                 init: dict | None = None, max_gpus: int | None = None, start_timeout: float = 300.0,
                 calls: dict[str, str] | None = None) -> None:
        """`calls`: remote calls beside calls.py's, by name and import path (a test's stand-ins);
        each worker is given them."""
        self.address = address
        self.calls = calls or {}
        self.start_timeout = start_timeout  # actors wait for free GPUs, and for a worker that can import us
        self.max_gpus = max_gpus  # None: every GPU of the cluster
        self.factory = factory
        self.timeout = timeout
        self._init = init or {}
        self._actors: list[Any] = []
        self._infos: list[GpuInfo] = []
        self._lock = threading.Lock()
        self.resubmitted = 0  # requests sent again after a worker died

    # ------------------------------------------------------------ lifecycle

    def start(self) -> GpuInfo:
        with self._lock:
            if not self._actors:
                self._connect()
            return self._infos[0]

    @property
    def gpus(self) -> int:
        self.start()
        return len(self._actors)

    @property
    def infos(self) -> list[GpuInfo]:
        self.start()
        return list(self._infos)

    def cancel(self) -> None:
        """Nothing to do: `evaluate` cancels its requests when the search's cancel event is set."""

    def close(self) -> None:
        if not self._actors:
            return
        ray = import_ray()
        for actor in self._actors:
            ray.kill(actor)
        self._actors, self._infos = [], []

    def _connect(self) -> None:
        ray = import_ray()
        if not ray.is_initialized():
            unreachable = unreachable_address(self.address)
            if unreachable:  # said at once: Ray's own client retries for about 30 s first
                raise EvaluatorUnavailable(f"cannot reach the Ray cluster at {self.address}: {unreachable}")
            try:
                ray.init(address=None if self.address == "local" else self.address, ignore_reinit_error=True,
                         logging_level="ERROR", log_to_driver=False, **self._init)
            except Exception as e:  # ConnectionError, a bad address, a version mismatch
                raise EvaluatorUnavailable(f"cannot reach the Ray cluster at {self.address}: {e}") from None
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if gpus < 1:
            raise EvaluatorUnavailable(f"the Ray cluster at {self.address} offers no GPU "
                                       "(start its nodes with GPUs: `ray start --head` on a GPU machine)")
        if self.max_gpus:
            gpus = min(gpus, self.max_gpus)
        actor_class = ray.remote(num_gpus=1, max_restarts=-1, max_task_retries=0)(GpuActor)
        actors = [actor_class.remote(self.factory, self.calls) for _ in range(gpus)]
        try:
            infos = [from_data(GpuInfo, d)
                     for d in ray.get([a.start.remote() for a in actors], timeout=self.start_timeout)]
        except Exception as e:
            for a in actors:
                ray.kill(a)
            if isinstance(e, ray.exceptions.GetTimeoutError):
                raise EvaluatorUnavailable(
                    f"no GPU worker of the Ray cluster at {self.address} started within {self.start_timeout:.0f} s: "
                    "its GPUs may all be taken, or its Python cannot import ray and fsr_lsp "
                    "(install fsr-lsp there, or put it on the runtime_env's PYTHONPATH)") from None
            raise EvaluatorUnavailable(f"the Ray cluster's GPU workers cannot evaluate: {_first_line(e)}") from None
        self._actors, self._infos = actors, infos

    # ------------------------------------------------------------ work

    def evaluate(self, requests: list[EvalRequest], cancel: threading.Event | None = None,
                 on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
        """Every request on some GPU of the cluster, at most one task per GPU at a time; a
        round's confirmations shared out as batches, one per GPU (`batches`); results in the
        order of the requests."""
        try:
            ray = import_ray()
            self.start()
        except EvaluatorUnavailable as e:
            return [EvalResult(kernel=r.kernel, status="unavailable", message=str(e)) for r in requests]
        cancel = cancel or threading.Event()
        results: list[EvalResult | None] = [None] * len(requests)
        queue = batches(requests, len(self._actors))
        attempts = [0] * len(requests)
        idle = list(range(len(self._actors)))
        running: dict[Any, tuple[list[int], int, float]] = {}  # ref -> (requests, actor, started)
        reviving: dict[Any, int] = {}  # ping ref -> actor whose worker died, until it answers again
        while queue or running:
            if cancel.is_set():
                for ref in running:
                    ray.cancel(ref)
                for i in [i for unit in queue for i in unit] + [i for unit, _, _ in running.values() for i in unit]:
                    results[i] = EvalResult(kernel=requests[i].kernel, status="cancelled", message="search cancelled")
                break
            while queue and idle:
                unit, a = queue.pop(0), idle.pop(0)
                for i in unit:
                    attempts[i] += 1
                running[self._send(self._actors[a], [requests[i] for i in unit])] = (unit, a, time.monotonic())
            done, _ = ray.wait(list(running) + list(reviving), num_returns=1, timeout=0.2)
            for ref in done:
                if ref in reviving:
                    self._revived(ref, reviving, idle)
                    continue
                unit, a, _ = running.pop(ref)
                try:
                    answer = ray.get(ref)
                except Exception as e:  # the worker died under it (RayActorError, WorkerCrashedError, ...)
                    reviving[self._actors[a].start.remote()] = a  # Ray restarts it; it is used again once it answers
                    self._after_death(unit, e, attempts, queue, requests, results)
                    continue
                idle.append(a)
                for i, data in zip(unit, answer if isinstance(answer, list) else [answer]):
                    results[i] = from_data(EvalResult, data)
                    if on_result is not None:
                        on_result(i, results[i])
            self._kill_overdue(running, requests, results, reviving)
            if not idle and not running and queue and not reviving:
                break  # no worker left (cannot happen with restarts on; never spin)
        status, why = ("cancelled", "search cancelled") if cancel.is_set() else ("crashed", "no GPU worker could run it")
        return [r or EvalResult(kernel=q.kernel, status=status, message=why) for r, q in zip(results, requests)]  # type: ignore[arg-type]

    @staticmethod
    def _send(actor: Any, asked: list[EvalRequest]) -> Any:
        if len(asked) == 1:
            return actor.evaluate.remote(to_data(asked[0]))
        return actor.evaluate_many.remote([to_data(r) for r in asked])

    def _after_death(self, unit: list[int], error: BaseException, attempts: list[int], queue: list[list[int]],
                     requests: list[EvalRequest], results: list) -> None:
        """A worker died under `unit`: each of its requests is sent again alone (a batch's
        killer then names itself, and the death counts against none of them), unless it has
        killed ATTEMPTS workers alone: a crash."""
        for i in reversed(unit):
            if len(unit) > 1:
                attempts[i] -= 1
            if attempts[i] < ATTEMPTS:
                self.resubmitted += 1
                queue.insert(0, [i])
            else:
                results[i] = EvalResult(kernel=requests[i].kernel, status="crashed",
                                        message=f"the GPU worker died twice running this candidate: {_first_line(error)}")

    def _revived(self, ref: Any, reviving: dict[Any, int], idle: list[int]) -> None:
        ray = import_ray()
        a = reviving.pop(ref)
        try:
            ray.get(ref)
            idle.append(a)
        except Exception:  # the death was noticed only now: ask again (it answers once restarted)
            reviving[self._actors[a].start.remote()] = a

    def _kill_overdue(self, running: dict, requests: list[EvalRequest], results: list, reviving: dict) -> None:
        """A task far past its requests' own timeouts (a batch's, added up): the evaluator inside
        did not stop it, so its actor goes (Ray restarts it) and its requests are timeouts."""
        ray = import_ray()
        now = time.monotonic()
        for ref, (unit, a, started) in list(running.items()):
            asked = [requests[i] for i in unit]
            limit = sum(r.timeout or self.timeout for r in asked) + GRACE_SECONDS + \
                (SANITIZER_SECONDS if any(r.action == "confirm" for r in asked) else 0)
            if now - started > limit:
                running.pop(ref)
                ray.kill(self._actors[a], no_restart=False)
                reviving[self._actors[a].start.remote()] = a
                for i in unit:
                    results[i] = EvalResult(kernel=requests[i].kernel, status="timeout",
                                            message=f"no result within {limit:.0f} s on the cluster; its worker was restarted")

    def call(self, name: str, payload: dict, timeout: float | None = None) -> dict:
        """The registered call `name` (calls.py) on one GPU of the cluster (plain data both
        ways); raises EvaluatorUnavailable when no worker can run it."""
        self.start()
        try:
            return self._on_a_worker("call", name, payload, timeout=timeout)
        except Exception as e:
            raise EvaluatorUnavailable(f"the cluster's GPU worker failed: {_first_line(e)}") from None

    def _on_a_worker(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        """`method(*args)` on the first worker that takes it: one restarting after a death (Ray
        says it is unavailable for a moment) is waited for, a few seconds, then the next one."""
        ray = import_ray()
        deadline = time.monotonic() + RESTART_WAIT
        last: BaseException | None = None
        while True:
            for actor in self._actors:
                ref = getattr(actor, method).remote(*args)
                try:
                    return ray.get(ref, timeout=timeout)
                except Exception as e:
                    ray.cancel(ref)
                    if "unavailable" not in str(e).lower() and "restarting" not in str(e).lower():
                        raise
                    last = e
            if time.monotonic() > deadline:
                raise last  # type: ignore[misc]
            time.sleep(0.5)

    def profile(self, request: EvalRequest, lines: bool = False, cancel: threading.Event | None = None) -> Profiled:
        try:
            import_ray()  # Ray missing: said as every command says it
            self.start()
        except EvaluatorUnavailable as e:
            return Profiled(None, str(e))
        try:
            return from_data(Profiled, self._on_a_worker("profile", to_data(request), lines))
        except Exception as e:
            return Profiled(None, f"not profiled: the GPU worker failed: {_first_line(e)}")


def batches(requests: list[EvalRequest], gpus: int) -> list[list[int]]:
    """The requests as tasks, by index: each alone, but a round's confirmations (two or more)
    shared out over the GPUs, one batch each, as evenly as they go. Alone on GPUs of their own
    they run side by side; more of them than GPUs, a GPU confirms its share together (one
    sanitizer child per tool, api.confirm_together) rather than one after another."""
    confirms = [i for i, r in enumerate(requests) if r.action == "confirm"]
    if len(confirms) < 2:
        return [[i] for i in range(len(requests))]
    shares = min(len(confirms), max(gpus, 1))
    grouped = [confirms[k::shares] for k in range(shares)]
    return [[i] for i in range(len(requests)) if i not in confirms] + grouped


REACH_SECONDS = 3.0  # a cluster's address that accepts no connection in this time is unreachable


def unreachable_address(address: str) -> str:
    """Why nothing listens at a Ray address ('' when something does, or when the address names
    no host and port: `local`, `auto`). `ray://host:10001` is the client server, `host:6379`
    the head's GCS; a TCP connection is all that is tried."""
    target = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return ""
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS):
            return ""
    except socket.timeout:
        return f"no answer from {host}:{port} within {REACH_SECONDS:g} s"
    except OSError as e:
        return f"{host}:{port}: {e.strerror or e}"


def _first_line(e: BaseException) -> str:
    """The failure itself: a Ray task error's text starts with its task header and traceback."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        e = cause
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__
