"""The VS Code extension in a real VS Code (code-server), driven through Debian's chromium:
an nvcc diagnostic in the Problems view, "FSR: Optimize kernel at cursor" against the scripted
endpoint and the evaluator stand-in, the rewrite accepted in the refactor preview, the file
checked on disk; and a folder the user has not trusted, whose settings name programs and an
endpoint (Restricted Mode). Screenshots are kept in vscode-client/e2e/artifacts/."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from ..support.doubles import command
from ..support.fake_llm import FakeLLM, answer
from ..support.search_helpers import example

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


def require_set_up() -> None:
    missing = ready()
    if missing:
        if os.environ.get("FSR_REQUIRE_E2E") == "1":
            pytest.fail(f"FSR_REQUIRE_E2E=1 but missing: {missing}")
        pytest.skip(f"code-server end-to-end set-up missing: {missing} (bash vscode-client/e2e/install.sh)")


USER_SETTINGS = {"workbench.startupEditor": "none", "telemetry.telemetryLevel": "off", "extensions.autoCheckUpdates": False,
                 "extensions.autoUpdate": False, "workbench.tips.enabled": False}


@contextmanager
def code_server(tmp_path: Path, workspace: Path, settings: dict, trust: bool, env: dict):
    """code-server with the extension installed and `settings` as the user's, on `workspace`
    (`trust`: False leaves workspace trust on, so a new folder opens in Restricted Mode);
    yields its URL for the folder. Ends with its whole process group."""
    user, extensions = tmp_path / "user", tmp_path / "ext"
    for d in (user / "User", extensions):
        d.mkdir(parents=True)
    (user / "User" / "settings.json").write_text(json.dumps({**USER_SETTINGS, **settings}))
    dirs = ["--extensions-dir", str(extensions), "--user-data-dir", str(user)]
    subprocess.run([str(CODE_SERVER), *dirs, "--install-extension", str(VSIX)], check=True, env=env,
                   capture_output=True, timeout=300)
    port = free_port()
    flags = ["--disable-workspace-trust"] if not trust else []
    server = subprocess.Popen([str(CODE_SERVER), "--auth", "none", "--bind-addr", f"127.0.0.1:{port}", *flags,
                               "--disable-telemetry", *dirs, str(workspace)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/?folder={workspace}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # code-server's extension host outlives it otherwise
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


def server_env() -> dict:
    return {**os.environ, "FSR_LSP_BENCH": "tests.support.scripted_bench:ScriptedBench", "FSR_E2E_KEY": "unused",
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def drive(script: str, tmp_path: Path, config: dict) -> subprocess.CompletedProcess:
    (tmp_path / "e2e.json").write_text(json.dumps(config))
    return subprocess.run(["node", str(E2E / script)], cwd=E2E, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "FSR_E2E_CONFIG": str(tmp_path / "e2e.json"), "CHROMIUM": CHROMIUM})


SEARCH = {"fsr.llm.model": "scripted", "fsr.llm.apiKeyEnv": "FSR_E2E_KEY", "fsr.search.rounds": 1,
          "fsr.search.candidates": 1, "fsr.search.fixAttempts": 0, "fsr.search.sanitize": False}
KERNEL = "__global__ void saxpy(int n, float a, const float* x, float* y)"


@pytest.mark.nvcc
def test_diagnostic_optimize_accept_and_save_in_vscode(tmp_path):
    require_set_up()
    artifacts = E2E / "artifacts"
    artifacts.mkdir(exist_ok=True)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    source = example("saxpy.cu").replace("    int i =", "    int unused_here = 7;\n    int i =")
    cu = workspace / "saxpy.cu"
    cu.write_text(source)
    with FakeLLM([answer(WINNER)], default=answer("nothing more")) as llm:
        settings = {"fsr.server.command": command("fsr-lsp"), "fsr.llm.baseUrl": llm.base_url, **SEARCH,
                    "security.workspace.trust.enabled": False}
        with code_server(tmp_path, workspace, settings, trust=False, env=server_env()) as url:
            line = source.splitlines().index(KERNEL) + 4
            run = drive("drive.mjs", tmp_path, {"url": url, "file": "saxpy.cu", "kernelLine": line,
                                                "warning": "declared but never referenced", "artifacts": str(artifacts)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    saved = cu.read_text()
    assert "// accepted in VS Code" in saved and "__restrict__ y" in saved
    assert saved.startswith(source[: source.index("__global__")])
    assert (artifacts / "diagnostics.png").exists()


@pytest.mark.nvcc
def test_an_untrusted_folder_shows_diagnostics_refuses_search_and_never_runs_its_programs(tmp_path):
    """The folder's .vscode/settings.json names a server command, an interpreter, an nvcc and a
    capture program (each leaves a mark when run) and an endpoint of its own: in Restricted Mode
    the server still starts (from the user's interpreter) and nvcc's diagnostic shows, Optimize
    and Capture are refused with a message; once the user trusts the folder, Optimize runs, and
    still against the user's endpoint, never the folder's, whose programs never ran."""
    require_set_up()
    artifacts = E2E / "artifacts"
    artifacts.mkdir(exist_ok=True)
    workspace = tmp_path / "untrusted"
    (workspace / ".vscode").mkdir(parents=True)
    mark = tmp_path / "a-program-of-the-folder-ran"
    evil = workspace / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch '{mark}'\nexit 1\n")
    evil.chmod(0o755)
    source = example("saxpy.cu").replace("    int i =", "    int unused_here = 7;\n    int i =")
    (workspace / "saxpy.cu").write_text(source)
    with FakeLLM(default=answer("the folder's endpoint")) as theirs, \
            FakeLLM([answer(WINNER)], default=answer("nothing more")) as mine:
        (workspace / ".vscode" / "settings.json").write_text(json.dumps({
            "fsr.server.command": [str(evil)], "fsr.server.python": str(evil), "fsr.compiler.nvcc": str(evil),
            "fsr.capture.command": str(evil), "fsr.llm.baseUrl": theirs.base_url, "fsr.llm.apiKeyEnv": "HOME"}))
        settings = {"fsr.server.command": command("fsr-lsp"), "fsr.llm.baseUrl": mine.base_url, **SEARCH,
                    "security.workspace.trust.enabled": True, "security.workspace.trust.startupPrompt": "never"}
        with code_server(tmp_path, workspace, settings, trust=True, env=server_env()) as url:
            line = source.splitlines().index(KERNEL) + 4
            run = drive("untrusted.mjs", tmp_path, {"url": url, "file": "saxpy.cu", "kernelLine": line,
                                                    "warning": "declared but never referenced",
                                                    "artifacts": str(artifacts)})
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "step: optimize refused" in run.stdout and "step: capture refused" in run.stdout
        assert not mark.exists(), "a program the folder's settings named was run"
        assert theirs.requests == [] and mine.requests  # the search ran once trusted, against the user's endpoint
        assert all(r["headers"]["authorization"] == "Bearer unused" for r in mine.requests)
