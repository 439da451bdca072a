"""Entry point run under compute-sanitizer or ncu: `python -m fsr_lsp.evaluator.sanitize.sanitize_main
JOB.json [GPU]`, or `--wait FOLDER [GPU]`: load everything first, then wait for the parent to
write FOLDER/job.json and FOLDER/go before touching the GPU (the parent times other kernels
meanwhile)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ..records import EvalJob
from ..worker.serde import from_json, to_json

WAIT_SECONDS = 900.0  # a child nobody hands a job to gives up


def child_command(job: EvalJob, folder: Path, device_index: int) -> list[str]:
    """The command that runs `job` in a child process (under compute-sanitizer or ncu), its
    JSON written into `folder`."""
    path = folder / "job.json"
    path.write_text(to_json(job))
    return [sys.executable, "-m", "fsr_lsp.evaluator.sanitize.sanitize_main", str(path), str(device_index)]


def waiting_child_command(folder: Path, device_index: int) -> list[str]:
    """A child that loads now and runs the job the parent writes into `folder` later."""
    return [sys.executable, "-m", "fsr_lsp.evaluator.sanitize.sanitize_main", "--wait", str(folder), str(device_index)]


def _wait_for_job(folder: Path) -> Path | None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline and folder.is_dir():
        if (folder / "go").exists():
            return folder / "job.json"
        time.sleep(0.01)
    return None


def main(argv: list[str]) -> int:
    from ..gpu.run import run_job
    from ..gpu.session import GpuSession

    if argv[0] == "--wait":
        import torch  # noqa: F401  (loaded before the wait: that is the point)

        path = _wait_for_job(Path(argv[1]))
        if path is None:
            return 2
        argv = [str(path), *argv[2:]]
    job = from_json(EvalJob, Path(argv[0]).read_text())
    session = GpuSession(int(argv[1]) if len(argv) > 1 else 0)
    result = run_job(session, job)
    print(f"fsr sanitize run: {result.status}: {result.message}")
    sys.stdout.flush()
    return 0 if result.status == "verified" else 1


if __name__ == "__main__":
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    sys.exit(main(sys.argv[1:]))
