"""The server's side of issue 61's sweep: with each store of `.fsr/` damaged (garbage, a folder of
its name, an empty file, a read-only file), the requests an editor sends on opening a CUDA file
(hover on each kernel, the code actions, the search list, a kernel's history, a save) are all answered, none with an error,
and no traceback reaches the client. (The `fsr` commands' side: tests/package/test_damaged_sweep.py.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.damaged_workspace import DAMAGE, STORES, KERNEL as ONE
from ..support.doubles import STAND_INS

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ONE.replace("void k(", "void scale(") + """
__global__ void bare(int n, float* y) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }
"""


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def message(**kw) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", **kw}).encode())


def at(uri: str, line: int, character: int) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("store", STORES)
def test_an_editor_opening_a_file_over_a_damaged_store_gets_every_answer(tmp_path: Path, store: str, damage: str):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".fsr").mkdir()
    DAMAGE[damage](tmp_path / ".fsr" / store)
    path = tmp_path / "k.cu"
    path.write_text(KERNEL)
    uri = path.as_uri()
    line = KERNEL.splitlines().index(next(x for x in KERNEL.splitlines() if "void scale" in x))
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": len(KERNEL.splitlines()), "character": 0}}
    stream = b"".join([
        message(id=1, method="initialize", params={"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
                                                   "initializationOptions": {"fsr": {"diagnostics": {"onOpen": False}}}}),
        message(method="initialized", params={}),
        message(method="textDocument/didOpen", params={"textDocument": {"uri": uri, "languageId": "cuda-cpp",
                                                                        "version": 1, "text": KERNEL}}),
        message(id=2, method="textDocument/hover", params=at(uri, line, 17)),
        message(id=3, method="textDocument/codeAction", params={"textDocument": {"uri": uri}, "range": whole,
                                                                "context": {"diagnostics": []}}),
        message(id=4, method="workspace/executeCommand", params={"command": "fsr.searches", "arguments": []}),
        message(id=5, method="workspace/executeCommand", params={"command": "fsr.historyAt",
                                                                 "arguments": [uri, line, 17]}),
        message(method="textDocument/didSave", params={"textDocument": {"uri": uri}}),
        message(id=6, method="textDocument/hover", params=at(uri, line + 2, 17)),  # the kernel without a spec
        message(id=7, method="shutdown"),
        message(method="exit"),
    ])
    env = {k: v for k, v in os.environ.items() if k not in STAND_INS}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "fsr_lsp.server.main"], input=stream, capture_output=True, timeout=90,
                          env=env, cwd=tmp_path)
    replies = [json.loads(body) for body in re.split(rb"Content-Length: \d+\r\n(?:[^\r\n]+\r\n)*\r\n", proc.stdout)
               if body.strip()]
    by_id = {r.get("id"): r for r in replies if "id" in r and ("result" in r or "error" in r)}
    for i in range(1, 8):
        assert i in by_id and "error" not in by_id[i], (store, damage, i, by_id.get(i), proc.stderr.decode()[-2000:])
    assert by_id[2]["result"] and "scale" in json.dumps(by_id[2]["result"])  # the hover answered with the kernel
    assert by_id[6]["result"]
    assert by_id[5]["result"]["kernel"] == "scale"  # the history read (an empty one where it was damaged)
    said = json.dumps(replies) + proc.stderr.decode()
    assert "Traceback" not in said, said[-3000:]
