"""The command fsr.capture ("FSR: Capture launches from a run"): runs the program the setting
fsr.capture.command names (or the command given as the argument) in the workspace under the
capture library, with cancellable progress; its output goes to the log. Afterwards code
actions, hover and Optimize take specs from the new capture (the launch index reads it).

The command fsr.confirm [uri, kernel] (the code action "Confirm `K` in your program", offered
where the kernel's capture ran a build): rebuild, rerun as captured, and compare
(workflows/confirm.py), with cancellable progress; the report is the message."""

from __future__ import annotations

import asyncio
import shlex
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .. import progress
from ..protocol import flat_args
from ..server import FsrServer

if TYPE_CHECKING:
    from ...capture import Capture

CAPTURE = "fsr.capture"
CONFIRM = "fsr.confirm"
MAX_LOG_LINES = 200  # the program's output shown in the log; the rest is counted


def register(server: FsrServer) -> None:
    @server.command(CAPTURE)
    async def capture_command(ls: FsrServer, *args: Any) -> str:
        why = ls.trust.refusal("Capture")  # a capture runs a program in the workspace
        if why:
            ls.show(why, types.MessageType.Warning)
            return why
        flat = flat_args(args)
        if flat and flat[0] is not None and not isinstance(flat[0], str):
            return f"{CAPTURE} takes a command line to run (a string); argument 1 is {repr(flat[0])[:60]}"
        text = flat[0] if flat and flat[0] else ls.settings.capture_command
        if not text.strip():
            message = ("FSR: set fsr.capture.command to the program that launches your kernels (e.g. ./build/app "
                       "4096), then run \"FSR: Capture launches from a run\" again")
            ls.show(message, types.MessageType.Warning)
            return message
        try:
            command = shlex.split(text)
        except ValueError as e:
            ls.show(f"FSR: fsr.capture.command cannot be read: {e}", types.MessageType.Error)
            return str(e)
        root = Path(ls.workspace.root_path or Path.cwd())
        return await _capture(ls, command, root)

    @server.command(CONFIRM)
    async def confirm_command(ls: FsrServer, *args: Any) -> str:
        flat = flat_args(args)
        if len(flat) < 2 or not all(isinstance(a, str) for a in flat[:2]):
            return f"{CONFIRM} takes [uri, kernel]"
        return await _confirm(ls, flat[0], flat[1])


async def _confirm(ls: FsrServer, uri: str, kernel: str) -> str:
    from ...workflows.confirm import confirm

    why = ls.trust.refusal("Confirm")  # it builds and runs the program
    if why:
        ls.show(why, types.MessageType.Warning)
        return why
    root = Path(ls.workspace.root_path or Path.cwd())
    path = Path(ls.workspace.get_text_document(uri).path)
    cancel = threading.Event()
    token = await progress.begin(ls, f"FSR: confirming {kernel} in your program", "rebuilding, then rerunning", cancel)
    loop = asyncio.get_running_loop()

    def output(line: str) -> None:
        loop.call_soon_threadsafe(ls.window_log_message, types.LogMessageParams(
            type=types.MessageType.Log, message=f"confirm: {line}"))

    try:
        done = await asyncio.to_thread(confirm, root, path, kernel, ls.settings, on_output=output, cancel=cancel)
    finally:
        progress.end(ls, token)
    message = f"FSR: {kernel}: {done.status}. " + " ".join(done.lines)
    kind = {"confirmed": types.MessageType.Info, "differs": types.MessageType.Warning}.get(done.status,
                                                                                         types.MessageType.Error)
    ls.show(message, kind)
    return message


def confirmable(ls: FsrServer, kernel: str) -> bool:
    """Whether the workspace's capture of `kernel` ran a build, so Confirm can rebuild and rerun."""
    root = Path(ls.workspace.root_path or Path.cwd())
    capture = ls.drafts.index_for(root).capture()
    return capture is not None and bool(capture.of(kernel)) and bool(capture.run_of(kernel).build)


async def _capture(ls: FsrServer, command: list[str], root: Path) -> str:
    from ...capture import CaptureError, CaptureOptions, run_capture

    cancel = threading.Event()
    token = await progress.begin(ls, "FSR: capturing launches", " ".join(command)[:200], cancel)
    shown = [0]
    loop = asyncio.get_running_loop()

    def output(line: str) -> None:
        shown[0] += 1
        if shown[0] <= MAX_LOG_LINES:
            loop.call_soon_threadsafe(ls.window_log_message, types.LogMessageParams(
                type=types.MessageType.Log, message=f"capture: {line}"))

    try:
        options = CaptureOptions(snapshot_bytes=ls.settings.capture_snapshot_bytes, nvcc=ls.settings.compiler_nvcc)
        capture = await asyncio.to_thread(run_capture, command, root, options, on_output=output, cancel=cancel)
    except CaptureError as e:
        message = f"FSR: capture failed: {e}"
        ls.show(message, types.MessageType.Error)
        return message
    finally:
        progress.end(ls, token)
    message = summary(capture)
    ls.show(message, types.MessageType.Info if capture.launches else types.MessageType.Warning)
    return message


def summary(capture: Capture) -> str:
    kernels = sorted({x.base for x in capture.launches})
    if not kernels:
        return (f"FSR: `{' '.join(capture.command)}` launched no kernel that could be recorded"
                + (f" (exit status {capture.exit_code})" if capture.exit_code else "")
                + ("; " + "; ".join(capture.problems) if capture.problems else ""))
    shown = ", ".join(kernels[:8]) + (f" and {len(kernels) - 8} more" if len(kernels) > 8 else "")
    total = sum(x.count for x in capture.launches)
    return (f"FSR: captured {total} launch{'es' if total != 1 else ''} of {len(kernels)} kernel"
            f"{'s' if len(kernels) != 1 else ''} ({shown}); Optimize and the spec quick fix now use them"
            + (f" (the program exited with status {capture.exit_code})" if capture.exit_code else ""))
