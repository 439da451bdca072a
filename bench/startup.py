"""How soon fsr answers (no GPU needed): the median of N runs of `fsr --help`, from spawning it to
its exit, and of the language server's start, from spawning `fsr-lsp` to the `initialize`
response on its stdout (the request is written at once, as an editor does). Targets on the
2-core development machine: under 0.3 s and under 0.5 s (issue 37). A third row times a bare
Python importing lsprotocol's types and pygls's server: the floor under any pygls server, which
says how fast the machine is at the time (it varies on a shared one).

  python bench/startup.py [--runs 15]

The `fsr` and `fsr-lsp` scripts beside the running Python are used (an installed checkout);
`python -m fsr_lsp.cli.entry` and `python -m fsr_lsp.server.main` where there are none.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, save, table

TARGETS = {"fsr --help": 0.3, "fsr-lsp: initialize answered": 0.5}
FLOOR = "python: import lsprotocol.types, pygls.lsp.server"  # what any pygls server pays first: no target


def command(script: str, module: str) -> list[str]:
    beside = Path(sys.executable).parent / script
    return [str(beside)] if beside.exists() else [sys.executable, "-m", module]


def environment() -> dict[str, str]:
    """This checkout, as installed: its bytecode written once (by the first run) and read after."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FSR_", "PYTHONDONTWRITEBYTECODE"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def floor_seconds() -> float:
    """Until the imports are done (not the exit: tearing down lsprotocol's classes takes a while)."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "import lsprotocol.types, pygls.lsp.server; print('imported', flush=True)"],
                            stdout=subprocess.PIPE, env=environment())
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"imported"
    done = time.perf_counter() - started
    proc.wait()
    return done


def help_seconds() -> float:
    started = time.perf_counter()
    subprocess.run(command("fsr", "fsr_lsp.cli.entry") + ["--help"], stdout=subprocess.DEVNULL, check=True,
                   env=environment())
    return time.perf_counter() - started


def framed(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def read_message(stream) -> dict:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise RuntimeError("the server closed its output before answering")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def initialize_seconds(workspace: Path) -> float:
    """From spawning the server to the `initialize` response (the server's log goes to a pipe
    nobody waits on: stderr is discarded)."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"processId": os.getpid(), "rootUri": workspace.as_uri(), "capabilities": {}}}
    started = time.perf_counter()
    proc = subprocess.Popen(command("fsr-lsp", "fsr_lsp.server.main"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=workspace, env=environment())
    try:
        proc.stdin.write(framed(request))
        proc.stdin.flush()
        while True:
            message = read_message(proc.stdout)
            if message.get("id") == 1:
                answered = time.perf_counter() - started
                if "result" not in message:
                    raise RuntimeError(f"initialize failed: {message}")
                break
        for m in ({"jsonrpc": "2.0", "method": "initialized", "params": {}},
                  {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}, {"jsonrpc": "2.0", "method": "exit"}):
            proc.stdin.write(framed(m))
        proc.stdin.close()
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return answered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    workspace = Path(os.environ.get("TMPDIR", "/tmp")) / "fsr-startup-bench"
    workspace.mkdir(exist_ok=True)
    help_seconds(), initialize_seconds(workspace)  # a first run of each fills the file cache
    times: dict[str, list[float]] = {name: [] for name in (*TARGETS, FLOOR)}
    for _ in range(args.runs):  # interleaved, so a busy moment of the machine touches all three
        times[FLOOR].append(floor_seconds())
        times["fsr --help"].append(help_seconds())
        times["fsr-lsp: initialize answered"].append(initialize_seconds(workspace))
        time.sleep(0.5)  # the server's reaper ends its children once it is gone: not in the next run's time
    rows = []
    for name, values in times.items():
        median = statistics.median(values)
        target = TARGETS.get(name)
        rows.append([name, f"{median:.3f}", f"{min(values):.3f}", f"{max(values):.3f}",
                     f"< {target}" if target else "-", ("yes" if median < target else "NO") if target else "-"])
    table(f"start-up, seconds ({args.runs} runs each, {os.cpu_count()} cores)",
          ["what", "median", "min", "max", "target", "met"], rows)
    save("startup", {"runs": args.runs, "cores": os.cpu_count(), "seconds": times})
    return 0 if all(r[-1] != "NO" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
