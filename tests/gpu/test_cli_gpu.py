"""`fsr eval` end to end on a GPU: a separate process, its own worker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import KERNELS

pytestmark = pytest.mark.gpu


def fsr_eval(*args):
    return subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "eval", str(KERNELS / "vadd.cu"), "--kernel", "vadd",
                           "--reps", "30", "--no-sanitize", *args], capture_output=True, text=True, timeout=300)


def test_json_for_a_good_and_a_wrong_candidate(evaluator):  # the fixture skips without a GPU
    good = fsr_eval("--candidate", str(KERNELS / "good_restrict.cu"), "--json")
    assert good.returncode == 0, good.stderr
    data = json.loads(good.stdout)
    assert data["status"] == "verified" and data["speedup"] > 0 and data["gpu"]["name"]
    assert "cubin" not in good.stdout  # records carry no binaries
    wrong = fsr_eval("--candidate", str(KERNELS / "wrong_math.cu"), "--json")
    assert wrong.returncode == 1 and json.loads(wrong.stdout)["mismatch"]["buffer"] == "c"


def test_table_output(evaluator):
    r = fsr_eval("--candidate", str(KERNELS / "good_restrict.cu"))
    assert r.returncode == 0, r.stderr
    assert "matches original" in r.stdout and "timing at n=4194304" in r.stdout and "verified" in r.stdout


def test_ctrl_c_during_a_search_reports_and_keeps_the_best_verified(evaluator, tmp_path):
    """`fsr optimize` on the README's softmax, interrupted once a verified win is known (the
    warp-per-row rewrite, in round 1): it stops within 2 s, prints the winner and "interrupted
    after", exits 130, leaves no child behind, and the history holds what it evaluated."""
    import os
    import shutil
    import signal
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH", "")]))}
    (tmp_path / ".git").mkdir()
    shutil.copy(root / "examples" / "softmax.cu", tmp_path / "softmax.cu")
    proc = subprocess.Popen([sys.executable, "-m", "fsr_lsp.cli.main", "optimize", "softmax.cu", "--kernel", "softmax",
                             "--time-budget", "200"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    seen = []
    end = time.monotonic() + 150
    while time.monotonic() < end:
        line = proc.stdout.readline()
        seen.append(line)
        if "best verified" in line or not line:
            break
    assert any("best verified" in line for line in seen), "".join(seen[-20:])
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    stopped = time.monotonic() - t0
    print(f"\n[interrupt] stopped {stopped:.2f} s after Ctrl-C: {rest.strip().splitlines()[-1][:160]}")
    assert stopped < 5, "did not stop promptly"
    assert proc.returncode == 130, rest[-2000:]
    assert "interrupted after" in rest and "softmax: improved" in rest and "Traceback" not in rest, rest[-2000:]
    history = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "history", "softmax.cu", "--kernel", "softmax"],
                             cwd=tmp_path, capture_output=True, text=True, env=env)
    assert history.returncode == 0 and "verified" in history.stdout, history.stdout + history.stderr
