"""A client's framing and JSON-RPC mistakes, fed to a server subprocess as raw bytes: a bad
header or length costs one message and one warning line, the server reads on from the next
`Content-Length:` header, or, for a length over the limit, exits with one line and a non-zero
code; never a traceback, never a server that stays up and answers nothing. Invalid requests get
-32600 as JSON-RPC and LSP say, and a client's mistakes never pop up in the user's editor."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from ..support.lsp_stream import ROOT, assert_clean, end, frame, init, message, read_in_chunks, session


def raw(id: int, method: str = "shutdown") -> bytes:
    """A request's body alone (no header)."""
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method}).encode()


def hover(id: int) -> bytes:
    return message(id=id, method="textDocument/hover", params={"textDocument": {"uri": "file:///nowhere/x.cu"},
                                                               "position": {"line": 0, "character": 0}})


def warnings(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.decode().splitlines() if " WARNING " in line]


def stopped(proc: subprocess.Popen) -> str:
    """The server killed if it still runs, its streams closed: what it wrote on stderr."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    log = proc.stderr.read().decode()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    return log


# ---------------------------------------------------------------- framing


def test_a_length_over_the_limit_ends_the_server_with_one_line(tmp_path):
    proc, replies, by_id = session(init(tmp_path) + b"Content-Length: 1000000000000\r\n\r\n" + raw(2) + end(), tmp_path)
    assert 1 in by_id and proc.returncode not in (0, None)
    log = proc.stderr.decode()
    assert "Traceback" not in log and "MemoryError" not in log, log
    said = [line for line in log.splitlines() if "1000000000000" in line]
    assert len(said) == 1 and "64 MiB" in said[0], log


def test_a_length_of_2_to_the_31_ends_the_server_at_once_while_the_client_waits(tmp_path):
    """The client keeps the stream open (as an editor does): the server must not sit reading 2 GiB."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "fsr_lsp.server.main"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        proc.stdin.write(init(tmp_path) + b"Content-Length: 2147483648\r\n\r\n" + raw(2) + hover(3))
        proc.stdin.flush()
        rc = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        log = stopped(proc)
    assert rc not in (0, None), f"the server was still running 20 s after the header\n{log}"
    assert "Traceback" not in log, log
    said = [line for line in log.splitlines() if "2147483648" in line]
    assert len(said) == 1 and "64 MiB" in said[0], log


def test_a_length_over_the_limit_ends_the_server_within_2_s_while_an_nvcc_check_runs(tmp_path):
    """Issue 60: the over-limit line came while a document's nvcc check ran, and the server hung
    in its shutdown (asyncio.run waited for the cancelled check). The check's nvcc here sleeps
    for a minute."""
    def over_the_limit(proc):
        proc.stdin.write(b"Content-Length: 1000000000000\r\n\r\n")
        proc.stdin.flush()

    rc = _ended_while_a_check_runs(tmp_path, over_the_limit)
    assert rc not in (0, None)


def test_a_stream_closed_while_an_nvcc_check_runs_ends_the_server_within_2_s(tmp_path):
    """An editor that quits without `exit` while a check runs: the same hang, found beside it."""
    rc = _ended_while_a_check_runs(tmp_path, lambda proc: proc.stdin.close())
    assert rc == 0


def test_the_loop_s_end_gives_a_task_that_will_not_stop_the_grace_alone():
    """The same hang made certain: a task that goes on after its cancel (as the check waiting on
    its nvcc's pipes did) held asyncio.run's end for as long as it ran."""
    import asyncio

    from fsr_lsp.server.framing import run_then_let_go

    released = False
    tasks = []

    async def stubborn() -> None:
        while not released:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                continue

    async def main() -> None:
        tasks.append(asyncio.ensure_future(stubborn()))
        await asyncio.sleep(0.01)

    started = time.monotonic()
    run_then_let_go(main(), grace=0.2)
    took = time.monotonic() - started
    released = True  # let it end: no pending task left to the collector
    loop = tasks[0].get_loop()
    tasks[0].cancel()
    loop.run_until_complete(asyncio.wait(tasks))
    loop.close()
    asyncio.set_event_loop(None)
    assert took < 1.5


