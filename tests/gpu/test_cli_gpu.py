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
