"""The VS Code extension in a real VS Code (code-server), driven through Debian's chromium:
an nvcc diagnostic in the Problems view, "FSR: Optimize kernel at cursor" against the scripted
endpoint and the evaluator stand-in, the rewrite accepted in the refactor preview, the file
checked on disk. Screenshots are kept in vscode-client/e2e/artifacts/."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ..fake_llm import FakeLLM, answer
from ..search_helpers import example

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "vscode-client"
E2E = CLIENT / "e2e"
CODE_SERVER = E2E / "node_modules" / ".bin" / "code-server"
VSIX = CLIENT / "dist" / "fsr-lsp.vsix"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WINNER = """```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // accepted in VS Code
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: verified 1.8
}
```"""


def ready() -> str:
    missing = [str(p) for p in (CODE_SERVER, VSIX, Path(CHROMIUM)) if not p.exists()]
    if shutil.which("node") is None:
        missing.append("node")
    return ", ".join(missing)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.nvcc
def test_diagnostic_optimize_accept_and_save_in_vscode(tmp_path):
    missing = ready()
    if missing:
        if os.environ.get("FSR_REQUIRE_E2E") == "1":
            pytest.fail(f"FSR_REQUIRE_E2E=1 but missing: {missing}")
        pytest.skip(f"code-server end-to-end set-up missing: {missing} (bash vscode-client/e2e/install.sh)")
    artifacts = E2E / "artifacts"
    artifacts.mkdir(exist_ok=True)
    workspace, user, extensions = tmp_path / "ws", tmp_path / "user", tmp_path / "ext"
    for d in (workspace, user / "User", extensions):
        d.mkdir(parents=True)
    source = example("saxpy.cu").replace("    int i =", "    int unused_here = 7;\n    int i =")
    cu = workspace / "saxpy.cu"
    cu.write_text(source)
    with FakeLLM([answer(WINNER)], default=answer("nothing more")) as llm:
        (user / "User" / "settings.json").write_text(json.dumps({
            "fsr.server.python": sys.executable, "fsr.llm.baseUrl": llm.base_url, "fsr.llm.model": "scripted",
            "fsr.llm.apiKeyEnv": "FSR_E2E_KEY", "fsr.search.rounds": 1, "fsr.search.candidates": 1,
            "fsr.search.fixAttempts": 0, "fsr.search.sanitize": False, "workbench.startupEditor": "none",
            "security.workspace.trust.enabled": False, "telemetry.telemetryLevel": "off",
            "extensions.autoCheckUpdates": False, "extensions.autoUpdate": False, "workbench.tips.enabled": False,
        }))
        env = {**os.environ, "FSR_LSP_BENCH": "tests.scripted_bench:ScriptedBench", "FSR_E2E_KEY": "unused",
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        dirs = ["--extensions-dir", str(extensions), "--user-data-dir", str(user)]
        subprocess.run([str(CODE_SERVER), *dirs, "--install-extension", str(VSIX)], check=True, env=env,
                       capture_output=True, timeout=300)
        port = free_port()
        server = subprocess.Popen([str(CODE_SERVER), "--auth", "none", "--bind-addr", f"127.0.0.1:{port}",
                                   "--disable-workspace-trust", "--disable-telemetry", *dirs, str(workspace)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                    break
                except OSError:
                    time.sleep(0.5)
            line = source.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)") + 4
            config = {"url": f"http://127.0.0.1:{port}/?folder={workspace}", "file": "saxpy.cu", "kernelLine": line,
                      "warning": "declared but never referenced", "artifacts": str(artifacts)}
            (tmp_path / "e2e.json").write_text(json.dumps(config))
            run = subprocess.run(["node", str(E2E / "drive.mjs")], cwd=E2E, capture_output=True, text=True, timeout=600,
                                 env={**os.environ, "FSR_E2E_CONFIG": str(tmp_path / "e2e.json"), "CHROMIUM": CHROMIUM})
        finally:
            os.killpg(server.pid, signal.SIGTERM)  # code-server's extension host outlives it otherwise
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    saved = cu.read_text()
    assert "// accepted in VS Code" in saved and "__restrict__ y" in saved
    assert saved.startswith(source[: source.index("__global__")])
    assert (artifacts / "diagnostics.png").exists()