def _ended_while_a_check_runs(tmp_path, end) -> int | None:
    """The server's exit code after `end(proc)`, once a document's nvcc check runs; the server
    must be gone within 2 s of it, without a traceback, and its nvcc within 2 s more."""
    nvcc = tmp_path / "slow_nvcc"
    nvcc.write_text("#!/bin/sh\nsleep 60\n")
    nvcc.chmod(0o755)
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    initialize = message(id=1, method="initialize", params={
        "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
        "initializationOptions": {"fsr": {"compiler": {"nvcc": str(nvcc)}}}}) + message(method="initialized", params={})
    opened = message(method="textDocument/didOpen", params={"textDocument": {
        "uri": (tmp_path / "k.cu").as_uri(), "languageId": "cuda", "version": 1, "text": (tmp_path / "k.cu").read_text()}})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "fsr_lsp.server.main"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    rc, took = None, None
    try:
        proc.stdin.write(initialize + opened)
        proc.stdin.flush()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not _running(nvcc):  # the check has started its nvcc
            time.sleep(0.05)
        assert _running(nvcc), "the document's nvcc check never started"
        end(proc)
        started = time.monotonic()
        rc = proc.wait(timeout=10)
        took = time.monotonic() - started
    except subprocess.TimeoutExpired:
        pass
    finally:
        log = stopped(proc)
    assert rc is not None and took <= 2.0, ("the server did not end", took, log)
    assert "Traceback" not in log, log
    gone_by = time.monotonic() + 2.0  # the reaper's (processes.py): it polls for the server's end
    while _running(nvcc) and time.monotonic() < gone_by:
        time.sleep(0.05)
    assert not _running(nvcc), "the check's nvcc outlived the server by 2 s"
    return rc


def _running(program) -> bool:
    """Whether a process runs `program` (read from /proc: no pgrep needed)."""
    from pathlib import Path

    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(program).encode() in cmdline.read_bytes():
                return True
        except OSError:
            continue
    return False


def test_a_length_that_is_not_a_number_costs_that_message_alone(tmp_path):
    stream = init(tmp_path) + b"Content-Length: abc\r\n\r\n" + raw(2, "textDocument/hover") + hover(3) + end()
    proc, replies, by_id = session(stream, tmp_path)
    assert 3 in by_id and "error" not in by_id[3] and 99 in by_id, replies
    assert 2 not in by_id
    said = warnings(proc)
    assert len(said) == 1 and "abc" in said[0], proc.stderr.decode()
    assert_clean(proc, replies)


def test_a_length_shorter_than_its_body_and_the_next_message_is_answered(tmp_path):
    body = raw(2, "textDocument/hover")
    stream = init(tmp_path) + b"Content-Length: %d\r\n\r\n" % (len(body) - 5) + body + hover(3) + end()
    proc, replies, by_id = session(stream, tmp_path)
    assert by_id[None]["error"]["code"] == -32700  # the cut body: not JSON, and said so
    assert 3 in by_id and "error" not in by_id[3] and 99 in by_id, replies
    assert len(warnings(proc)) == 1, proc.stderr.decode()
    assert_clean(proc, replies)


def test_a_length_longer_than_its_body_costs_no_message(tmp_path):
    """The body read runs into the next header: the message before it and the one after are read."""
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
                       "params": {"textDocument": {"uri": "file:///nowhere/x.cu"},
                                  "position": {"line": 0, "character": 0}}}).encode()
    stream = init(tmp_path) + b"Content-Length: %d\r\n\r\n" % (len(body) + 20) + body + hover(3) + hover(4) + end()
    proc, replies, by_id = session(stream, tmp_path)
    assert all(i in by_id and "error" not in by_id[i] for i in (2, 3, 4, 99)), replies
    assert len(warnings(proc)) == 1, proc.stderr.decode()
    assert_clean(proc, replies)


def test_garbage_before_a_header_is_skipped(tmp_path):
    """A stray line, and bytes glued to the next header with no line break at all."""
    stream = init(tmp_path) + b"not a header\r\n" + hover(2) + b'\x00\xff}" tail of something' + hover(3) + end()
    proc, replies, by_id = session(stream, tmp_path)
    assert all(i in by_id and "error" not in by_id[i] for i in (2, 3, 99)), replies
    assert len(warnings(proc)) == 2, proc.stderr.decode()  # one per run of garbage
    assert_clean(proc, replies)


def test_the_reader_is_the_same_whatever_the_chunks():
    """Headers and bodies split anywhere (one byte a read): the same bodies, the same skips."""
    from fsr_lsp.server.framing import MAX_BODY

    stream = (b"junk" + frame(b'{"a": 1}') + b"\r\n" + frame(b"[2]") + b"Content-Type: x\r\n" + frame(b'"3"')
              + b"Content-Length: x\r\n\r\nzz" + frame(b"4"))

    for step in (1, 2, 3, 7, 64, len(stream)):
        assert read_in_chunks(stream, step) == [b'{"a": 1}', b"[2]", b'"3"', b"4"], step
    assert MAX_BODY == 64 * 1024 * 1024


