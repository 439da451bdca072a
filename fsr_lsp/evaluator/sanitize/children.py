"""compute-sanitizer's child processes: one per tool, started waiting for its job (Prewarm)
so that its imports, and then its CUDA context, are done before the job comes; each handed its
job, run side by side, and read back (exit code and output)."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Protocol

from ... import scratch
from ..records import EvalJob
from ..support import find_cuda_tool
from ..worker.gpu_gate import gate
from ..worker.serde import to_json
from .child_protocol import CONTEXT_ASKED, CONTEXT_MADE, GO, LOADED, PHASES_MARK
from .sanitize_main import BATCH_FILE, waiting_child_command

log = logging.getLogger("fsr_lsp.evaluator")
TOOLS = ("memcheck", "racecheck")  # a round leader's tools
EXIT_ON_ERROR = 86
Output = tuple[int | None, str]  # a tool child's exit code (None: stopped, said in the text) and its output
Done = dict[str, tuple[frozenset[str], Output]]  # per tool: the size labels a finished run covered, its output


def find_sanitizer() -> str | None:
    return find_cuda_tool("compute-sanitizer")


class HeadStart(Protocol):
    """What began before `sanitize` was called: children loading, runs already ended."""

    def take(self, tool: str) -> "ToolChild | None": ...

    def done_for(self, job: EvalJob) -> Done: ...

    def close(self) -> None: ...


class Prewarm:
    """Sanitizer children started before the job they will check: Python, pycuda and numpy load
    while the GPU verifies and times the candidate (torch only when the job comes and needs it:
    sanitize_main.preload); then, with `contexts`, each makes its CUDA context under the tool
    (0.3 s under memcheck, 0.7 s under racecheck on an H200: docs/benchmarks.md, session 23),
    while a thread of the parent holds a share of the GPU, taken once the GPU has been idle a
    moment (CONTEXT_IDLE_S): never beside a timed run, rarely before one. Nothing
    else touches the GPU before `sanitize` hands a child its job. Close it when the job fails
    (the children are killed)."""

    def __init__(self, tools: tuple[str, ...] = TOOLS, device_index: int = 0, through_torch: bool = False,
                 contexts: bool = True) -> None:
        """`through_torch`: children that run every job through torch (for comparisons)."""
        tool_path = find_sanitizer()
        self.device_index = device_index
        self.children: dict[str, ToolChild] = {t: ToolChild.start(tool_path, t, device_index, through_torch)
                                               for t in tools} if tool_path else {}
        self._closed = threading.Event()
        self.contexts: threading.Thread | None = None
        if contexts and self.children:
            self.contexts = threading.Thread(target=self._make_contexts, args=(list(self.children.values()),),
                                             daemon=True, name="fsr-sanitizer-contexts")
            self.contexts.start()

    def _make_contexts(self, children: "list[ToolChild]") -> None:
        """Once every child has loaded and the GPU is idle: a share of it, each child asked for its
        context, the share held until each has made it (or said why not, or died)."""
        if not _until(lambda: all(c.loaded() for c in children), self._closed, CONTEXT_LIMIT_S):
            return
        share = gate(self.device_index)
        if not share.take_shared_when_idle(CONTEXT_IDLE_S, self._closed.is_set):
            return
        try:
            for child in children:
                child.ask_context()
            _until(lambda: all(c.context_made() for c in children), self._closed, CONTEXT_LIMIT_S)
        finally:
            share.give_shared()

    def take(self, tool: str) -> "ToolChild | None":
        child = self.children.pop(tool, None)
        if child is not None and child.proc.poll() is not None:  # gave up waiting: a fresh one instead
            child.kill()
            return None
        return child

    def done_for(self, job: EvalJob) -> Done:
        """Nothing has run yet: these children only load."""
        return {}

    @property
    def alive(self) -> bool:
        return bool(self.children) and all(c.proc.poll() is None for c in self.children.values())

    def close(self) -> None:
        self._closed.set()
        for child in self.children.values():
            child.kill()
        self.children.clear()


# The contexts are made once the GPU has been idle this long (seconds): between rounds and searches,
# not between a round's jobs, where the next timed run would wait for them (1.2 s seen on an H200)
CONTEXT_IDLE_S = 0.25
CONTEXT_LIMIT_S = 30.0  # a child's load, and then its context, take no longer (seconds) unless it is stuck


def _until(done: Callable[[], bool], closed: threading.Event, limit: float) -> bool:
    """Poll `done` until it holds (True), or `closed` is set or `limit` seconds pass (False)."""
    deadline = time.monotonic() + limit
    while not done():
        if closed.is_set() or time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class ToolChild:
    """One tool's child process, started waiting for its job (a folder with `job.json`, then `go`)."""

    def __init__(self, tool: str, proc: subprocess.Popen, folder: Path) -> None:
        self.tool, self.proc, self.folder = tool, proc, folder

    @classmethod
    def start(cls, tool_path: str, tool: str, device_index: int, through_torch: bool = False) -> "ToolChild":
        folder = scratch.make("sanitize")
        # No kernel filter: the child launches no kernel but the one checked (torch's input
        # fills too, for the jobs that still go through torch: plain_runs.why_not_plain).
        # --launch-timeout 0: the child may wait long for its job before it touches CUDA.
        cmd = [tool_path, "--tool", tool, "--error-exitcode", str(EXIT_ON_ERROR), "--print-limit", "100",
               "--show-backtrace", "no", "--launch-timeout", "0", *waiting_child_command(folder, device_index, through_torch)]
        with open(folder / "out", "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        return cls(tool, proc, folder)

    def go(self, job: "EvalJob | list[EvalJob]") -> None:
        """Hand the child its job, or several to run one after another under one context."""
        if isinstance(job, list):
            (self.folder / BATCH_FILE).write_text(to_json(job))
        else:
            (self.folder / "job.json").write_text(to_json(job))
        (self.folder / GO).touch()

    def loaded(self) -> bool:
        """Its imports done (or it has ended): what is left before its job is the context."""
        return (self.folder / LOADED).exists() or self.proc.poll() is not None

    def ask_context(self) -> None:
        """Make the CUDA context now (the caller holds a share of the GPU until it is made)."""
        try:
            (self.folder / CONTEXT_ASKED).touch()
        except OSError:  # killed meanwhile: its folder is gone
            pass

    def context_made(self) -> bool:
        return (self.folder / CONTEXT_MADE).exists() or self.proc.poll() is not None

    def output(self) -> str:
        try:
            return (self.folder / "out").read_text(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """Gone at once: a child killed with a CUDA context is reaped (and its folder removed)
        by a daemon thread, while the driver tears the context down, not by the caller."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            self.proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            threading.Thread(target=self._reap, name="fsr-reap-sanitizer", daemon=True).start()
            return
        shutil.rmtree(self.folder, ignore_errors=True)

    def _reap(self) -> None:
        self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def run_children(work: list[tuple[str, "EvalJob | list[EvalJob]"]], tool_path: str, device_index: int, timeout: float,
                 cancel: threading.Event | None = None, prewarm: HeadStart | None = None) -> dict[str, tuple[int | None, str]]:
    """Each (tool, job) in its own child, all side by side (sanitizers may share the GPU with each
    other, never with a timed run: the caller holds the GPU); the exit code (None: killed at the
    timeout or on cancel, said in the text) and the output of each. A list of jobs runs in one
    child, one after another."""
    children = []
    for tool, job in work:
        child = (prewarm.take(tool) if prewarm else None) or ToolChild.start(tool_path, tool, device_index)
        child.go(job)
        children.append(child)
    started = time.monotonic()
    deadline = started + timeout
    log.debug("sanitizers: %s", ", ".join(t for t, _ in work))
    out: dict[str, tuple[int | None, str]] = {}
    try:
        while len(out) < len(children):
            for child in children:
                if child.tool not in out and child.proc.poll() is not None:
                    out[child.tool] = (child.proc.returncode, child.output())
                    log.debug("sanitizer %s: exited %s after %.2f s (%s)", child.tool, child.proc.returncode,
                              time.monotonic() - started, _phases(out[child.tool][1]))
            if len(out) == len(children):
                break
            stop = "cancelled" if cancel is not None and cancel.is_set() else \
                f"did not finish within {timeout:.0f} s" if time.monotonic() > deadline else ""
            if stop:
                for child in children:
                    out.setdefault(child.tool, (None, stop))
                break
            time.sleep(0.05)
    finally:
        for child in children:
            child.kill()
        log.debug("sanitizers done")
    if os.environ.get("FSR_SANITIZER_LOG"):  # the tools' own words, for whoever debugs the parsing
        folder = Path(os.environ["FSR_SANITIZER_LOG"])
        folder.mkdir(parents=True, exist_ok=True)
        for (tool, job), (_, text) in zip(work, out.values()):
            first = job[0] if isinstance(job, list) else job
            who = "original" if first.sanitize_original else "candidate"
            with (folder / f"{tool}-{who}-{os.getpid()}.log").open("a") as f:
                f.write(text)
    return out


def _phases(out: str) -> str:
    """The child's own seconds per step (plain_runs.Phases), or '' where it printed none."""
    line = next((ln for ln in out.splitlines() if ln.startswith(PHASES_MARK)), "")
    return line[len(PHASES_MARK):].strip()
