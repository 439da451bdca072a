"""Every process fsr starts dies with it, whatever ends it (kill -9 included).

The long-lived process (the language server) marks its environment with a tree id that every
child inherits: compilers and their own children, the evaluator's worker, sanitizers and
profilers, captured programs, even those started in a session of their own so a timeout can
kill their group. A reaper, a small process of its own, watches the server: when the server is
gone it kills every process holding the mark, and their descendants (a child started with a
scrubbed environment, as Ray starts its agents, holds no mark). Nothing has to register; a child
started through any API is covered. On Linux only (/proc); elsewhere the reaper is not started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from typing import Any

MARK = "FSR_PROCESS_TREE"
START_WAIT_SECONDS = 1.0  # how long an exit waits for a child's start under way
_STARTING = threading.Lock()
POLL_SECONDS = 0.1  # how often the reaper looks for its parent

# The reaper, self-contained (it runs with -S: no site packages, quick to start).
_REAPER = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the server to handle
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # so is a SIGTERM sent to the whole group
mark, parent = sys.argv[1], int(sys.argv[2])
needle = ("\0" + sys.argv[3] + "=" + mark + "\0").encode()
while os.getppid() == parent:
    time.sleep(POLL)
me = os.getpid()
for _ in range(5):
    marked, parents = set(), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open("/proc/" + entry + "/stat", "rb") as f:
                parents[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open("/proc/" + entry + "/environ", "rb") as f:
                env = b"\0" + f.read() + b"\0"
        except (OSError, ValueError, IndexError):
            continue
        if needle in env:
            marked.add(int(entry))
    # and their descendants: a child started with a scrubbed environment (Ray's agents) carries
    # no mark, yet is part of the tree
    doomed, grew = set(marked), True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in doomed and pid not in doomed and pid != me}
        doomed |= more
        grew = bool(more)
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if not doomed:
        break
    time.sleep(0.05)
""".replace("POLL", str(POLL_SECONDS))


def mark_tree() -> str:
    """Mark this process's environment (children inherit it); the tree's id."""
    os.environ[MARK] = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    return os.environ[MARK]


def start_reaper(mark: str) -> subprocess.Popen | None:
    """The reaper of this process's tree (None where /proc is missing). Start it from the main
    thread before any other child."""
    if not os.path.isdir("/proc/self"):
        return None
    env = {k: v for k, v in os.environ.items() if k != MARK}  # the reaper is no part of the tree it kills
    return subprocess.Popen([sys.executable, "-S", "-c", _REAPER, mark, str(os.getpid()), MARK], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            close_fds=True)


def marked(mark: str, whole: bool = True) -> list[int]:
    """Processes that hold `mark` (for tests and for a last look); with `whole` false, any mark
    that begins with it (`f"{pid}-"`: the tree of the process `pid`, whatever its id)."""
    needle = f"\0{MARK}={mark}{chr(0) if whole else ''}".encode()
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in b"\0" + f.read() + b"\0":
                    found.append(int(entry))
        except OSError:
            continue
    return found


def exit_on_signals(code_of: dict[int, int] | None = None) -> None:
    """SIGTERM and SIGINT end the process at once (the reaper then ends its children): a server
    asked to stop must not wait on a compile, a search or a blocked read."""
    codes = code_of or {signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGINT: 128 + signal.SIGINT}

    def stop(signum: int, _frame: object) -> None:
        try:
            sys.stderr.flush()
        finally:
            os._exit(codes.get(signum, 1))

    for sig in codes:
        signal.signal(sig, stop)


def start_child(proc: Any) -> None:
    """`proc.start()` for a multiprocessing child, where `hard_exit` cannot cut in: a spawned
    child is exec'd first and handed its pickled start through a pipe after, and one whose parent
    ends between the two prints `EOFError: Ran out of input` into the editor's log."""
    with _STARTING:
        proc.start()


def hard_exit(code: int) -> None:
    """End this process now: the log closed, what stdout and stderr hold flushed, and no
    interpreter teardown (an asyncio loop torn down around compiles in flight prints tracebacks
    into the editor's output panel; children are the reaper's). A child's start under way is
    let finish first (at most `START_WAIT_SECONDS`)."""
    import logging

    _STARTING.acquire(timeout=START_WAIT_SECONDS)

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