def test_tcp_reads_the_same_way(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "fsr_lsp.server.main", "--tcp", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        with conn:
            conn.sendall(init(tmp_path) + b"Content-Length: abc\r\n\r\n" + raw(2) + hover(3) + end())
            received = b""
            while b'"id": 99' not in received or b'"id": 3' not in received:  # answers in any order
                chunk = conn.recv(65536)
                assert chunk, received
                received += chunk
        assert b'"id": 2' not in received
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


# ---------------------------------------------------------------- JSON-RPC errors


def test_a_request_after_shutdown_is_an_invalid_request(tmp_path):
    didopen = message(method="textDocument/didOpen", params={"textDocument": {
        "uri": (tmp_path / "late.cu").as_uri(), "languageId": "cuda", "version": 1, "text": "int x;\n"}})
    stream = init(tmp_path) + message(id=2, method="shutdown") + hover(3) + didopen + message(method="exit")
    proc, replies, by_id = session(stream, tmp_path)
    assert by_id[2].get("error") is None
    assert by_id[3]["error"]["code"] == -32600, replies
    assert not [r for r in replies if r.get("method") == "textDocument/publishDiagnostics"], replies
    assert proc.returncode == 0
    assert_clean(proc, replies)


def test_a_request_sent_before_shutdown_is_answered_before_it(tmp_path):
    """Hovers are async (they may wait on a draft): one still in flight when `shutdown` arrives is
    answered first, never dropped with no answer at all."""
    doc = (tmp_path / "k.cu")
    text = "__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }\n"
    didopen = message(method="textDocument/didOpen", params={"textDocument": {
        "uri": doc.as_uri(), "languageId": "cuda", "version": 1, "text": text}})
    ask = message(id=2, method="textDocument/hover", params={"textDocument": {"uri": doc.as_uri()},
                                                             "position": {"line": 0, "character": 17}})
    stream = init(tmp_path) + didopen + ask + message(id=3, method="shutdown") + message(method="exit")
    proc, replies, by_id = session(stream, tmp_path)
    answers = [r.get("id") for r in replies if "id" in r and "method" not in r]
    assert 2 in by_id and by_id[2].get("error") is None, replies
    assert answers.index(2) < answers.index(3), answers
    assert proc.returncode == 0


@pytest.mark.parametrize("body, expected_id", [
    (b"[1,2]", None),  # a batch: not LSP
    (b"[]", None),
    (b"5", None),
    (b'{"jsonrpc": "2.0", "id": 5}', 5),  # an id, and no method, result or error
    (b'{"id": 6, "method": "textDocument/hover"}', 6),  # no "jsonrpc"
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"}', None),  # an id that is no id
])
def test_what_is_no_request_is_an_invalid_request(tmp_path, body, expected_id):
    proc, replies, by_id = session(init(tmp_path) + frame(body) + hover(3) + end(), tmp_path)
    errors = [r for r in replies if r.get("error", {}).get("code") == -32600]
    assert len(errors) == 1 and errors[0]["id"] == expected_id, replies
    assert 3 in by_id and 99 in by_id
    assert len(warnings(proc)) == 1, proc.stderr.decode()
    assert_clean(proc, replies)


def test_a_clients_mistakes_in_notifications_are_logged_not_shown(tmp_path):
    """A didOpen without text, a didChange of a document never opened, a cancel without an id:
    a warning each in the log, nothing in the user's face, and the server reads on."""
    stream = init(tmp_path) + b"".join([
        message(method="textDocument/didOpen", params={"textDocument": {
            "uri": (tmp_path / "a.cu").as_uri(), "languageId": "cuda", "version": 1}}),
        message(method="textDocument/didChange", params={
            "textDocument": {"uri": (tmp_path / "never.cu").as_uri(), "version": 2},
            "contentChanges": [{"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 1}},
                                "text": "x"}]}),
        message(method="$/cancelRequest", params={"x": 1}),
        hover(3),
    ]) + end()
    proc, replies, by_id = session(stream, tmp_path)
    assert 3 in by_id and 99 in by_id
    said = warnings(proc)
    assert len(said) == 3, proc.stderr.decode()
    assert "didOpen" in said[0] and "didChange" in said[1] and "cancelRequest" in said[2], said
    assert_clean(proc, replies)


def test_a_clients_answer_that_does_not_fit_is_logged_and_fails_the_request(tmp_path):
    """workspace/configuration answered with a number: a warning, the waiting request fails
    (the server keeps the options it has), no popup, and the server answers on."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "fsr_lsp.server.main"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)

    def next_message() -> dict:
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            byte = proc.stdout.read(1)
            assert byte, header
            header += byte
        return json.loads(proc.stdout.read(int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])))

    watchdog = threading.Timer(30, proc.kill)  # a server that never answers fails the test, not hangs it
    watchdog.start()
    try:
        proc.stdin.write(message(id=1, method="initialize", params={
            "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {"workspace": {"configuration": True}}})
            + message(method="initialized", params={}))
        proc.stdin.flush()
        seen = [next_message()]
        while seen[-1].get("method") != "workspace/configuration":
            seen.append(next_message())
        proc.stdin.write(message(id=seen[-1]["id"], result=5) + end())
        proc.stdin.flush()
        while seen[-1].get("id") != 99:
            seen.append(next_message())
        assert proc.wait(timeout=20) == 0
    finally:
        watchdog.cancel()
        log = stopped(proc)
    assert not [m for m in seen if m.get("method") == "window/showMessage"], seen
    said = [line for line in log.splitlines() if " WARNING " in line]
    assert len(said) == 1 and "does not fit" in said[0], log
    assert "Traceback" not in log, log
