"""The worker process: owns the CUDA context, runs one job at a time, reports stages.

Messages (tuples over a multiprocessing Pipe, plain data only):
  parent -> worker: ("job", job_data) | ("probe",) | ("stop",) | ("alone",); to a spare (held_start): ("go",)
  worker -> parent: ("ready", gpu_data) | ("unavailable", message) | ("alone", None)
                    ("stage", text) | ("result", result_data) | ("probed", bandwidth_gbps)
A job shares the GPU (with sanitizer runs, with another worker's checks) until its timed runs:
before them the worker asks for the GPU alone ("alone"), and waits for the parent's "alone".
The parent asks for the probe (the copy bandwidth) once the GPU is the worker's alone: sanitizers
may run beside the worker's start.
A job whose result asks for a restart (sticky CUDA error, out of memory) ends the process
after the reply: its context can no longer be trusted.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable

from ...failures import said
from ..records import EvalJob, EvalResult, GpuInfo
from .serde import from_data, to_data

Handler = Callable[[EvalJob, Callable[[str], None]], EvalResult]


def worker_main(conn: Any, device_index: int) -> None:
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    from ..gpu.printed import PrintedOutput

    printed = PrintedOutput.redirect_stdout()  # kernels' printf: never into the parent's stdout
    from ..gpu.session import GpuSession, Unavailable

    try:
        session = GpuSession(device_index)
    except Unavailable as e:
        conn.send(("unavailable", str(e)))
        return
    session.printed = printed
    session.wait_alone = lambda: _wait_alone(conn)
    from ..gpu.run import run_job

    serve(conn, session.info, lambda job, report: run_job(session, job, report), on_idle=session.release_kept,
          probe=session.measure_bandwidth)


def _wait_alone(conn: Any) -> None:
    """Ask the parent for the GPU alone, before the timed runs, and wait for its answer (it holds
    the GPU gate: verifications and sanitizer runs may share the GPU, a timed run never)."""
    conn.send(("alone", None))
    while conn.recv()[0] != "alone":
        pass


def _preload() -> None:
    """What a start imports, without a CUDA context: torch, most of a start's seconds."""
    import torch  # noqa: F401

    from ..gpu import run, session  # noqa: F401


worker_main.preload = _preload  # type: ignore[attr-defined]


def held_start(conn: Any, device_index: int, target: Callable[[Any, int], None] = worker_main) -> None:
    """A spare worker: `target`'s imports done (its `preload`), then it waits for ("go",) from the
    parent before it starts for real (its CUDA context made only then); anything else, or the
    parent gone, ends it."""
    preload = getattr(target, "preload", None)
    if preload is not None:
        preload()
    try:
        message = conn.recv()
    except (EOFError, OSError):
        return
    if message[0] == "go":
        target(conn, device_index)


IDLE_RELEASE_S = 300.0  # a worker with no job for this long gives back what it keeps for the next one


def serve(conn: Any, gpu: GpuInfo, handle: Handler, on_idle: Callable[[], None] | None = None,
          idle_s: float = IDLE_RELEASE_S, probe: Callable[[], float] | None = None) -> None:
    """Announce the GPU, then answer jobs until told to stop or the parent goes away; after
    `idle_s` with no job, `on_idle` once (the original's kept runs, GPU memory that the user's
    own programs on this GPU may need while no search runs). `probe`: the copy bandwidth,
    measured when asked (without one, the announced GPU's is the answer)."""
    try:
        conn.send(("ready", to_data(gpu)))
        idle_said = False
        while True:
            if on_idle is not None and not idle_said and not conn.poll(idle_s):
                on_idle()
                idle_said = True
                continue
            try:
                message = conn.recv()
            except EOFError:
                return
            idle_said = False
            if message[0] == "stop":
                return
            if message[0] == "probe":
                conn.send(("probed", _probed(probe, gpu)))
                continue
            job = from_data(EvalJob, message[1])
            try:
                result = handle(job, lambda text: conn.send(("stage", text)))
            except Exception as e:  # a bug of ours: report it as such, then restart clean
                traceback.print_exc(file=sys.stderr)
                result = EvalResult(kernel=job.kernel, status="crashed",
                                    message=f"internal evaluator error: {said(e)}", restart_worker=True)
            conn.send(("result", to_data(result)))
            if result.restart_worker:
                conn.close()
                os._exit(0)
    except (BrokenPipeError, KeyboardInterrupt):
        return


def _probed(probe: Callable[[], float] | None, gpu: GpuInfo) -> float:
    """The probe's answer; 0.0 (no yardstick: nothing is said about bandwidth) where it fails."""
    if probe is None:
        return gpu.bandwidth_gbps
    try:
        return probe()
    except Exception:  # out of memory beside another process: the searches go on without it
        traceback.print_exc(file=sys.stderr)
        return 0.0
