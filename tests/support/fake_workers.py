"""Worker process bodies for testing the supervision in evaluator.pool without a GPU.

They run the real worker loop (`serve`) with a scripted job handler in place of the GPU:
what a job does depends on its kernel name, so one worker can crash, hang or answer.
"""

from __future__ import annotations

import os
import signal
import time

from fsr_lsp.evaluator.records import EvalResult, GpuInfo
from fsr_lsp.evaluator.worker.worker import serve

GPU = GpuInfo(0, "Scripted GPU", "9.0", 132, 50 << 20, 80 << 30)


def _handle(job, report):
    report(f"checking {job.kernel}")
    if job.kernel == "exit":
        os._exit(3)
    if job.kernel == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if job.kernel == "hang":
        time.sleep(3600)
    if job.kernel == "slow":  # each launch takes seconds: as a check printing 4 M lines does
        report("checking n=4194304: one launch of the original took 1.3 s")
        time.sleep(3600)
    if job.kernel == "bug":
        raise ValueError("an evaluator bug")
    restart = job.kernel == "poisoned"
    return EvalResult(kernel=job.kernel, status="crashed" if restart else "verified",
                      message=f"pid {os.getpid()}", restart_worker=restart)


def scripted(conn, index):
    serve(conn, GPU, _handle)


def unavailable(conn, index):
    conn.send(("unavailable", "no CUDA GPU is visible"))


def dies_at_start(conn, index):
    os._exit(7)


def cpu_session(conn, index):
    """The real job runner (gpu.run.run_job) on the CPU stand-in session, Python kernels."""
    from fsr_lsp.evaluator.gpu.run import run_job

    from . import fake_kernels  # noqa: F401  (registers the kernels in this process)
    from .fake_gpu import FakeSession

    session = FakeSession()
    serve(conn, session.info, lambda job, report: run_job(session, job, report))


def _slow(job, report):
    time.sleep(0.5)
    return EvalResult(kernel=job.kernel, status="verified", message=f"pid {os.getpid()}")


def scripted_slow(conn, index):
    """Half a second a job: long enough for several workers to share a round."""
    serve(conn, GPU, _slow)


def emulated_session(conn, index):
    """The real job runner (gpu.run.run_job) on the CPU, CUDA kernels built by tests/cuda_on_cpu."""
    from fsr_lsp.evaluator.gpu.run import run_job

    from .cuda_on_cpu import EmulatedSession

    session = EmulatedSession()
    serve(conn, session.info, lambda job, report: run_job(session, job, report))


def probed(conn, index):
    """A worker whose copy-bandwidth probe answers 1234 GB/s and notes, in a file the test names,
    the moment it ran."""
    marker = os.environ["FSR_TEST_PROBE_MARKER"]

    def probe():
        with open(marker, "a") as f:
            f.write(f"{time.time()}\n")
        return 1234.0

    serve(conn, GPU, _handle, probe=probe)


_loaded = False


def _load_slowly():
    """1.5 s once a process, as torch's import is most of a real worker's start."""
    global _loaded
    if not _loaded:
        time.sleep(1.5)
        _loaded = True


def slow_start(conn, index):
    """A worker whose start takes 1.5 s of loading (its `preload`, which a spare does ahead)."""
    _load_slowly()
    serve(conn, GPU, _handle)


slow_start.preload = _load_slowly


def _gated(conn, job, report):
    from fsr_lsp.evaluator.worker.worker import _wait_alone

    report(f"checking {job.kernel}")
    _wait_alone(conn)  # as run_job does before its timed runs
    report(f"timing {job.kernel}")
    return EvalResult(kernel=job.kernel, status="verified", message=f"pid {os.getpid()}")


def gated(conn, index):
    """A worker whose jobs ask for the GPU alone between their checks and their timed runs."""
    serve(conn, GPU, lambda job, report: _gated(conn, job, report))


def slow_start_slow_jobs(conn, index):
    """1.5 s of start, then half a second a job."""
    _load_slowly()
    serve(conn, GPU, _slow)


def slower_start_slow_jobs(conn, index):
    """4 s of start, then half a second a job."""
    time.sleep(4.0)
    serve(conn, GPU, _slow)
