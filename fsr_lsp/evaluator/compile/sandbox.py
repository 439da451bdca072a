"""In-process compilers (NVRTC) run on untrusted text in child processes under the limits.

NVRTC is a library: in our own process nothing could stop a candidate that makes it grow
without bound. Each child sets its address-space and file-size limits once, a CPU-time limit
before each job, and answers jobs one at a time over its stdin/stdout (pickled frames); the
parent keeps a wall clock. A child that hits a limit dies or is killed, and the next job gets
a fresh one. Children read EOF and exit when their parent goes away, a kill included.
"""

from __future__ import annotations

import importlib
import os
import pickle
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from typing import Any

from ...failures import said
from .limits import CompileLimits, limit_hit

_HEADER = struct.Struct("<Q")


class LimitHit(Exception):
    def __init__(self, limit: str) -> None:
        super().__init__(limit)
        self.limit = limit


class Sandbox:
    """A pool of child processes that call `target` ('module:function') under `limits`."""

    def __init__(self, target: str, limits: CompileLimits) -> None:
        self.target, self.limits = target, limits
        self._idle: list[subprocess.Popen] = []
        self._lock = threading.Lock()

    def call(self, *args: Any) -> Any:
        """`target(*args)` in a child; raises LimitHit when a limit stopped it."""
        child = self._take()
        try:
            _send(child.stdin, args)
            reply = _receive(child.stdout, self.limits.wall_seconds)
        except TimeoutError:
            _kill(child)
            raise LimitHit("wall") from None
        except (EOFError, BrokenPipeError, OSError):
            code = child.wait()
            raise LimitHit(limit_hit(code, "") or "memory") from None
        with self._lock:
            self._idle.append(child)
        kind, value = reply
        if kind == "error":
            raise RuntimeError(value)
        return value

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            _kill(child)

    def _take(self) -> subprocess.Popen:
        with self._lock:
            while self._idle:
                child = self._idle.pop()
                if child.poll() is None:
                    return child
        return subprocess.Popen([sys.executable, "-m", __name__, self.target, str(self.limits.memory_bytes),
                                 str(self.limits.cpu_seconds), str(self.limits.output_bytes)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def _send(stream: Any, value: Any) -> None:
    data = pickle.dumps(value)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: Any, timeout: float | None = None) -> Any:
    deadline = None if timeout is None else time.monotonic() + timeout
    header = _read(stream, _HEADER.size, deadline)
    return pickle.loads(_read(stream, _HEADER.unpack(header)[0], deadline))


def _read(stream: Any, n: int, deadline: float | None) -> bytes:
    fd = stream.fileno()
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, n - got)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _kill(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.kill()
    child.wait()
    for stream in (child.stdin, child.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


def _child(target: str, memory: int, cpu: int, output: int) -> None:
    """The child's loop: limits first, then one job at a time until EOF."""
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (output, output))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    module, name = target.split(":")
    function = getattr(importlib.import_module(module), name)
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into the frames
    source = os.fdopen(os.dup(0), "rb", buffering=0)
    while True:
        try:
            args = _receive(source)
        except EOFError:
            return
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(used.ru_utime + used.ru_stime) + cpu
        resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.getrlimit(resource.RLIMIT_CPU)[1]))
        try:
            reply = ("ok", function(*args))
        except MemoryError:
            os.kill(os.getpid(), signal.SIGKILL)
            return
        except Exception as e:  # the target's own failure: the parent reports it
            reply = ("error", said(e))
        _send(channel, reply)


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
