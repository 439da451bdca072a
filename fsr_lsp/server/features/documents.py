"""Documents and their diagnostics: nvcc's errors and each kernel's resources on open and save,
spec problems, failed proofs and search wins; headers changed on disk re-check the files that
include them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from ...kernels import discover
from ...source import SourceText
from ..check import CheckResult, check_source
from ..diagnostics import compiler_diagnostics, orphan_spec_diagnostics, resource_diagnostics, spec_diagnostics
from ..server import FsrServer, is_cuda
from ..watch import WorkspaceWatcher, affects
from .perf_on_save import perf_diagnostics
from .perf_on_save import saved as perf_saved
from .profiling import profile_diagnostics
from .searches import search_diagnostics


def register(server: FsrServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: FsrServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        if is_cuda(uri):
            publish(ls, uri)
            if ls.settings.diagnostics_on_open:
                schedule_check(ls, uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: FsrServer, params: types.DidSaveTextDocumentParams) -> None:
        if is_cuda(params.text_document.uri):
            schedule_check(ls, params.text_document.uri)
            perf_saved(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FsrServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.checks.pop(uri, None)
        task = ls.check_tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        if is_cuda(uri):
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def publish(ls: FsrServer, uri: str) -> None:
    """Every diagnostic of a document, as it is now."""
    doc = ls.workspace.get_text_document(uri)
    src = SourceText(doc.source)
    found = discover(src)
    kernels = found.kernels
    check = ls.checks.get(uri, CheckResult())
    enc = ls.encoding
    diagnostics = (compiler_diagnostics(src, Path(doc.path).name, check, kernels, enc)
                   + resource_diagnostics(src, kernels, check.resources, enc)
                   + spec_diagnostics(src, kernels, enc)
                   + orphan_spec_diagnostics(src, found.orphan_specs, enc)
                   + ls.drafts.diagnostics(uri, src, kernels, enc)
                   + search_diagnostics(ls, uri, src, kernels)
                   + profile_diagnostics(ls, uri, src, kernels)
                   + perf_diagnostics(ls, uri, src, kernels))
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, version=doc.version,
                                                                        diagnostics=diagnostics))


def schedule_check(ls: FsrServer, uri: str) -> None:
    """An nvcc check of the document (the one before it, if still running, is dropped)."""
    previous = ls.check_tasks.pop(uri, None)
    if previous is not None:
        previous.cancel()
    ls.check_tasks[uri] = asyncio.ensure_future(_check(ls, uri))


async def _check(ls: FsrServer, uri: str) -> None:
    doc = ls.workspace.get_text_document(uri)
    result = await check_source(doc.source, Path(doc.path), ls.settings, ls.searches.remote(ls.settings))
    if result.problem:
        ls.show_once(f"fsr: {result.problem}", types.MessageType.Warning)
    ls.checks[uri] = result
    publish(ls, uri)


def watch(ls: FsrServer) -> None:
    """Follow the workspace on disk (a git checkout, a generator rewriting a header)."""
    root = ls.workspace.root_path
    if root and ls.watcher is None and Path(root).is_dir():
        ls.loop = asyncio.get_running_loop()
        loop = ls.loop
        ls.watcher = WorkspaceWatcher(Path(root), lambda path: loop.call_soon_threadsafe(file_changed, ls, path))
        ls.watcher.start()


def file_changed(ls: FsrServer, path: Path) -> None:
    ls.drafts.file_changed(path)
    for uri, doc in list(ls.workspace.text_documents.items()):
        if is_cuda(uri) and affects(doc.source, Path(doc.path), path):
            schedule_check(ls, uri)
