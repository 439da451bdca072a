"""Entry point run under compute-sanitizer: `python -m fsr_lsp.evaluator.sanitize_main JOB.json [GPU]`."""

from __future__ import annotations

import sys
from pathlib import Path

from .records import EvalJob
from .serde import from_json, to_json


def child_command(job: EvalJob, folder: Path, device_index: int) -> list[str]:
    """The command that runs `job` in a child process (under compute-sanitizer or ncu), its
    JSON written into `folder`."""
    path = folder / "job.json"
    path.write_text(to_json(job))
    return [sys.executable, "-m", "fsr_lsp.evaluator.sanitize_main", str(path), str(device_index)]


def main(argv: list[str]) -> int:
    from .gpu.run import run_job
    from .gpu.session import GpuSession

    job = from_json(EvalJob, Path(argv[0]).read_text())
    session = GpuSession(int(argv[1]) if len(argv) > 1 else 0)
    result = run_job(session, job)
    print(f"fsr sanitize run: {result.status}: {result.message}")
    return 0 if result.status == "verified" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
