"""Running the user's command under the injection library, into a new folder
`.fsr/captures/<date-time>/`. The program's exit status is kept, not judged: a program that
fails after its launches still gave them. Python children run with PyTorch's caching
allocator off, so each tensor is an allocation of its own and its extent is the tensor's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..stores import store_folder
from .build import BuildError, injection_library
from .launches import CAPTURES, STDOUT, Capture, read_capture, superseded


class CaptureError(RuntimeError):
    """The capture could not run (no library, a profiler already injected, no such command)."""


@dataclass(frozen=True)
class CaptureOptions:
    """What a capture records and how its program runs."""

    kernels: tuple[str, ...] = ()  # only these kernels' launches (none: every kernel's)
    snapshot_bytes: int = 0  # the inputs a launch saves, at most this many bytes of them
    max_per_kernel: int = 64  # launches recorded a kernel
    timeout: float | None = None  # seconds the program may run, then it is stopped (what it launched is kept)
    nvcc: str = ""  # the compiler the injection library is built with (its toolkit's CUPTI)
    cwd: Path | None = None  # where the program runs (default: the workspace)
    build: str = ""  # the build command that made the program, kept with the capture for `fsr confirm`
    root: Path | None = None  # where the capture's folder goes (default: the workspace's captures)


EVERY_KERNEL = CaptureOptions()  # the defaults: every kernel, no inputs saved, no timeout


def run_capture(command: list[str], workspace: Path, options: CaptureOptions = EVERY_KERNEL, *,
                on_output: Callable[[str], None] | None = None, cancel: threading.Event | None = None) -> Capture:
    """Run `command` (its output to the terminal, or line by line to `on_output`) and read back
    what it launched. `options.timeout` or `cancel` stop the program; what it launched by then is kept."""
    kernels, snapshot_bytes, max_per_kernel, timeout = (options.kernels, options.snapshot_bytes, options.max_per_kernel,
                                                        options.timeout)
    nvcc, cwd, build, root = options.nvcc, options.cwd, options.build, options.root
    if not command:
        raise CaptureError("no command to capture: give the program to run, e.g. fsr capture -- ./app 1024")
    if os.environ.get("CUDA_INJECTION64_PATH"):
        raise CaptureError("CUDA_INJECTION64_PATH is already set (another profiler?): unset it to capture")
    try:
        library = injection_library(nvcc)
    except BuildError as e:
        raise CaptureError(str(e)) from None
    folder = _new_folder(root or workspace / CAPTURES)
    env = dict(os.environ, CUDA_INJECTION64_PATH=str(library), FSR_CAPTURE_OUT=str(folder),
               FSR_CAPTURE_KERNELS=",".join(kernels), FSR_CAPTURE_MAX=str(max_per_kernel),
               FSR_CAPTURE_SNAPSHOT_BYTES=str(snapshot_bytes), PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    meta = {"command": command, "cwd": str(cwd or workspace), "started": time.time(), "kernels": list(kernels),
            "build": build}
    (folder / "capture.json").write_text(json.dumps(meta))
    try:
        proc = subprocess.Popen(command, cwd=cwd or workspace, env=env, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE if on_output else None,
                                text=True, errors="replace")
    except OSError as e:
        shutil.rmtree(folder, ignore_errors=True)  # nothing ran: no empty capture is left behind
        raise CaptureError(f"cannot run {command[0]}: {e.strerror or e}") from None
    kept = open(folder / STDOUT, "w", encoding="utf-8")
    sink = on_output or _terminal
    readers = [threading.Thread(target=_pump, args=(proc.stdout, sink, kept), daemon=True)]
    if on_output:
        readers.append(threading.Thread(target=_pump, args=(proc.stderr, on_output, None), daemon=True))
    for reader in readers:
        reader.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    stopped = ""
    while proc.poll() is None:
        if cancel is not None and cancel.is_set():
            stopped = "cancelled"
        elif deadline is not None and time.monotonic() > deadline:
            stopped = f"stopped after {timeout:g} s"
        if stopped:
            _kill(proc)
            break
        time.sleep(0.05)
    code = proc.wait()
    for reader in readers:
        reader.join(5)
    kept.close()
    # read back before the exit code marks the run finished: from then on a newer capture of the
    # same kernels, ending in another terminal, may prune this folder
    capture = read_capture(folder)
    capture.exit_code = code
    meta.update(exit_code=code, seconds=round(time.time() - meta["started"], 2), stopped=stopped)
    (folder / "capture.json").write_text(json.dumps(meta))
    if stopped:
        capture.problems.append(f"the program was {stopped}: launches after that are missing")
    prune(workspace)
    return capture


def prune(workspace: Path) -> list[Path]:
    """The README's rule: a capture is removed once every kernel it launched was launched
    again by a newer capture of the same program, and one that recorded no launch at all is
    removed at once. What remains is, for each kernel and program ever captured, the newest run."""
    gone = superseded(workspace)
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    return gone


def _new_folder(root: Path) -> Path:
    """A folder of its own, named by the time to the microsecond (names sort as the runs
    started), even when captures start together (two terminals, a batch): created, never just
    looked for. Within one second a name could otherwise come back: a run that ended at once may
    be pruned as superseded, and a second one starting after it would take its folder's name."""
    try:
        store_folder(root)  # a file where the folder belongs: kept aside, said, a folder made
    except OSError as e:
        raise CaptureError(f"cannot make the capture folder {root}: {e.strerror or e}") from None
    now = time.time()
    stamp, n = time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f".{int(now * 1e6) % 1_000_000:06d}", 0
    while True:
        folder = root / (stamp if n == 0 else f"{stamp}.{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            n += 1


def _pump(stream, sink: Callable[[str], None], kept) -> None:
    """Each line of the program's output to `sink`, and to the kept file where there is one."""
    for line in stream:
        if kept is not None:
            kept.write(line)
        sink(line.rstrip("\n"))


def _terminal(line: str) -> None:
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass


def _kill(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(3)
            return
        except subprocess.TimeoutExpired:
            continue
