"""The server's logging: quiet by default, and never a document's text at INFO or above.

pygls logs every JSON-RPC payload at INFO ("Sending data: ..."): the whole document on open,
the edits it sends, diagnostics with source lines. That is slow on big files and leaks source
code into client logs. So pygls's loggers stay at WARNING unless debugging is asked for
(`--log-level debug` or the `logLevel` setting), and even then its INFO records are shown as
DEBUG. fsr's own log (no document text in it) follows the level asked for.
"""

from __future__ import annotations

import logging
import sys

from ..redaction import RedactingFilter

PROTOCOL = "pygls"
OWN = "fsr_lsp"
LEVELS = ("debug", "info", "warning", "error")


class _ProtocolAtDebug(logging.Filter):
    """pygls's INFO records carry payloads: they are DEBUG records here."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(PROTOCOL) and record.levelno == logging.INFO:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def configure(level: str = "info", file: str | None = None) -> None:
    """Where the log goes (stderr, or a file) and how much of it."""
    handler = logging.FileHandler(file) if file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_ProtocolAtDebug())
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG)
    # watchdog logs each event at DEBUG: with the log file in the workspace, every line written
    # would be an event, logged, written, ... (1.2 MB/s and a busy core on an idle server)
    logging.getLogger("watchdog").setLevel(logging.WARNING)
    set_level(level)


def set_level(level: str) -> str:
    """Apply a level name; returns a problem ('' when fine)."""
    name = (level or "info").strip().lower()
    if name not in LEVELS:
        return f"log level {level!r} is not one of {', '.join(LEVELS)}"
    value = getattr(logging, name.upper())
    logging.getLogger(OWN).setLevel(value)
    logging.getLogger(PROTOCOL).setLevel(logging.DEBUG if value <= logging.DEBUG else logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.setLevel(value)
    return ""
