"""Emacs with eglot 1.9 (Debian's emacs-nox and elpa-eglot in CI), headless, through the whole
flow: diagnostics, "Optimize" from eglot's code-action menu, the verified win, and "Apply FSR
rewrite" from the same menu. eglot 1.9 never resolves code actions and applies only an
action's edit: the buffer holds the rewrite only if the server sent the edit itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..fake_llm import FakeLLM, answer
from ..search_helpers import example

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
EGLOT = Path("/usr/share/emacs/site-lisp/elpa")
pytestmark = pytest.mark.nvcc

WINNER = """```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // the emacs winner
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: verified 1.8
}
```"""


def emacs_with_eglot() -> tuple[str, list[Path]] | None:
    binary = shutil.which("emacs")
    load = sorted(EGLOT.glob("*")) if EGLOT.is_dir() else []
    if binary is None or not any(p.name.startswith("eglot-") for p in load):
        if os.environ.get("FSR_REQUIRE_EMACS") == "1":
            pytest.fail("FSR_REQUIRE_EMACS=1 but emacs with elpa-eglot is not installed")
        return None
    return binary, load


def test_open_diagnose_optimize_apply_and_save(tmp_path):
    found = emacs_with_eglot()
    if found is None:
        pytest.skip("emacs with elpa-eglot not installed")
    binary, load = found
    source = example("saxpy.cu")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # a project root for eglot
    cu = tmp_path / "saxpy.cu"
    cu.write_text(source)
    with FakeLLM([answer(WINNER)], default=answer("nothing more")) as llm:
        env = {"FSR_LSP_BENCH": "tests.scripted_bench:ScriptedBench", "FSR_EMACS_KEY": "unused",
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        config = {
            "cmd": [sys.executable, "-m", "fsr_lsp.server.main"], "env": [[k, v] for k, v in env.items()],
            "file": str(cu), "result": str(tmp_path / "result.json"),
            "kernel_line": source.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)") + 2,
            "init_options": {"fsr": {"llm": {"baseUrl": llm.base_url, "model": "scripted", "apiKeyEnv": "FSR_EMACS_KEY"},
                                     "search": {"rounds": 1, "candidates": 1, "fixAttempts": 0, "sanitize": False}}},
        }
        (tmp_path / "config.json").write_text(json.dumps(config))
        args = [binary, "--batch", "-Q"]
        for folder in load:
            args += ["-L", str(folder)]
        run = subprocess.run([*args, "-l", str(HERE / "drive.el")], cwd=tmp_path, capture_output=True, text=True,
                             env={**os.environ, "HOME": str(tmp_path), "FSR_EMACS_CONFIG": str(tmp_path / "config.json")},
                             timeout=240)
    steps = json.loads((tmp_path / "result.json").read_text()) if (tmp_path / "result.json").exists() else []
    assert steps and all(s["ok"] for s in steps), (steps, run.stdout[-3000:], run.stderr[-3000:])
    assert [s["name"] for s in steps][-1] == "written"
    saved = cu.read_text()
    assert "// the emacs winner" in saved and "__restrict__ y" in saved
    assert saved.startswith(source[: source.index("__global__")])  # nothing outside the kernel changed
