"""What a kill and a hanging endpoint cost (no GPU: the evaluator is the scripted stand-in the
server's tests use, each evaluation taking a moment).

1. `kill -9` mid-search: how many evaluated candidates are in the history afterwards (before
   issue 25: stored per batch, so a kill lost the batch in flight).
2. A model endpoint that never answers, `fsr optimize --time-budget 30`: the command's wall time
   (before: 620 s, five tries of the 120 s request timeout).

  python bench/robustness.py
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, save, table

sys.path.insert(0, str(ROOT))
from tests.support.fake_llm import FakeLLM, answer, stall  # noqa: E402

SAXPY = (ROOT / "examples" / "saxpy.cu").read_text()


def optimize(workspace: Path, llm: FakeLLM, *extra: str, bench_log: Path | None = None) -> subprocess.Popen:
    (workspace / ".git").mkdir(exist_ok=True)
    cu = workspace / "saxpy.cu"
    cu.write_text(SAXPY)
    env = {**os.environ, "FSR_LSP_BENCH": "tests.support.scripted_bench:SlowBench", "PYTHONPATH": str(ROOT),
           "FSR_ROBUST_KEY": "k", **({"FSR_BENCH_LOG": str(bench_log)} if bench_log else {})}
    return subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "doubles.py"), "fsr", "optimize", str(cu), "-k", "saxpy", "--no-sanitize",
                             "--llm-base-url", llm.base_url, "--llm-model", "m", "--llm-key-env", "FSR_ROBUST_KEY",
                             "--fix-attempts", "0", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=ROOT, env=env)


def killed_midsearch() -> dict:
    answers = [answer("```cuda\n__global__ void saxpy(int n, float a, const float* __restrict__ x, float* y)\n{\n"
                      f"    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {k}\n"
                      f"    if (i < n) y[i] = a * x[i] + y[i];  // verdict: verified 1.{k % 9 + 1}\n}}\n```")
               for k in range(200)]
    with tempfile.TemporaryDirectory() as tmp, FakeLLM(answers) as llm:
        workspace, log = Path(tmp), Path(tmp) / "evaluated.log"
        proc = optimize(workspace, llm, "--rounds", "20", "--candidates", "8", bench_log=log)
        time.sleep(12)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        evaluated = len(log.read_text().splitlines()) if log.exists() else 0
        db = sqlite3.connect(workspace / ".fsr" / "history.sqlite")
        stored = db.execute("SELECT COUNT(*) FROM candidates WHERE status = 'verified'").fetchone()[0]
    return {"evaluated": evaluated, "stored": stored, "lost": max(0, evaluated - stored)}


def hanging_endpoint(budget: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp, FakeLLM(default=stall(600)) as llm:
        started = time.monotonic()
        proc = optimize(Path(tmp), llm, "--time-budget", str(budget), "--llm-timeout", "120")
        proc.wait(timeout=700)
        return {"budget": budget, "wall": time.monotonic() - started}


def main() -> int:
    kill = killed_midsearch()
    hang = hanging_endpoint(30.0)
    table("robustness (the scripted evaluator, no GPU)", ["what", "result"], [
        ["kill -9 after 12 s: evaluated / stored / lost", f"{kill['evaluated']} / {kill['stored']} / {kill['lost']}"],
        ["a model that never answers, --time-budget 30", f"{hang['wall']:.1f} s"]])
    save("robustness", {"kill": kill, "hang": hang})
    return 0


if __name__ == "__main__":
    sys.exit(main())
