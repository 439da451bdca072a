"""Workspace commands: fsr.optimize and fsr.cancel (the code actions' commands), and for editor
extensions fsr.optimizeAt and fsr.profileAt (the kernel at a position), fsr.searches (what is running) and
fsr.historyAt (the stored candidates of the kernel at a position)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ...source import SourceText
from ..protocol import flat_args, string_args
from ..server import FsrServer
from .hover import kernel_at_position

if TYPE_CHECKING:
    from ...kernels import Kernel

OPTIMIZE, CANCEL = "fsr.optimize", "fsr.cancel"
OPTIMIZE_AT, SEARCHES, HISTORY_AT = "fsr.optimizeAt", "fsr.searches", "fsr.historyAt"
PROFILE_AT = "fsr.profileAt"


def register(server: FsrServer) -> None:
    from .searches import optimize

    @server.command(OPTIMIZE)
    async def optimize_command(ls: FsrServer, *args: Any) -> str:
        found = string_args(args, OPTIMIZE, "a document URI", "a kernel name")
        if isinstance(found, str):
            return found
        uri, kernel = found
        flat = flat_args(args)
        focus = str(flat[2]) if len(flat) > 2 and flat[2] else ""  # a profile finding to address
        return await optimize(ls, uri, kernel, focus)


    @server.command(CANCEL)
    def cancel_command(ls: FsrServer, *args: Any) -> str:
        found = string_args(args, CANCEL, "a document URI", "a kernel name")
        if isinstance(found, str):
            return found
        uri, kernel = found
        return "cancelling" if ls.searches.cancel(uri, kernel) else f"no search of {kernel} is running"


    @server.command(OPTIMIZE_AT)
    async def optimize_at_command(ls: FsrServer, *args: Any) -> str:
        kernel = _kernel_from_position(ls, args)
        if kernel is None:
            return "no kernel at the cursor"
        return await optimize(ls, str(flat_args(args)[0]), kernel.name)


    @server.command(PROFILE_AT)
    async def profile_at_command(ls: FsrServer, *args: Any) -> str:
        from .profiling import profile

        kernel = _kernel_from_position(ls, args)
        if kernel is None:
            return "no kernel at the cursor"
        return await profile(ls, str(flat_args(args)[0]), kernel.name)


    @server.command(SEARCHES)
    def searches_command(ls: FsrServer, *args: Any) -> list[dict]:
        return [{"uri": uri, "kernel": kernel} for uri, kernel in ls.searches.running]


    @server.command(HISTORY_AT)
    def history_at_command(ls: FsrServer, *args: Any) -> dict:
        kernel = _kernel_from_position(ls, args)
        if kernel is None:
            return {"kernel": None, "rows": []}
        path = Path(ls.workspace.get_text_document(str(flat_args(args)[0])).path)
        from ...search.store import HistoryStore

        with HistoryStore(ls.workspace_root(path)) as store:
            rows = store.history(str(path), kernel.name)
        return {"kernel": kernel.name, "rows": [{"round": r.round + 1, "generator": r.generator, "status": r.status,
                                                 "speedup": r.speedup, "time_ms": r.time_ms, "message": r.message[:200]}
                                                for r in rows]}


def _kernel_from_position(ls: FsrServer, args: tuple) -> Kernel | None:
    """The kernel at (uri, line, character), or None: also for arguments that are not that."""
    try:
        uri, line, character = flat_args(args)[:3]
        doc = ls.document(str(uri))
        position = types.Position(line=int(line), character=int(character))
    except (ValueError, TypeError):
        return None
    return kernel_at_position(SourceText.of(doc.source), position, ls.encoding) if doc is not None else None
