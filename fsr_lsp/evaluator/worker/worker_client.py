"""The parent side of the worker: start it, hand it jobs, survive whatever it does.

A candidate may fault (a poisoned CUDA context), hang (a kernel cannot be stopped from
inside its process) or exhaust memory. Each of those costs only the worker process; the
caller gets a result saying what happened and the next job gets a fresh worker.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import signal
import threading
import time
from typing import Any, Callable

from ... import processes
from .gpu_gate import gate
from ..records import SLOW_MARK, EvalJob, EvalResult, GpuInfo
from .serde import from_data, to_data
from .worker import held_start, worker_main

StageCallback = Callable[[str], None]
log = logging.getLogger("fsr_lsp.evaluator")


class EvaluatorUnavailable(RuntimeError):
    """No GPU evaluation here; the message is one line for the user."""


class Evaluator:
    """One GPU, one worker process, one job at a time (jobs from several threads queue)."""

    def __init__(self, device_index: int = 0, timeout: float = 120.0, start_timeout: float = 300.0,
                 target: Callable[[Any, int], None] = worker_main, cancel_grace: float = 0.0,
                 spare: bool = False) -> None:
        """`cancel_grace`: seconds a cancelled job may still take to end on its own before its worker
        is killed (its result is dropped all the same). 0 for a command's own worker, which ends
        with the command; a warm service's keeps its CUDA context and the original's kept runs for
        the next command that way, where a kill would cost it the worker's start. `spare`: once the
        worker is up, a second process loads what a start loads (torch: most of its seconds) and
        waits, to take over at a restart (a candidate that faults costs its search a whole start,
        4-5 s, otherwise)."""
        self.device_index = device_index
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.cancel_grace = cancel_grace
        self._target = target
        self._mp = multiprocessing.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None
        self._lock = threading.RLock()  # start() from any thread, and again inside run()
        self._cancels = 0  # cancel() calls so far: work that began before the latest one stops
        self.gpu: GpuInfo | None = None
        self._start_deadline: float | None = None  # a start under way (None: none, or it ended)
        self.spare = spare
        self._spare: tuple[Any, Any] | None = None  # a worker process (and its pipe) kept started, once one restarted
        self.restarts = 0

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- lifecycle

    def start(self, stop: threading.Event | None = None) -> GpuInfo:
        """Start the worker if needed; raises EvaluatorUnavailable with a one-line reason.
        Safe from several threads: a start never races a job on the same pipe."""
        with self._lock:
            return self._start(stop)

    def _start(self, stop: threading.Event | None = None, gated: bool = True) -> GpuInfo:
        """`gated`: the probe waits for the GPU to be the worker's alone (False: the caller holds
        it so already, as a job does). A start that a cancel interrupted goes on where it was: it
        runs no candidate's code, and the next job (often the next command's, on a warm service)
        finds the worker closer to ready, not a new one to wait for."""
        if self.alive:
            assert self.gpu is not None
            return self.gpu
        if self._proc is None or not self._proc.is_alive() or self._start_deadline is None:
            self._kill()
            if not self._take_spare():
                self._spawn()
        assert self._proc is not None and self._start_deadline is not None
        proc, parent, deadline = self._proc, self._conn, self._start_deadline
        cancels = self._cancels
        while time.monotonic() < deadline:
            if self._cancels != cancels or (stop is not None and stop.is_set()):  # the caller stops, the start goes on
                log.debug("worker %d: cancelled while starting; the start goes on for the next job", self.device_index)
                raise EvaluatorUnavailable("cancelled while the GPU worker was starting")
            if parent.poll(0.05):
                try:
                    kind, payload = parent.recv()
                except EOFError:
                    break
                if kind == "ready":
                    gpu = from_data(GpuInfo, payload)
                    with gate(self.device_index).exclusive() if gated else contextlib.nullcontext():
                        gpu.bandwidth_gbps = self._probe(parent, deadline)
                    self.gpu, self._start_deadline = gpu, None
                    if self.spare and self._spare is None:  # loads now, waits for the next restart
                        self._spare = self._process(held=True)
                    return self.gpu
                self._kill()
                raise EvaluatorUnavailable(str(payload))
            if not proc.is_alive():
                break
        proc.join(timeout=5)  # the pipe's EOF can come before the exit status: wait for it
        code = proc.exitcode
        self._kill()
        if code is None:
            raise EvaluatorUnavailable(f"the GPU worker did not start within {self.start_timeout:.0f} s")
        raise EvaluatorUnavailable(f"the GPU worker exited during start-up ({_exit_text(code)})")

    def _restart(self) -> None:
        """After a crash, a hang or a poisoned context: the next worker starts now, so that its
        seconds of start overlap what the caller does next (its next compile, the next round's
        drafts) instead of delaying the next job; with `spare`, the one kept started takes over
        and another starts in its place."""
        self._kill()
        self.restarts += 1
        if not self._take_spare():
            self._spawn()

    def _take_spare(self) -> bool:
        """The spare worker as this one (its start awaited by `_start` as any other), if it is up."""
        spare, self._spare = self._spare, None
        if spare is None or not spare[0].is_alive():
            _end(spare)
            return False
        try:
            spare[1].send(("go",))
        except OSError:
            _end(spare)
            return False
        log.debug("worker %d: the spare worker takes over", self.device_index)
        self._proc, self._conn = spare
        self._start_deadline = time.monotonic() + self.start_timeout
        return True

    def _spawn(self) -> None:
        """A new worker process (its callers have killed the last), its start to be awaited by
        `_start` before `_start_deadline`."""
        self._proc, self._conn = self._process()
        self._start_deadline = time.monotonic() + self.start_timeout

    def _process(self, held: bool = False) -> tuple[Any, Any]:
        """`held`: a spare, which loads what a start loads and then waits for a "go" before it
        makes its CUDA context (nothing of it touches the GPU beside the worker's timed runs)."""
        parent, child = self._mp.Pipe()
        target, args = (held_start, (child, self.device_index, self._target)) if held else \
            (self._target, (child, self.device_index))
        proc = self._mp.Process(target=target, args=args, daemon=True,
                                name=f"fsr-gpu-worker-{self.device_index}{'-spare' if held else ''}")
        log.debug("worker %d: starting%s", self.device_index, " a spare" if held else "")
        processes.start_child(proc)
        child.close()
        return proc, parent

    def _probe(self, conn: Any, deadline: float) -> float:
        """The copy bandwidth the worker measures, asked for once nothing else of this process
        uses the GPU (sanitizer children may run beside a worker's start); 0.0 (no yardstick)
        where no answer comes: the next job finds out why."""
        try:
            conn.send(("probe",))
            while time.monotonic() < deadline and self._proc is not None and self._proc.is_alive():
                if conn.poll(0.05):
                    kind, payload = conn.recv()
                    if kind == "probed":
                        return float(payload)
        except (EOFError, OSError):
            pass
        return 0.0

    @property
    def alive(self) -> bool:
        """Whether a started worker is up (a job can run without a start)."""
        return (self._proc is not None and self._proc.is_alive() and self._start_deadline is None
                and self.gpu is not None)

    def close(self) -> None:
        """Stop the worker now: it holds nothing that needs a graceful end, and a CUDA context's
        teardown is the driver's business, not the caller's time."""
        self._kill()
        _end(self._spare)
        self._spare = None

    def cancel(self) -> None:
        """Stop the job in progress (from another thread): it is killed, after `cancel_grace`. A
        start under way stops being waited for, and goes on for the next job."""
        self._cancels += 1

    def _kill(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        self._start_deadline = None
        _end((proc, conn))

    # -------------------------------------------------------------- jobs

    def run(self, job: EvalJob, timeout: float | None = None, on_stage: StageCallback | None = None,
            stop: threading.Event | None = None) -> EvalResult:
        """Run one job: its checks sharing the GPU (with sanitizer runs, another worker's checks),
        its timed runs alone on it (gpu_gate.py); never raises for what the job does, never waits
        past `timeout` (the time spent waiting for the GPU not counted)."""
        with self._lock:
            cancels = self._cancels

            def stopped() -> bool:
                return self._cancels != cancels or (stop is not None and stop.is_set())

            try:
                gpu = self._start(stop)
            except EvaluatorUnavailable as e:
                return EvalResult(kernel=job.kernel, status="cancelled" if stopped() else "unavailable", message=str(e))
            held = _Held(gate(self.device_index))
            try:
                if not held.share(stopped):
                    return EvalResult(kernel=job.kernel, status="cancelled", message="cancelled while waiting for the GPU")
                log.debug("worker %d: job %s (%d sizes)", self.device_index, job.kernel, len(job.sizes))
                return self._follow(job, timeout if timeout is not None else self.timeout, on_stage, stopped, gpu, held)
            finally:
                held.release()

    def _follow(self, job: EvalJob, limit: float, on_stage: StageCallback | None, stopped: Callable[[], bool],
                gpu: GpuInfo, held: "_Held") -> EvalResult:
        """The job sent, then its stages, its asks for the GPU alone, and its result as they come."""
        started, paused = time.monotonic(), 0.0
        stage = "starting"
        try:
            self._conn.send(("job", to_data(job)))
        except (BrokenPipeError, OSError):
            return self._lost(job, "receiving the job", started)
        cancelled_at: float | None = None
        while True:
            if cancelled_at is None and stopped():
                cancelled_at = time.monotonic()
            if cancelled_at is not None and time.monotonic() - cancelled_at >= self.cancel_grace:
                return self._cancelled(job, stage, started, gpu)
            try:
                ready = self._conn.poll(0.05)
            except (EOFError, OSError):
                ready = False
            if ready:
                try:
                    kind, payload = self._conn.recv()
                except (EOFError, OSError):
                    return self._lost(job, stage, started)
                if kind == "alone":  # its timed runs next: wait for the GPU alone (not counted against the limit)
                    waited = time.monotonic()
                    if not held.alone(stopped):
                        return self._cancelled(job, "waiting for the GPU", started, gpu)
                    paused += time.monotonic() - waited
                    self._conn.send(("alone",))
                    continue
                if kind == "stage":
                    stage = payload
                    log.debug("worker %d: %s", self.device_index, payload)  # the job's timeline, timestamped
                    if on_stage is not None:
                        on_stage(payload)
                    continue
                return self._ended(job, from_data(EvalResult, payload), stage, started, gpu, cancelled_at)
            if not self._proc.is_alive():
                return self._lost(job, stage, started)
            if time.monotonic() - started - paused > limit:
                self._restart()
                return _result(job, "timeout", _timeout_text(limit, stage), started, gpu)

    def _ended(self, job: EvalJob, result: EvalResult, stage: str, started: float, gpu: GpuInfo,
               cancelled_at: float | None) -> EvalResult:
        result.gpu = result.gpu or gpu
        if result.restart_worker:
            self._restart()
        if cancelled_at is not None:  # it ended within the grace: the worker stays, the result goes
            log.debug("worker %d: cancelled; the job ended %.2f s later, the worker kept",
                      self.device_index, time.monotonic() - cancelled_at)
            return _result(job, "cancelled", f"cancelled while {stage}", started, gpu)
        log.debug("worker %d: %s in %.2f s (%s)", self.device_index, result.status, result.seconds,
                  ", ".join(f"{k} {v:.2f} s" for k, v in result.phase_seconds.items()))
        return result

    def _cancelled(self, job: EvalJob, stage: str, started: float, gpu: GpuInfo) -> EvalResult:
        """A job that did not end within the cancel's grace: its worker killed (with a grace, the
        one kept warm for the next command, the next starts at once)."""
        log.debug("worker %d: cancelled while %s", self.device_index, stage)
        if self.cancel_grace:
            self._restart()
        else:
            self._kill()
        return _result(job, "cancelled", f"cancelled while {stage}", started, gpu)

    def _lost(self, job: EvalJob, stage: str, started: float) -> EvalResult:
        """The worker went away mid-job: say how, while doing what."""
        proc = self._proc
        if proc is not None:
            proc.join(timeout=5)
            how = _exit_text(proc.exitcode)
        else:
            how = "gone"
        self._restart()
        return _result(job, "crashed", f"the worker process died ({how}) while {stage}; it will restart",
                       started, self.gpu)


class _Held:
    """What a job holds of its GPU's gate: a share for its checks, then the GPU alone for its
    timed runs (the share given up first: two jobs upgrading at once never wait on each other)."""

    def __init__(self, gpu_gate: Any) -> None:
        self.gate, self.holding = gpu_gate, ""

    def share(self, stop: Callable[[], bool]) -> bool:
        if self.gate.take_shared(stop):
            self.holding = "shared"
        return self.holding == "shared"

    def alone(self, stop: Callable[[], bool]) -> bool:
        self.release()
        if self.gate.take_exclusive(stop):
            self.holding = "exclusive"
        return self.holding == "exclusive"

    def release(self) -> None:
        if self.holding == "shared":
            self.gate.give_shared()
        elif self.holding == "exclusive":
            self.gate.give_exclusive()
        self.holding = ""


def _end(worker: tuple[Any, Any] | None) -> None:
    """Kill a worker process (if it runs) and close its pipe."""
    if worker is None:
        return
    proc, conn = worker
    if proc is not None:
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=0.2)
        if proc.exitcode is None:  # the driver is still tearing its context down: reap it later
            _detach(proc)
    if conn is not None:
        conn.close()


def _detach(proc: Any) -> None:
    """A killed worker whose exit the kernel has not finished: reaped by a daemon thread, and
    out of multiprocessing's list, whose exit handler would otherwise wait for it."""
    children = getattr(multiprocessing.process, "_children", None)
    if isinstance(children, set):
        children.discard(proc)
    threading.Thread(target=proc.join, name="fsr-reap-worker", daemon=True).start()


def _result(job: EvalJob, status: str, message: str, started: float, gpu: GpuInfo | None) -> EvalResult:
    return EvalResult(kernel=job.kernel, status=status, message=message,  # type: ignore[arg-type]
                      seconds=time.monotonic() - started, gpu=gpu)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _timeout_text(limit: float, stage: str) -> str:
    """Why a job ran out of time: a kernel that hangs, or (its last launch said so) one that is
    slow at this size, which a longer limit or smaller sizes would let finish."""
    if SLOW_MARK in stage:
        return (f"no result within {limit:.0f} s while {stage}: the kernel is slow at this size, not hung (its "
                f"checks launch it dozens of times); a longer --timeout or smaller sizes in the spec let it finish; "
                f"the worker was killed and will restart")
    return f"no result within {limit:.0f} s while {stage}: a kernel probably hangs; the worker was killed and will restart"
