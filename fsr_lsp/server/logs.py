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


class _TracebacksAtDebug(logging.Filter):
    """A traceback is for debugging: below DEBUG a record keeps its first line (pygls logs a
    58-line exception group for one request with bad params)."""

    def __init__(self) -> None:
        super().__init__()
        self.debugging = False

    def filter(self, record: logging.LogRecord) -> bool:
        if self.debugging:
            return True
        if record.name.startswith(PROTOCOL) and record.getMessage().startswith(_SAID_BY_FSR):
            return False  # fsr logs its own line for these (and answers the client)
        if record.exc_info or record.exc_text:
            record.exc_info, record.exc_text = None, None
        message = record.getMessage()
        if "\n" in message:
            first = message.split("\n", 1)[0].rstrip(": ")
            record.msg, record.args = f"{first} (the traceback is logged at --log-level debug)", None
        return True


# pygls's records about a message fsr has answered itself (-32602, -32700) with its own log line
_SAID_BY_FSR = ("Unable to deserialize message", "Unable to handle message", 'Unknown message "namespace(jsonrpc=')
_TRACEBACKS = _TracebacksAtDebug()


def configure(level: str = "info", file: str | None = None) -> None:
    """Where the log goes (stderr, or a file) and how much of it."""
    handler = logging.FileHandler(file) if file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_ProtocolAtDebug())
    handler.addFilter(_TRACEBACKS)
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
    _TRACEBACKS.debugging = value <= logging.DEBUG
    logging.getLogger(OWN).setLevel(value)
    logging.getLogger(PROTOCOL).setLevel(logging.DEBUG if value <= logging.DEBUG else logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.setLevel(value)
    return ""
