"""The server logs quietly: no JSON-RPC payload, so no document text, at INFO or above; the
payloads come back only when debugging is asked for."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from fsr_lsp.server import logs

MARKER = "the_source_text_of_a_private_kernel_4711"


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def session(tmp_path: Path, *args: str) -> str:
    """A real server process: initialize, open a document, shut down; its log file."""
    log = tmp_path / "server.log"
    # The kernel's name is document text the server sends back (in diagnostics and the hover).
    text = f"// {MARKER}\n__global__ void {MARKER}(float* y) {{ y[0] = 1; }}\n"
    uri = (tmp_path / "k.cu").as_uri()
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
                    "initializationOptions": {"fsr": {"diagnostics": {"onOpen": False}}}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen",
         "params": {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
         "params": {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 18}}},
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    proc = subprocess.run([sys.executable, "-m", "fsr_lsp.server.main", "--log-file", str(log), *args],
                          input=b"".join(frame(m) for m in messages), capture_output=True, timeout=60)
    assert b'"id": 2' in proc.stdout or b'"id":2' in proc.stdout, proc.stdout[-2000:]
    return log.read_text()


def test_by_default_the_log_holds_no_payload_and_no_document_text(tmp_path):
    text = session(tmp_path)
    assert MARKER not in text and "Sending data" not in text


def test_debugging_brings_the_payloads_back_at_debug_level_only(tmp_path):
    text = session(tmp_path, "--log-level", "debug")
    lines = [line for line in text.splitlines() if MARKER in line]
    assert lines and all(" DEBUG " in line for line in lines), lines[:3]


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logging.getLogger("pygls").level, logging.getLogger("fsr_lsp").level)
    yield
    root.handlers[:], root.level = saved[0], saved[1]
    logging.getLogger("pygls").setLevel(saved[2])
    logging.getLogger("fsr_lsp").setLevel(saved[3])


def test_the_level_setting_raises_and_lowers_it_and_refuses_nonsense(tmp_path, restore_logging):
    log = tmp_path / "log"
    logs.configure("info", str(log))
    logging.getLogger("pygls.protocol.json_rpc").info("Sending data: %s", MARKER)
    logging.getLogger("fsr_lsp").info("fsr's own line")
    assert logs.set_level("debug") == ""
    logging.getLogger("pygls.protocol.json_rpc").info("Sending data: %s", "second " + MARKER)
    assert logs.set_level("warning") == ""
    logging.getLogger("fsr_lsp").info("not shown at warning")
    assert "not one of" in logs.set_level("verbose")
    text = log.read_text()
    assert "fsr's own line" in text and "not shown at warning" not in text
    assert f"Sending data: {MARKER}" not in text and f"DEBUG pygls.protocol.json_rpc: Sending data: second {MARKER}" in text


def test_a_debug_log_inside_the_watched_workspace_does_not_feed_itself(tmp_path):
    """watchdog logs each event at DEBUG: a log file in the workspace must not become a loop of
    events about its own lines."""
    import time

    from fsr_lsp.server.watch import WorkspaceWatcher

    log = tmp_path / "fsr-debug.log"
    logs.configure("debug", str(log))
    watcher = WorkspaceWatcher(tmp_path, lambda path: None)
    watcher.start()
    try:
        logging.getLogger("fsr_lsp").debug("one line")
        time.sleep(1.0)
        size = log.stat().st_size
        time.sleep(1.0)
        assert log.stat().st_size == size, "the log keeps growing on an idle server"
    finally:
        watcher.stop()
        logs.configure("info", None)
