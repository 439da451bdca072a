"""A Ray cluster that cannot be reached (issue 46 item 4): every command says so in one line and
exits 3, at once (Ray's own client retries for about 30 s first; a time budget then hid the
cause behind "the time budget ran out while measuring the original")."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsr_lsp.evaluator.backends.ray_cluster import unreachable_address

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "saxpy.cu"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # free, and nothing listens once the socket is closed


def test_an_address_nothing_listens_at_is_said_unreachable():
    port = closed_port()
    assert "Connection refused" in unreachable_address(f"ray://127.0.0.1:{port}")
    assert "Connection refused" in unreachable_address(f"127.0.0.1:{port}")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert unreachable_address(f"ray://127.0.0.1:{server.getsockname()[1]}") == ""
    assert unreachable_address("local") == "" and unreachable_address("auto") == ""


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
@pytest.mark.parametrize("command", [
    ["spec", "--check", "saxpy.cu"],
    ["optimize", "saxpy.cu", "--kernel", "saxpy", "--time-budget", "30"],
    ["profile", "saxpy.cu", "--kernel", "saxpy"],
])
def test_every_command_says_it_in_one_line_and_exits_3_at_once(tmp_path, command):
    shutil.copy(EXAMPLE, tmp_path / "saxpy.cu")
    address = f"ray://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", *command, "--ray", address], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert time.monotonic() - started < 15
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"fsr: cannot reach the Ray cluster at {address}") and "Traceback" not in done.stderr, \
        done.stderr
