"""An exception in words a user reads: its own message (its first line), never its class name;
a message-less exception says what kind of failure it was in plain words."""

from __future__ import annotations

_PLAIN = {
    "MemoryError": "out of memory", "TimeoutError": "it timed out", "ConnectionError": "a connection failed",
    "FileNotFoundError": "a file was not found", "PermissionError": "permission denied",
    "KeyboardInterrupt": "interrupted", "RecursionError": "too deeply nested",
}


def said(error: BaseException) -> str:
    """What went wrong, for a message: `str(error)`'s first line, or a plain description."""
    text = str(error).strip()
    if text:
        return text.splitlines()[0]
    for kind in type(error).__mro__:
        if kind.__name__ in _PLAIN:
            return _PLAIN[kind.__name__]
    return "an internal error (the log has its details)"
