"""What every command shares: the file and kernel it names, read or refused in one line;
one-line failures; a console that never shows a secret."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from ..redaction import redact


class InputError(Exception):
    """What the user gave cannot be used; the message is one line, the exit status 2."""


def read_source(path: Path) -> str:
    """A source file's text, or InputError saying plainly why not (missing, unreadable, not
    UTF-8: which byte, where)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"{path} is not UTF-8 text: byte 0x{data[e.start]:02x} on line {line} (offset {e.start}); "
                         "save it as UTF-8") from None


def kernel_of(file: Path, name: str) -> tuple[str, Any]:
    """The file's text and its kernel `name`, or InputError (exit 2) saying why not."""
    from ..kernels import find_kernel

    source = read_source(file)
    kernel = find_kernel(source, name)
    if kernel is None:
        raise InputError(f"no kernel named {name} in {file}")
    return source, kernel


def fail(message: str, code: int) -> int:
    """One line on stderr, no traceback; the exit status to return."""
    print(redact(f"fsr: {message}"), file=sys.stderr)
    return code


class _Redacting:
    """A text stream that redacts what is written to it (the console's last line of defence:
    texts from outside are redacted where they enter already)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(redact(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


SIGPIPE_EXIT = 128 + 13  # what a shell reports for a writer SIGPIPE ended, as `head` leaves `yes`


def closed_pipe() -> int:
    """The reader of fsr's output went away (`fsr spec --json ... | head -1`): end quietly, as Unix
    tools do; what is still buffered goes nowhere, so the interpreter's own last flush cannot fail
    with a second traceback. The exit status to return."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return SIGPIPE_EXIT


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """As `closed_pipe` (rich's own ends with status 1, as if fsr had failed)."""
        raise SystemExit(closed_pipe())


PIPE_WIDTH = 4000  # a pipe or a file has no width: lines (compiler text included) stay whole


def make_console(stderr: bool = False, **kwargs: Any) -> Console:
    """A rich console on stdout (or stderr) that never shows a secret. Into a pipe or a file it
    wraps nothing: a line a script greps for stays one line."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if not terminal and "width" not in kwargs and not os.environ.get("COLUMNS"):
        kwargs.setdefault("soft_wrap", True)
        kwargs["width"] = PIPE_WIDTH
    return _Console(file=_Redacting(stream), **kwargs)
