"""What the headless editor tests (Neovim, Emacs) share: the scripted winner, the session's
configuration for the editor's driver script, and the checks on what it reports and saves."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .doubles import command
from .search_helpers import example

ROOT = Path(__file__).parent.parent.parent
SOURCE = example("saxpy.cu")
KERNEL_LINE = SOURCE.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)") + 2


def winner(editor: str) -> str:
    """The scripted model's answer: a verified 1.8x rewrite tagged with the editor's name."""
    return f"""```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // the {editor} winner
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: verified 1.8
}}
```"""


def session_config(tmp_path: Path, base_url: str, key_env: str) -> dict:
    """saxpy.cu written to tmp_path, and what the driver needs: the server command and its
    environment (scripted evaluator and endpoint), the file, where to report, the settings."""
    cu = tmp_path / "saxpy.cu"
    cu.write_text(SOURCE)
    env = {"FSR_LSP_BENCH": "tests.support.scripted_bench:ScriptedBench", key_env: "unused",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return {
        "cmd": command("fsr-lsp"), "env": env, "root": str(tmp_path),
        "file": str(cu), "result": str(tmp_path / "result.json"), "kernel_line": KERNEL_LINE,
        "init_options": {"fsr": {"llm": {"baseUrl": base_url, "model": "scripted", "apiKeyEnv": key_env},
                                 "search": {"rounds": 1, "candidates": 1, "fixAttempts": 0, "sanitize": False}}},
    }


def check_session(tmp_path: Path, editor: str, run: subprocess.CompletedProcess) -> None:
    """Every step the driver reported passed, the last was writing the file, and the file holds
    the rewrite with nothing outside the kernel changed."""
    result = tmp_path / "result.json"
    steps = json.loads(result.read_text()) if result.exists() else []
    assert steps and all(s["ok"] for s in steps), (steps, run.stdout[-3000:], run.stderr[-3000:])
    assert [s["name"] for s in steps][-1] == "written"
    saved = (tmp_path / "saxpy.cu").read_text()
    assert f"// the {editor} winner" in saved and "__restrict__ y" in saved
    assert saved.startswith(SOURCE[: SOURCE.index("__global__")])
