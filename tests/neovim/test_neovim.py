"""A headless Neovim (Debian's 0.7.2 in CI) through the whole flow: diagnostics, the optimize
action, the verified win, the lazily resolved edit applied and written to disk."""

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
pytestmark = pytest.mark.nvcc

WINNER = """```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // the neovim winner
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: verified 1.8
}
```"""


def nvim() -> str | None:
    found = shutil.which("nvim")
    if found is None and os.environ.get("FSR_REQUIRE_NVIM") == "1":
        pytest.fail("FSR_REQUIRE_NVIM=1 but nvim is not installed")
    return found


def test_open_diagnose_optimize_apply_and_save(tmp_path):
    binary = nvim()
    if binary is None:
        pytest.skip("nvim not installed")
    source = example("saxpy.cu")
    cu = tmp_path / "saxpy.cu"
    cu.write_text(source)
    with FakeLLM([answer(WINNER)], default=answer("nothing more")) as llm:
        env = {**os.environ, "FSR_LSP_BENCH": "tests.scripted_bench:ScriptedBench",
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), "FSR_NVIM_KEY": "unused"}
        config = {
            "cmd": [sys.executable, "-m", "fsr_lsp.server.main"], "env": env, "root": str(tmp_path),
            "file": str(cu), "result": str(tmp_path / "result.json"),
            "kernel_line": source.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)") + 2,
            "init_options": {"fsr": {"llm": {"baseUrl": llm.base_url, "model": "scripted", "apiKeyEnv": "FSR_NVIM_KEY"},
                                     "search": {"rounds": 1, "candidates": 1, "fixAttempts": 0, "sanitize": False}}},
        }
        (tmp_path / "config.json").write_text(json.dumps(config))
        xdg = {f"XDG_{k}_HOME": str(tmp_path / k.lower()) for k in ("CONFIG", "DATA", "STATE", "CACHE")}
        run = subprocess.run([binary, "--headless", "--clean", "-S", str(HERE / "drive.lua")], cwd=tmp_path,
                             env={**os.environ, **xdg, "FSR_NVIM_CONFIG": str(tmp_path / "config.json")},
                             capture_output=True, text=True, timeout=240)
    steps = json.loads((tmp_path / "result.json").read_text()) if (tmp_path / "result.json").exists() else []
    assert steps and all(s["ok"] for s in steps), (steps, run.stdout[-2000:], run.stderr[-2000:])
    assert [s["name"] for s in steps][-1] == "written"
    saved = cu.read_text()
    assert "// the neovim winner" in saved and "__restrict__ y" in saved
    assert saved.startswith(source[: source.index("__global__")])  # nothing outside the kernel changed
