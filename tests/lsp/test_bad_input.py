"""Bad input of every kind gets an answer at the protocol's level: invalid params an error
response (never silence), a body that is not JSON -32700, a file the client never opened no
traceback, and no Python traceback in any error's data. A raw stdio session, frame by frame."""

from __future__ import annotations

import json
import os
import subprocess

from ..support.doubles import command
from ..support.lsp_stream import ROOT, frame, message, session



def test_every_bad_request_is_answered(tmp_path):
    unknown = (tmp_path / "never_opened.cu").as_uri()
    stream = b"".join([
        message(id=1, method="initialize", params={"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}),
        message(method="initialized", params={}),
        message(id=2, method="textDocument/hover", params={"textDocument": {}}),  # no uri, no position
        message(id=3, method="textDocument/codeAction", params={"range": 5}),
        frame(b'{"jsonrpc": "2.0", "id": 4, "method": '),  # not JSON
        message(id=5, method="textDocument/hover",
                params={"textDocument": {"uri": unknown}, "position": {"line": 0, "character": 0}}),
        message(id=6, method="workspace/executeCommand", params={"command": "fsr.cancel", "arguments": []}),
        message(id=7, method="shutdown"),
        message(method="exit"),
    ])
    proc, replies, by_id = session(stream, tmp_path)
    assert by_id[2]["error"]["code"] == -32602 and by_id[3]["error"]["code"] == -32602
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[5].get("result") is None and "error" not in by_id[5]
    assert by_id[6]["result"] == "fsr.cancel takes a document URI, a kernel name (strings); argument 1 is nothing"
    assert 7 in by_id
    for r in replies:
        assert "Traceback" not in json.dumps(r), r
        if r.get("method") == "window/showMessage":
            assert "Parse error" not in r["params"]["message"]


KERNEL = "__global__ void k(float* y, const float* x, int n)\n{ int i = threadIdx.x; if (i < n) y[i] = x[i]; }\n"


def test_text_a_client_may_send_bytes_that_are_not_utf8_and_arguments_of_any_type(tmp_path):
    """A lone surrogate in a document (JSON can carry one): every request on it still answered,
    the text kept with U+FFFD in its place. 0xff bytes in a body: -32700. Bad params: -32602 and
    one log line, no traceback. An untitled buffer: diagnostics and a spec fix, no Optimize;
    Optimize asked anyway says why. A command's arguments of the wrong type: its answer says so,
    nothing is run. And a normal request is answered after each."""
    on_disk = (tmp_path / "s.cu").as_uri()
    lone = json.dumps(KERNEL + "// \ud800 \ude00 x\n").replace("\\ud800", "\\ud800")
    hover = {"textDocument": {"uri": on_disk}, "position": {"line": 0, "character": 16}}
    action = {"textDocument": {"uri": "untitled:foo.cu"},
              "range": {"start": {"line": 0, "character": 16}, "end": {"line": 0, "character": 16}},
              "context": {"diagnostics": []}}
    stream = b"".join([
        message(id=1, method="initialize", params={"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}),
        message(method="initialized", params={}),
        frame(('{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "%s", '
               '"languageId": "cuda", "version": 1, "text": %s}}}' % (on_disk, lone)).encode()),
        message(id=2, method="textDocument/hover", params=hover),
        frame(b'{"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {"x": "\xff\xfe"}}'),
        message(id=4, method="textDocument/hover", params=hover),
        message(id=5, method="textDocument/hover", params={"bogus": 1}),
        message(id=6, method="textDocument/hover", params=hover),
        message(method="textDocument/didOpen", params={"textDocument": {"uri": "untitled:foo.cu", "languageId": "cuda",
                                                                         "version": 1, "text": KERNEL}}),
        message(id=7, method="textDocument/codeAction", params=action),
        message(id=8, method="workspace/executeCommand", params={"command": "fsr.optimize",
                                                                 "arguments": ["untitled:foo.cu", "k"]}),
        message(id=9, method="workspace/executeCommand", params={"command": "fsr.capture", "arguments": [123]}),
        message(id=10, method="workspace/executeCommand", params={"command": "fsr.optimize", "arguments": [1, 2]}),
        message(id=11, method="textDocument/hover", params=hover),
        message(id=12, method="shutdown"),
        message(method="exit"),
    ])
    proc, replies, by_id = session(stream, tmp_path)
    for i in (2, 4, 6, 11):
        assert "**`k`**" in by_id[i]["result"]["contents"]["value"], by_id[i]
    assert by_id[None]["error"]["code"] == -32700 and "not UTF-8" in by_id[None]["error"]["message"]
    assert by_id[5]["error"]["code"] == -32602
    titles = [a["title"] for a in by_id[7]["result"]]
    assert titles and not any("Optimize" in t or "Profile" in t for t in titles), titles
    assert "is not a file on disk" in by_id[8]["result"]
    assert by_id[9]["result"] == "fsr.capture takes a command line to run (a string); argument 1 is 123"
    assert "argument 1 is 1" in by_id[10]["result"]
    assert by_id[12].get("error") is None
    assert not any(r.get("method") == "window/showMessage" and "Error in server" in r["params"]["message"]
                   for r in replies)
    log = proc.stderr.decode()
    assert "Traceback" not in log and "Exception Group" not in log, log
    assert len([line for line in log.splitlines() if "request 5" in line or "deserialize" in line]) == 1, log


def test_the_server_exits_at_once_while_a_model_request_hangs(tmp_path):
    import time

    from ..support.fake_llm import FakeLLM, stall
    from ..support.search_helpers import example

    doc = tmp_path / "saxpy.cu"
    doc.write_text(example("saxpy.cu"))
    with FakeLLM(default=stall(120)) as llm:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "FSR_LSP_BENCH": "tests.support.scripted_bench:ScriptedBench",
               "FSR_EXIT_KEY": "k"}
        proc = subprocess.Popen(command("fsr-lsp"), stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
        options = {"fsr": {"llm": {"baseUrl": llm.base_url, "model": "m", "apiKeyEnv": "FSR_EXIT_KEY", "timeout": 120},
                           "diagnostics": {"onOpen": False}}}
        proc.stdin.write(b"".join([
            message(id=1, method="initialize", params={"processId": None, "rootUri": tmp_path.as_uri(),
                                                        "capabilities": {}, "initializationOptions": options}),
            message(method="initialized", params={}),
            message(method="textDocument/didOpen", params={"textDocument": {
                "uri": doc.as_uri(), "languageId": "cuda", "version": 1, "text": doc.read_text()}}),
            message(id=2, method="workspace/executeCommand",
                    params={"command": "fsr.optimize", "arguments": [doc.as_uri(), "saxpy"]}),
        ]))
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while not llm.requests and time.monotonic() < deadline:  # the search is waiting for the model
            time.sleep(0.1)
        assert llm.requests
        started = time.monotonic()
        proc.stdin.write(message(id=3, method="shutdown") + message(method="exit"))
        proc.stdin.flush()
        proc.wait(timeout=30)
        assert time.monotonic() - started < 5
