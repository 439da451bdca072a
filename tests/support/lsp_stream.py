"""The language server driven over its stdio by raw bytes: frames written by hand, a session run
to the end of its input, what it answered, and the server's own frame reader fed in chunks."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def message(**kw) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", **kw}).encode())


def session(stream: bytes, cwd) -> tuple[subprocess.CompletedProcess, list[dict], dict]:
    """The server fed `stream` on stdin to the end: what it wrote, its messages, its answers by id."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "fsr_lsp.server.main"], input=stream, capture_output=True, timeout=60,
                          env=env, cwd=cwd)
    replies = [json.loads(body) for body in re.split(rb"Content-Length: \d+\r\n(?:[^\r\n]+\r\n)*\r\n", proc.stdout)
               if body.strip()]
    return proc, replies, {r.get("id"): r for r in replies if "id" in r and ("result" in r or "error" in r)}


def init(tmp_path) -> bytes:
    return message(id=1, method="initialize", params={"processId": None, "rootUri": tmp_path.as_uri(),
                                                       "capabilities": {}}) + message(method="initialized", params={})


def end() -> bytes:
    return message(id=99, method="shutdown") + message(method="exit")


def assert_clean(proc: subprocess.CompletedProcess, replies: list[dict]) -> None:
    log = proc.stderr.decode()
    assert "Traceback" not in log and "Error" not in log.replace("ERROR", ""), log
    assert not [r for r in replies if r.get("method") == "window/showMessage"], replies


def read_in_chunks(stream: bytes, step: int) -> list[bytes]:
    """The bodies the server's frame reader finds in `stream`, read at most `step` bytes at a
    time (more than it asks for, as TCP gives)."""
    from fsr_lsp.server.framing import FrameReader

    async def bodies() -> list[bytes]:
        data = bytearray(stream)

        async def read_some(wanted: int) -> bytes:
            chunk = bytes(data[:step])
            del data[:step]
            return chunk

        frames, out = FrameReader(read_some), []
        while (body := await frames.next_body()) is not None:
            out.append(body)
        return out

    return asyncio.run(bodies())
