"""LSP work-done progress for background work the user can cancel (a profile, a performance
check, a capture): begun before the work reports anything, and a refusal of the token by the
client costs nothing but the progress."""

from __future__ import annotations

import threading

from lsprotocol import types

from ..redaction import redact
from .search_jobs import new_token
from .server import FsrServer


async def begin(ls: FsrServer, title: str, message: str, cancel: threading.Event) -> str:
    """A cancellable progress; its cancel sets `cancel`. '' when the client has none."""
    if not ls.supports_progress:
        return ""
    token = new_token()
    try:
        await ls.work_done_progress.create_async(token)
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message=message, cancellable=True))
    except Exception:  # a client that refuses a token still gets the result
        return ""
    future = ls.work_done_progress.tokens.get(token)
    if future is not None:
        future.add_done_callback(lambda f: cancel.set() if f.cancelled() else None)
    return token


def report(ls: FsrServer, token: str, message: str) -> None:
    if token:
        ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=redact(message[:200]), cancellable=True))


def end(ls: FsrServer, token: str, message: str = "done") -> None:
    if token:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=redact(message[:200])))
