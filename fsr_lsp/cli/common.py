"""What every command shares: one-line failures, and a console that never shows a secret."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

from ..redaction import redact


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


def make_console(stderr: bool = False, **kwargs: Any) -> Console:
    """A rich console on stdout (or stderr) that never shows a secret."""
    return Console(file=_Redacting(sys.stderr if stderr else sys.stdout), **kwargs)
