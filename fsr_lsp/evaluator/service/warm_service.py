"""The service's side: a local backend kept warm, answering each connection on its own thread.

One message in, answers out, as JSON (worker/serde.py's plain data): `start` (the GPU's facts),
`evaluate` (a result per request as it finishes, then `done`; a `cancel` on the same connection
stops that batch only, never another command's), `profile`, `call`, `compile_ahead`. It exits
after `idle` seconds with no connection, closing its workers; a client that finds it gone starts
another."""

from __future__ import annotations

import argparse
import json
import logging
import os
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any, Callable

from ..backends.local import LocalBackend
from ..backends.request import EvalRequest
from ..backends.service_client import service_key
from ..worker.serde import from_data, to_data
from ..worker.worker_client import EvaluatorUnavailable

log = logging.getLogger("fsr_lsp.evaluator")
# A job cancelled (a search's deadline, an editor's cancel) may end on its own within this: its
# worker then stays warm for the next command (a kill cost the next search 3.7 s of worker start
# and the original's kept runs: seen on an H200, each 10 s search that its deadline interrupted).
CANCEL_GRACE_S = 1.0


class Service:
    def __init__(self, backend: Any, idle: float) -> None:
        self.backend, self.idle = backend, idle
        self.active = 0
        self.last = time.monotonic()
        self._lock = threading.Lock()

    def serve(self, path: Path) -> None:
        """Answer connections until idle; the socket is removed on the way out."""
        key = service_key(path.parent)
        listener = Listener(str(path), family="AF_UNIX", authkey=key)
        os.chmod(path, 0o600)
        threading.Thread(target=self._exit_when_idle, args=(path, key), daemon=True, name="fsr-service-idle").start()
        try:
            while True:
                try:
                    conn = listener.accept()
                except (OSError, EOFError, AuthenticationError):  # a client without the key
                    continue
                if self._closing:  # the idle watch's own call, made to end the wait in accept()
                    conn.close()
                    return
                with self._lock:
                    self.active += 1
                threading.Thread(target=self._handle, args=(conn,), daemon=True, name="fsr-service-conn").start()
        finally:
            listener.close()  # removes the socket: the next client starts a new service
            self.backend.close()

    _closing = False

    def _exit_when_idle(self, path: Path, key: bytes) -> None:
        """Ends `serve` after `idle` seconds without a connection. Closing a listening socket
        from another thread does not wake a thread blocked in accept() (Linux): it is woken by a
        call of its own, which then finds the service closing."""
        while True:
            time.sleep(min(1.0, self.idle / 4))
            with self._lock:
                idle = self.active == 0 and time.monotonic() - self.last > self.idle
                if idle:
                    self._closing = True
            if idle:
                log.info("idle for %.0f s: exiting", self.idle)
                try:
                    Client(str(path), family="AF_UNIX", authkey=key).close()
                except (OSError, EOFError, AuthenticationError):
                    pass
                return

    def _handle(self, conn: Connection) -> None:
        try:
            with conn:
                message = json.loads(conn.recv_bytes().decode())
                if message.get("op") == "evaluate":
                    self._evaluate(conn, message)
                elif message.get("op") == "evaluate_one":
                    self._evaluate_one(conn, message)
                else:
                    conn.send_bytes(json.dumps(self._answer(message)).encode())
        except (EOFError, OSError):
            pass  # the client went away: its batch was cancelled below
        except Exception as e:  # noqa: BLE001 - a bug of ours: said to the client, the service stays up
            log.exception("service request failed")
            try:
                conn.send_bytes(json.dumps({"error": f"the GPU service failed: {e}"}).encode())
            except OSError:
                pass
        finally:
            with self._lock:
                self.active -= 1
                self.last = time.monotonic()

    def _answer(self, message: dict) -> dict:
        op = message.get("op")
        try:
            if op == "start":
                info = self.backend.start()
                return {"ok": {"gpu": to_data(info), "gpus": self.backend.gpus}}
            if op == "profile":
                request = from_data(EvalRequest, message["request"])
                return {"ok": to_data(self.backend.profile(request, bool(message.get("lines"))))}
            if op == "call":
                return {"ok": self.backend.call(message["name"], message["payload"])}
            if op == "compile_ahead":
                ahead = getattr(self.backend, "compile_ahead", None)
                if ahead is not None:
                    ahead([from_data(EvalRequest, r) for r in message["requests"]])
                return {"ok": None}
        except EvaluatorUnavailable as e:
            return {"unavailable": str(e)}
        return {"error": f"the GPU service does not know {op!r}"}

    def _evaluate_one(self, conn: Connection, message: dict) -> None:
        """One request with its stages said as they start (`fsr eval`), then its result."""
        request = from_data(EvalRequest, message["request"])
        self._streamed(conn, lambda send, cancel: {"result": to_data(self.backend.evaluate_one(
            request, bool(message.get("sanitize")), lambda text: send({"stage": text}), cancel))})

    def _evaluate(self, conn: Connection, message: dict) -> None:
        """A batch, each result sent as it comes, then `done`."""
        requests = [from_data(EvalRequest, r) for r in message["requests"]]

        def batch(send: Callable[[dict], None], cancel: threading.Event) -> dict:
            self.backend.evaluate(requests, cancel, lambda i, result: send({"index": i, "result": to_data(result)}))
            return {"done": True}

        self._streamed(conn, batch)

    def _streamed(self, conn: Connection, work: Callable[[Callable[[dict], None], threading.Event], dict]) -> None:
        """`work(send, cancel)` on a thread of its own, what it sends going out as it comes and
        what it returns last; a cancel on the connection (or the client going away) sets `cancel`,
        which stops this request alone. Nothing more is sent to a client that went away."""
        cancel = threading.Event()
        lock = threading.Lock()
        last: list[dict] = []

        def send(answer: dict) -> None:
            with lock:
                conn.send_bytes(json.dumps(answer).encode())

        def run() -> None:
            try:
                last.append(work(send, cancel))
            except OSError:  # the client went away mid-request
                cancel.set()

        worker = threading.Thread(target=run, daemon=True, name="fsr-service-request")
        worker.start()
        while worker.is_alive():
            try:
                if conn.poll(0.1) and json.loads(conn.recv_bytes().decode()).get("op") == "cancel":
                    cancel.set()
            except (EOFError, OSError):
                cancel.set()
                worker.join()
                return
        if last:
            send(last[0])

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fsr_lsp.evaluator.service")
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--gpus", default="0")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--idle", type=float, default=600.0)
    parser.add_argument("--debug", action="store_true", help="log each job's stages too (the starting command's "
                                                               "log was at debug level)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO,
                        format="%(asctime)s %(threadName)s %(name)s: %(message)s")
    from ..backends import gpu_workers, local_gpus

    backend = LocalBackend(gpu_workers(local_gpus(args.gpus), args.timeout, cancel_grace=CANCEL_GRACE_S))
    log.info("GPU service for GPUs %s at %s (pid %d)", args.gpus, args.socket, os.getpid())
    Service(backend, args.idle).serve(args.socket)
    return 0
