"""The worker process: owns the CUDA context, runs one job at a time, reports stages.

Messages (tuples over a multiprocessing Pipe, plain data only):
  parent -> worker: ("job", job_data) | ("stop",)
  worker -> parent: ("ready", gpu_data) | ("unavailable", message)
                    ("stage", text) | ("result", result_data)
A job whose result asks for a restart (sticky CUDA error, out of memory) ends the process
after the reply: its context can no longer be trusted.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

from .records import EvalJob, EvalResult
from .serde import from_data, to_data


def worker_main(conn: Any, device_index: int) -> None:
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    try:
        from .gpu.session import GpuSession, Unavailable

        try:
            session = GpuSession(device_index)
        except Unavailable as e:
            conn.send(("unavailable", str(e)))
            return
        conn.send(("ready", to_data(session.info)))
        from .gpu.run import run_job

        while True:
            try:
                message = conn.recv()
            except EOFError:
                return
            if message[0] == "stop":
                return
            job = from_data(EvalJob, message[1])
            try:
                result = run_job(session, job, lambda text: conn.send(("stage", text)))
            except Exception as e:  # a bug of ours: report it as such, then restart clean
                result = EvalResult(kernel=job.kernel, status="crashed",
                                    message=f"internal evaluator error: {type(e).__name__}: {e}",
                                    restart_worker=True)
                traceback.print_exc(file=sys.stderr)
            conn.send(("result", to_data(result)))
            if result.restart_worker:
                conn.close()
                os._exit(0)
    except (BrokenPipeError, KeyboardInterrupt):
        return
