"""Hover on a kernel: its parameters, where its spec comes from (and its proof), its resources,
and the last search's result or the best stored candidate."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ...redaction import redact
from ...source import Position, SourceText
from ..check import CheckResult
from ..diagnostics import lsp_range
from ..server import FsrServer, is_cuda
from .drafts import hover_lines
from .profiling import hover_lines as profile_hover
from .kernel_requests import known_spec

if TYPE_CHECKING:
    from ...kernels import Kernel

DRAFTING = "drafting the spec..."  # what the hover says until the kernel's first draft is done


def register(server: FsrServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: FsrServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        if not is_cuda(uri):
            return None
        doc = ls.document(uri)
        if doc is None:
            return None
        state = ls.cache.state(uri, doc)  # what this version's hovers share (document_cache.py)
        kernel = await ls.cache.kernel_at(state, params.position, ls.encoding)
        if kernel is None:
            return None
        src = state.src
        profiled = profile_hover(ls, uri, src, params.position.line, kernel)
        if profiled and not _on_name(src, kernel, params.position, ls.encoding):
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=redact("\n".join(profiled))))
        lines = [f"**`{kernel.name}`** ({len(kernel.params)} parameters)"]
        if kernel.spec is None and kernel.complete:
            known = await known_spec(ls, state, kernel)
            if known is None:
                lines.append(f"- spec: {DRAFTING} (hover again in a moment)")
            else:
                lines += hover_lines(known.spec, ls.drafts.proof_of(uri, kernel, src))
                if not known.current:
                    lines.append(f"- (as drafted before the file's last edit: {DRAFTING})")
        res = ls.checks.get(uri, CheckResult()).resources.get(kernel.name)
        if res is not None:
            lines.append(f"- {res.registers} registers, {res.shared_bytes} B shared, {res.stack_bytes} B stack, "
                         f"{res.spill_stores} B spill stores, {res.spill_loads} B spill loads")
        job = ls.searches.finished.get((uri, kernel.name))
        if job is not None and job.outcome is not None:
            lines.append(f"- last search: {job.outcome.message}")
        elif (uri, kernel.name) in ls.searches.running:
            lines.append("- a search is running")
        else:
            best = _stored_best(ls, Path(doc.path), kernel.name)
            if best:
                lines.append(f"- {best}")
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=redact("\n".join(lines))),
                           range=lsp_range(src, kernel.name_span, ls.encoding))


def _on_name(src: SourceText, kernel: Kernel, position: types.Position, encoding: str) -> bool:
    return src.line_of(kernel.name_span.start_byte) == position.line


def kernel_at_position(src: SourceText, position: types.Position, encoding: str) -> Kernel | None:
    from ...kernels import kernel_at

    return kernel_at(src, src.byte_at(Position(position.line, position.character), encoding))


_BEST: dict[tuple[str, str], tuple[tuple[int, ...], str]] = {}  # (file, kernel) -> (the store's stamp, line)


def _stored_best(ls: FsrServer, path: Path, kernel: str) -> str:
    """What the workspace's history says of the kernel, read again only when the store changed."""
    store_file = ls.workspace_root(path) / ".fsr" / "history.sqlite"
    try:
        info = store_file.stat()
    except OSError:
        return ""
    try:  # a write lands in the write-ahead log first
        wal = store_file.with_name(store_file.name + "-wal").stat()
        stamp = (info.st_mtime_ns, info.st_size, wal.st_mtime_ns, wal.st_size)
    except OSError:
        stamp = (info.st_mtime_ns, info.st_size, 0, 0)
    known = _BEST.get((str(path), kernel))
    if known is not None and known[0] == stamp:
        return known[1]
    line = _read_best(ls, path, kernel)
    _BEST[(str(path), kernel)] = (stamp, line)
    return line


def _read_best(ls: FsrServer, path: Path, kernel: str) -> str:
    from ...search.store import HistoryStore

    with HistoryStore(ls.workspace_root(path)) as store:
        rows = store.history(str(path), kernel)
    timed = [r for r in rows if r.status == "verified" and r.speedup]
    if not timed:
        return f"{len(rows)} stored candidates, none verified" if rows else ""
    best = max(timed, key=lambda r: r.speedup or 0)
    return f"best stored candidate: {best.speedup:.2f}x ({best.time_ms:.4g} ms), {len(rows)} candidates in the history"
