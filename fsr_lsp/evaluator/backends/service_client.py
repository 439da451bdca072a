"""This machine's GPUs through one warm service per user and GPU set (evaluator/service/): the
editor and every `fsr` command send it their requests, so the CUDA context, the compiled
originals and the original's kept runs (gpu/oracle_cache.py) outlive each command. Started on
first use as a detached process; it exits after an idle time. Reached through a Unix socket in
a folder only the user can enter, with a key only the user can read: never a network port.

Requests and results cross as plain data (worker/serde.py), as they do to a Ray cluster. A
service that dies takes no result with it (history stays in the workspace): the requests it held
come back "crashed", and the next call starts a new one."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import logging
import os
import secrets
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any, Callable, Iterator

from ... import __version__
from ...processes import MARK
from ..profile.profile import Profiled
from ..records import EvalResult, GpuInfo
from ..worker.serde import from_data, to_data
from ..worker.worker_client import EvaluatorUnavailable
from .request import EvalRequest

log = logging.getLogger("fsr_lsp.evaluator")
# What dialling a service that is gone (or going: killed, its socket not yet closed) raises: no
# socket, nobody listening, or a connection the dying process resets during the handshake
NO_SERVICE = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, BrokenPipeError, EOFError)

SERVICE_MODULE = "fsr_lsp.evaluator.service"
START_WAIT_S = 20.0  # for a new service's socket to accept (its workers start on first use, not here)
POLL_S = 0.05
GONE = "the GPU service went away while this ran; the next request starts a new one"
# the service's starter: starts it in a session of its own, then exits (the service is orphaned)
DETACH = ("import subprocess, sys; subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, start_new_session=True, "
          "close_fds=True)")


class ServiceUnsafe(RuntimeError):
    """The service's folder is not the user's own: nothing is sent through it."""


class ServiceDidNotStart(RuntimeError):
    """No service answered within START_WAIT_S of starting one."""


def service_dir() -> Path:
    """A folder only this user can enter: under XDG_RUNTIME_DIR where the session has one, else
    the temporary folder. Refused if someone else owns it or others can enter it."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = Path(runtime) / "fsr" if runtime and os.access(runtime, os.W_OK) else \
        Path(tempfile.gettempdir()) / f"fsr-{os.getuid()}"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = base.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ServiceUnsafe(f"{base} is not a folder of this user's own (mode {stat.filemode(info.st_mode)}): the GPU "
                            "service is not used (remove it, or set evaluator.backend to local)")
    return base


def socket_path(gpus: str, timeout: float) -> Path:
    """One service per GPU set and job timeout, and per build of fsr: a service started by another
    version (or by this checkout before an edit), another Python or another CUDA_VISIBLE_DEVICES
    is never sent work it would do the old way or on other GPUs."""
    name = "".join(c if c.isalnum() else "-" for c in gpus) or "0"
    return service_dir() / f"gpus-{name}-t{int(timeout)}-{_build_digest()}.sock"


@functools.lru_cache(maxsize=1)
def _build_digest() -> str:
    package = Path(__file__).resolve().parents[2]
    code = sorted((str(f.relative_to(package)), f.stat().st_mtime_ns) for f in package.rglob("*.py"))
    facts = (__version__, sys.executable, os.environ.get("CUDA_VISIBLE_DEVICES", ""), code)
    return hashlib.sha256(repr(facts).encode()).hexdigest()[:12]


def service_key(folder: Path) -> bytes:
    """The key every connection proves it knows (multiprocessing's challenge), made once, 0600."""
    path = folder / "key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(32))
    return path.read_bytes()


