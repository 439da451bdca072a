"""Worker process bodies for testing the supervision in evaluator.pool without a GPU.

Each speaks the real worker protocol; what it does with a job depends on the job's kernel
name, so one worker can be made to crash, hang or answer.
"""

from __future__ import annotations

import os
import signal
import time

from fsr_lsp.evaluator.records import EvalJob, EvalResult, GpuInfo
from fsr_lsp.evaluator.serde import from_data, to_data

GPU = GpuInfo(0, "Scripted GPU", "9.0", 132, 50 << 20, 80 << 30)


def scripted(conn, index):
    conn.send(("ready", to_data(GPU)))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "stop":
            return
        job = from_data(EvalJob, message[1])
        conn.send(("stage", f"checking {job.kernel}"))
        if job.kernel == "exit":
            os._exit(3)
        if job.kernel == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if job.kernel == "hang":
            time.sleep(3600)
        restart = job.kernel == "poisoned"
        result = EvalResult(kernel=job.kernel, status="crashed" if restart else "verified",
                            message=f"pid {os.getpid()}", restart_worker=restart)
        conn.send(("result", to_data(result)))
        if restart:
            os._exit(0)


def unavailable(conn, index):
    conn.send(("unavailable", "no CUDA GPU is visible"))


def dies_at_start(conn, index):
    os._exit(7)
