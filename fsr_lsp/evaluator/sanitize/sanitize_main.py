"""Entry point run under compute-sanitizer or ncu: `python -m fsr_lsp.evaluator.sanitize.sanitize_main
JOB.json [GPU]`, or `--wait FOLDER [GPU]`: load what a job needs first, then wait for the parent
to write FOLDER/job.json (or FOLDER/jobs.json: several jobs, one context) and FOLDER/go before
touching the GPU (the parent times other kernels meanwhile).

A job runs with pycuda and numpy alone (`plain_runs.py`: under the tool, a child that imports
torch takes seconds longer to make its first CUDA call); a job that needs torch (a texture
argument, or more inputs than are quickly drawn on the host: `plain_runs.why_not_plain`) runs
through the worker's own code, `gpu/run.py`, torch imported only then. Either way the child
prints `fsr sanitize run: STATUS: MESSAGE` and exits 0 only when the run was clean. Several jobs
(a round's leaders: sanitize/batch.py) run one after another under the one CUDA context, each
saying `fsr sanitize run K/N: ...`; the child stops at the first that is not clean."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..records import EvalJob, EvalResult
from ..worker.serde import from_data, from_json, to_json
from .child_protocol import CONTEXT_ASKED, CONTEXT_MADE, GO, LOADED

THROUGH_TORCH = "--through-torch"  # the flag that runs every job through torch, as the child ran before plain_runs
WAIT_SECONDS = 900.0  # a child nobody hands a job to gives up
BATCH_FILE = "jobs.json"  # several jobs in one child: a JSON list of them


def child_command(job: EvalJob, folder: Path, device_index: int) -> list[str]:
    """The command that runs `job` in a child process (under compute-sanitizer or ncu), its
    JSON written into `folder`."""
    path = folder / "job.json"
    path.write_text(to_json(job))
    return [sys.executable, "-m", "fsr_lsp.evaluator.sanitize.sanitize_main", str(path), str(device_index)]


def waiting_child_command(folder: Path, device_index: int, through_torch: bool = False) -> list[str]:
    """A child that loads now and runs the job the parent writes into `folder` later;
    `through_torch`: every job through torch, as the child ran before plain_runs (comparisons)."""
    return [sys.executable, "-m", "fsr_lsp.evaluator.sanitize.sanitize_main", "--wait", str(folder), str(device_index),
            *([THROUGH_TORCH] if through_torch else [])]


def _wait_for_job(folder: Path, device_index: int = 0) -> tuple[Path | None, Any]:
    """The job's path once the parent says go (None: nobody did), and the device's primary
    context where the parent asked for it before (made then, while the parent held a share of
    the GPU: a timed run never sees it made)."""
    deadline = time.monotonic() + WAIT_SECONDS
    context: Any = None
    asked = False
    while time.monotonic() < deadline and folder.is_dir():
        if (folder / GO).exists():
            several = folder / BATCH_FILE
            return (several if several.exists() else folder / "job.json"), context
        if not asked and (folder / CONTEXT_ASKED).exists():
            asked = True
            context, why = open_context(device_index)
            _write(folder / CONTEXT_MADE, why)
        time.sleep(0.01)
    return None, context


def open_context(device_index: int) -> tuple[Any, str]:
    """The device's primary context, made now and retained to the child's end (the job's run
    retains it again, at once); None and why where it cannot be made (the job's run says so)."""
    try:
        import pycuda.driver as cuda

        cuda.init()
        return cuda.Device(device_index).retain_primary_context(), ""
    except Exception as e:  # noqa: BLE001 - no pycuda, no driver, no device
        return None, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def release_context(context: Any) -> None:
    if context is None:
        return
    try:
        context.detach()
    except Exception:  # noqa: BLE001 - a context a kernel broke: the process ends anyway
        pass


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:  # the parent removed the folder: it no longer waits
        pass


def preload(through_torch: bool = False) -> None:
    """What a waiting child loads before its job comes: the torch-free runner, numpy and pycuda
    (not the GPU: nothing touches it before the job). Not torch: a job that needs it imports it
    when it comes, and the others never load it. Loaded here, its CUDA libraries and modules
    would be set up under the tool at the first CUDA call, the slow start `plain_runs` exists
    to avoid (5.8 s under memcheck against 0.98 s for pycuda alone, on an H100)."""
    from . import plain_runs  # noqa: F401

    if through_torch:  # the child as it was before plain_runs (for comparisons)
        import torch  # noqa: F401
    try:
        import pycuda.driver  # noqa: F401
    except Exception:  # no pycuda or no driver: the job's run says so
        pass


def main(argv: list[str]) -> int:
    through_torch = THROUGH_TORCH in argv
    argv = [a for a in argv if a != THROUGH_TORCH]
    context = None
    if argv[0] == "--wait":
        preload(through_torch)
        folder = Path(argv[1])
        _write(folder / LOADED, "")
        path, context = _wait_for_job(folder, int(argv[2]) if len(argv) > 2 else 0)
        if path is None:
            release_context(context)
            return 2
        argv = [str(path), *argv[2:]]
    try:
        return _run(argv, through_torch)
    finally:
        release_context(context)


def _run(argv: list[str], through_torch: bool) -> int:
    device_index = int(argv[1]) if len(argv) > 1 else 0
    text = Path(argv[0]).read_text()
    if Path(argv[0]).name != BATCH_FILE:
        return 0 if _run_one(from_json(EvalJob, text), device_index, through_torch, "") == "verified" else 1
    jobs = [from_data(EvalJob, data) for data in json.loads(text)]
    context, _ = open_context(device_index)  # one context for every job, whether or not made ahead
    try:
        for k, job in enumerate(jobs):
            if _run_one(job, device_index, through_torch, f" {k + 1}/{len(jobs)}") != "verified":
                return 1  # the rest would run after a fault: the parent judges each on its own
        return 0
    finally:
        release_context(context)


def _run_one(job: EvalJob, device_index: int, through_torch: bool, which: str) -> str:
    """One job's run, its line printed; its status."""
    from .plain_runs import run_plain, why_not_plain

    why_not = why_not_plain(job, through_torch)
    if why_not:
        print(f"fsr sanitize run through torch: {why_not}", flush=True)
        result = _run_with_torch(job, device_index)
    else:
        result = run_plain(job, device_index)
    print(f"fsr sanitize run{which}: {result.status}: {result.message}")
    sys.stdout.flush()
    return result.status


def _run_with_torch(job: EvalJob, device_index: int) -> EvalResult:
    """The job on a GpuSession, as the worker runs it (gpu/run.py): imported here alone, so that
    a child whose job needs no torch never loads it."""
    from ..gpu.run import run_job
    from ..gpu.session import GpuSession, Unavailable

    try:
        session = GpuSession(device_index)
    except Unavailable as e:
        return EvalResult(kernel=job.kernel, status="unavailable", message=str(e))
    return run_job(session, job)


if __name__ == "__main__":
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    sys.exit(main(sys.argv[1:]))
