"""Confirm in the editor: a kernel whose capture ran a build is offered "Confirm `K` in your
program"; the command rebuilds, reruns and answers with the report (here the rerun's program is
the test stand-in, and the build is whatever this machine's nvcc allows: the message says which)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import open_file
from .test_drafts import actions

APP = Path(__file__).parents[1] / "data" / "fake_timed_app.py"
KERNEL = """__global__ void scale(float* y, const float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""


def captured(workspace: Path, build: str) -> None:
    folder = workspace / ".fsr" / "captures" / "20260101-000000"
    folder.mkdir(parents=True)
    (workspace / "state.json").write_text(json.dumps({"ns": 1_000_000}))
    (folder / "capture.json").write_text(json.dumps({"command": [sys.executable, str(APP)], "cwd": str(workspace),
                                                     "build": build, "exit_code": 0}))
    record = {"id": 0, "kernel": "_Z5scalePfPKffi", "name": "scale(float*, float const*, float, int)",
              "base": "scale", "grid": [16, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [{"offset": 0, "size": 8}, {"offset": 8, "size": 8}, {"offset": 16, "size": 4},
                         {"offset": 20, "size": 4}]}
    (folder / "launches-1.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(
        {"time": 0, "n": 10, "median_ns": 2_000_000, "min_ns": 2_000_000}) + "\n")
    (folder / "stdout.txt").write_text("checksum: 3.14159\nscale took 2.000 ms\ndone\n")


def command_of(action) -> types.Command:
    if isinstance(action, types.CodeAction):
        return action.command
    raw = action.command
    return types.Command(**ast.literal_eval(raw)) if isinstance(raw, str) and raw.startswith("{") else action


async def test_confirm_is_offered_where_the_capture_ran_a_build_and_reports(client: LanguageClient):
    workspace = client.workspace_dir  # type: ignore[attr-defined]
    uri = open_file(client, "k.cu", KERNEL)
    assert not [a for a in await actions(client, uri, 0) if a.title.startswith("Confirm")]  # no capture yet
    captured(workspace, "true")
    found = [a for a in await actions(client, uri, 0) if a.title.startswith("Confirm `scale` in your program")]
    assert found, [a.title for a in await actions(client, uri, 0)]
    run = command_of(found[0])
    assert run.command == "fsr.confirm" and run.arguments == [uri, "scale"]
    said = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=run.command, arguments=run.arguments))
    assert said.startswith("FSR: scale: "), said
    assert ("2 ms -> 1 ms a launch" in said) or ("no nvcc on PATH" in said or "failed" in said), said