class ServiceBackend:
    """The Backend of a warm service: the same answers as the local backend, from a process that
    outlives the command. `spawn` starts a service (tests give their own). Where no service can
    be had (its folder is not the user's own, or it does not start), the command does the GPU
    work itself, as the local backend does (`local` makes that backend), and says why once."""

    concurrent = True  # each call its own connection, served on a thread of the service (or the local backend)

    def __init__(self, gpus: str = "0", timeout: float = 120.0, idle: float = 600.0,
                 spawn: Callable[[Path], None] | None = None, local: Callable[[], Any] | None = None) -> None:
        self.gpus_arg, self.timeout, self.idle = gpus, timeout, idle
        self._spawn = spawn or self._start_service
        self._make_local = local or self._local_backend
        self._local: Any = None
        try:
            self.path = socket_path(gpus, timeout)
            self.key = service_key(self.path.parent)
        except (ServiceUnsafe, OSError) as e:
            self._without_service(str(e))
        self._info: GpuInfo | None = None
        self._gpus = 1
        self._cancels = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------- connection

    def _connect(self) -> Connection:
        """A connection to the service, started first if none answers."""
        try:
            return Client(str(self.path), family="AF_UNIX", authkey=self.key)
        except NO_SERVICE:
            pass
        with open(self.path.with_suffix(".lock"), "w") as lock:  # one command starts it, the others wait
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return Client(str(self.path), family="AF_UNIX", authkey=self.key)
            except NO_SERVICE:
                self.path.unlink(missing_ok=True)  # a service that died left its socket
                self._spawn(self.path)
            deadline = time.monotonic() + START_WAIT_S
            while True:
                try:
                    return Client(str(self.path), family="AF_UNIX", authkey=self.key)
                except NO_SERVICE:
                    if time.monotonic() > deadline:
                        raise ServiceDidNotStart(f"the GPU service did not start within {START_WAIT_S:.0f} s (its "
                                                 f"log: {self.path.parent / 'service.log'})") from None
                    time.sleep(0.1)

    def _local_backend(self) -> Any:
        from ..worker.worker_client import Evaluator
        from .local import LocalBackend, local_gpus

        return LocalBackend([Evaluator(i, timeout=self.timeout) for i in local_gpus(self.gpus_arg)])

    def _without_service(self, why: str) -> None:
        log.warning("the GPU service cannot be used (%s): this command runs its GPU work itself", why)
        self._local = self._make_local()

    def _here(self) -> Any:
        """The backend of this command's own GPU work (no service)."""
        assert self._local is not None
        return self._local

    def _connected(self) -> Connection | None:
        """A connection to the service, or None once this command runs its GPU work itself."""
        if self._local is not None:
            return None
        try:
            return self._connect()
        except (ServiceUnsafe, ServiceDidNotStart, OSError) as e:
            self._without_service(str(e))
            return None

    def _start_service(self, path: Path) -> None:
        """Detached so that it outlives this command: started by a child that exits at once (the
        service's parent is then no process of this command's tree), in a session of its own,
        without the mark this command's tree is cleaned up by (processes.py)."""
        log.debug("starting the GPU service at %s", path)
        command = [sys.executable, "-m", SERVICE_MODULE, "--socket", str(path), "--gpus", self.gpus_arg,
                   "--timeout", str(self.timeout), "--idle", str(self.idle)] + \
            (["--debug"] if log.isEnabledFor(logging.DEBUG) else [])  # whoever debugs timing sees the service's too
        env = {k: v for k, v in os.environ.items() if k != MARK}
        with open(path.parent / "service.log", "ab") as out:
            subprocess.run([sys.executable, "-c", DETACH, *command], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                           env=env, cwd=str(path.parent), check=False, timeout=30)

    def _ask(self, message: dict) -> Any:
        """One request, one answer; an error answer raised as the service said it. (Not called
        once the command runs its GPU work itself.)"""
        conn = self._connected()
        if conn is None:
            raise _Local()
        with conn:
            conn.send_bytes(_encode(message))
            try:
                answer = _decode(conn.recv_bytes())
            except (EOFError, OSError):
                raise EvaluatorUnavailable("the GPU service went away; the next request starts a new one") from None
        if "unavailable" in answer:
            raise EvaluatorUnavailable(answer["unavailable"])
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["ok"]

    # ---------------------------------------------------------------- Backend

    def start(self) -> GpuInfo:
        if self._local is not None:
            return self._local.start()
        try:
            answer = self._ask({"op": "start"})
        except _Local:
            return self._here().start()
        self._info, self._gpus = from_data(GpuInfo, answer["gpu"]), int(answer["gpus"])
        return self._info

    @property
    def gpus(self) -> int:
        return self._local.gpus if self._local is not None else self._gpus

    def evaluate(self, requests: list[EvalRequest], cancel: threading.Event | None = None,
                 on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
        results: list[EvalResult | None] = [None] * len(requests)
        cancels = self._cancels
        conn = self._connected()
        if conn is None:
            return self._local.evaluate(requests, cancel, on_result)
        message = {"op": "evaluate", "batch": uuid.uuid4().hex, "requests": [to_data(r) for r in requests]}
        with conn:
            try:
                for answer in self._answers(conn, message, cancel, cancels):
                    if "done" in answer:
                        break
                    i, result = int(answer["index"]), from_data(EvalResult, answer["result"])
                    results[i] = result
                    if on_result is not None:
                        on_result(i, result)
            except (EOFError, OSError):
                pass  # the service went away: what it held comes back as such
        return [r if r is not None else EvalResult(kernel=q.kernel, status="crashed", message=GONE)
                for r, q in zip(results, requests)]

    def evaluate_one(self, request: EvalRequest, sanitize: bool = False, on_stage: Callable[[str], None] | None = None,
                     cancel: threading.Event | None = None) -> EvalResult:
        """One request, each stage said as the service starts it (`fsr eval`)."""
        cancels = self._cancels
        conn = self._connected()
        if conn is None:
            return self._here().evaluate_one(request, sanitize, on_stage, cancel)
        gone = EvalResult(kernel=request.kernel, status="crashed", message=GONE)
        with conn:
            try:
                for answer in self._answers(conn, {"op": "evaluate_one", "request": to_data(request),
                                                   "sanitize": sanitize}, cancel, cancels):
                    if "stage" not in answer:
                        return from_data(EvalResult, answer["result"]) if answer.get("result") else gone
                    if on_stage is not None:
                        on_stage(answer["stage"])
            except (EOFError, OSError):
                pass
        return gone

    def _answers(self, conn: Connection, message: dict, cancel: threading.Event | None,
                 cancels: int) -> Iterator[dict]:
        """`message` sent, then each answer as it comes; a cancel (the caller's event, or this
        backend's `cancel()` since `cancels` was read) is told to the service once. Raises
        EOFError or OSError where the service goes away."""
        told = False
        conn.send_bytes(_encode(message))
        while True:
            if not told and ((cancel is not None and cancel.is_set()) or self._cancels != cancels):
                conn.send_bytes(_encode({"op": "cancel"}))
                told = True
            if conn.poll(POLL_S):
                yield _decode(conn.recv_bytes())

    def compile_ahead(self, requests: list[EvalRequest]) -> None:
        try:
            self._ask({"op": "compile_ahead", "requests": [to_data(r) for r in requests]})
        except _Local:
            ahead = getattr(self._local, "compile_ahead", None)
            if ahead is not None:
                ahead(requests)
        except (EvaluatorUnavailable, RuntimeError) as e:
            log.debug("compiling ahead on the service: %s", e)

    def profile(self, request: EvalRequest, lines: bool = False, cancel: threading.Event | None = None) -> Profiled:
        try:
            return from_data(Profiled, self._ask({"op": "profile", "request": to_data(request), "lines": lines}))
        except _Local:
            return self._local.profile(request, lines, cancel)
        except EvaluatorUnavailable as e:
            return Profiled(None, str(e))

    def call(self, name: str, payload: dict, timeout: float | None = None) -> dict:
        try:
            return self._ask({"op": "call", "name": name, "payload": payload})
        except _Local:
            return self._local.call(name, payload, timeout)

    def cancel(self) -> None:
        """Stop this backend's requests in flight (never another command's)."""
        self._cancels += 1
        if self._local is not None:
            self._local.cancel()

    def close(self) -> None:
        """The service is shared and exits when idle: only this command's own workers stop."""
        if self._local is not None:
            self._local.close()


class _Local(Exception):
    """This command runs its GPU work itself (no service): the caller turns to the local backend."""


def _encode(message: dict) -> bytes:
    return json.dumps(message).encode()


def _decode(data: bytes) -> dict:
    return json.loads(data.decode())
