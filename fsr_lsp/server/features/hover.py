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
from .searches import kernel_spec

if TYPE_CHECKING:
    from ...kernels import Kernel


def register(server: FsrServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: FsrServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        if not is_cuda(uri):
            return None
        doc = ls.document(uri)
        if doc is None:
            return None
        src = SourceText.of(doc.source)
        kernel = kernel_at_position(src, params.position, ls.encoding)
        if kernel is None:
            return None
        profiled = profile_hover(ls, uri, src, params.position.line, kernel)
        if profiled and not _on_name(src, kernel, params.position, ls.encoding):
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=redact("\n".join(profiled))))
        lines = [f"**`{kernel.name}`** ({len(kernel.params)} parameters)"]
        if kernel.spec is None and kernel.complete:
            lines += hover_lines(kernel_spec(ls, uri, kernel), ls.drafts.proof_of(uri, kernel, src))
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


def _stored_best(ls: FsrServer, path: Path, kernel: str) -> str:
    store_file = ls.workspace_root(path) / ".fsr" / "history.sqlite"
    if not store_file.exists():
        return ""
    from ...search.store import HistoryStore

    with HistoryStore(ls.workspace_root(path)) as store:
        rows = store.history(str(path), kernel)
    timed = [r for r in rows if r.status == "verified" and r.speedup]
    if not timed:
        return f"{len(rows)} stored candidates, none verified" if rows else ""
    best = max(timed, key=lambda r: r.speedup or 0)
    return f"best stored candidate: {best.speedup:.2f}x ({best.time_ms:.4g} ms), {len(rows)} candidates in the history"
