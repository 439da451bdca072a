"""Documents and their diagnostics: nvcc's errors and each kernel's resources on open and save,
spec problems, failed proofs, and what other features add (search wins, profiles, performance
verdicts: `FsrServer.diagnostic_sources`); headers changed on disk re-check the files that
include them."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..check import CheckResult, check_source, with_build
from ..server import FsrServer, is_cuda

if TYPE_CHECKING:
    from ...kernels import Discovery
    from ..document_cache import DocumentState


def register(server: FsrServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: FsrServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        if is_cuda(uri):
            publish_soon(ls, uri)
            if ls.settings.diagnostics_on_open:
                schedule_check(ls, uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: FsrServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if is_cuda(uri):
            ls.cache.discover_soon(uri, lambda: ls.document(uri))

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: FsrServer, params: types.DidSaveTextDocumentParams) -> None:
        if is_cuda(params.text_document.uri):
            schedule_check(ls, params.text_document.uri)
            for hook in ls.save_hooks:  # performance on save
                hook(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FsrServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.to_publish.pop(uri, None)
        ls.checks.pop(uri, None)
        ls.cache.forget(uri)
        task = ls.check_tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        if is_cuda(uri):
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


log = logging.getLogger("fsr_lsp")
LARGE_FILE_PAUSE = 1.0  # seconds before a large file's diagnostics are worked out


def publish_soon(ls: FsrServer, uri: str) -> None:
    """Publish the document's diagnostics from the loop, one document at a time, with requests
    let in between: fifty documents opened at once must not hold up the hover that follows."""
    ls.to_publish[uri] = None
    if ls.publisher is None or ls.publisher.done():
        ls.publisher = asyncio.ensure_future(_publish_pending(ls))


async def _publish_pending(ls: FsrServer) -> None:
    while ls.to_publish:
        await asyncio.sleep(0)  # what the client sent meanwhile (a hover) is handled first
        uri = next(iter(ls.to_publish), None)
        if uri is None:
            return
        del ls.to_publish[uri]
        doc = ls.document(uri)
        if doc is None:
            continue
        state = ls.cache.state(uri, doc)
        if not state.large:
            await ls.cache.discovery(state, ls.encoding)  # beside the loop: a hover meanwhile is answered
            if ls.document(uri) is not None and uri not in ls.to_publish:  # still open, and not due again
                publish(ls, uri)
            continue
        # A large file's diagnostics (every one of ten thousand kernels) are worked out after a
        # pause, its kernels in a process of their own: the hover that follows opening it comes
        # first, and the requests that come meanwhile are answered from the loop.
        await asyncio.sleep(LARGE_FILE_PAUSE)
        doc = ls.document(uri)
        if doc is None or uri in ls.to_publish:  # closed, or changed again: its turn comes
            continue
        state = ls.cache.state(uri, doc)
        try:
            await _first_look(ls, uri, state)
            await ls.cache.discovery(state, ls.encoding)  # kept for its hovers too
            version, diagnostics = await asyncio.to_thread(_diagnostics, ls, uri, state)
        except Exception as error:  # noqa: BLE001 - one document's fault: the others are still published
            log.warning("no diagnostics for %s: %s: %s", uri, type(error).__name__, error)
            continue
        if ls.document(uri) is not None and ls.document(uri).version == version:
            _send(ls, uri, version, diagnostics)


async def _first_look(ls: FsrServer, uri: str, state: DocumentState) -> None:
    """A large document's diagnostics from its kernels as declared, published while its types
    are read (the second half of its discovery's seconds): every diagnostic but the spec
    diagnostics of kernels whose types wait on its aliases and structs, each as it will stay."""
    looked = asyncio.ensure_future(ls.cache.first_look(state, ls.encoding))
    discovery = asyncio.ensure_future(ls.cache.discovery(state, ls.encoding))  # asked next, where the first look left off
    discovery.add_done_callback(lambda f: f.cancelled() or f.exception())  # its fault is the caller's to report
    try:
        first = await looked
    except Exception as error:  # noqa: BLE001 - the discovery still comes
        log.info("no first look at %s: %s: %s", uri, type(error).__name__, error)
        return
    if first is None or discovery.done():
        return
    version, diagnostics = await asyncio.to_thread(_diagnostics, ls, uri, state, first)
    doc = ls.document(uri)
    if doc is not None and doc.version == version and not discovery.done():
        _send(ls, uri, version, diagnostics)


def publish(ls: FsrServer, uri: str) -> None:
    """Every diagnostic of a document, as it is now (a large document's kernels not yet worked
    out: published from the queue, where they are)."""
    doc = ls.workspace.get_text_document(uri)
    state = ls.cache.state(uri, doc)
    if state.large and not state.discovered:
        publish_soon(ls, uri)
        return
    _send(ls, uri, *_diagnostics(ls, uri, state))


def _send(ls: FsrServer, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, version=version,
                                                                        diagnostics=diagnostics))


def _diagnostics(ls: FsrServer, uri: str, state: DocumentState,
                 first: tuple[Discovery, list[types.Diagnostic]] | None = None) -> tuple[int | None, list[types.Diagnostic]]:
    """The document's diagnostics, from its kernels as the cache holds them for its version, or
    from a large document's `first` look (its kernels as declared, the spec diagnostics of those
    settled)."""
    from ..diagnostics import compiler_diagnostics, orphan_spec_diagnostics, resource_diagnostics, spec_diagnostics

    src = state.src
    found = first[0] if first is not None else state.discovery()
    kernels = found.kernels
    check = ls.checks.get(uri, CheckResult())
    enc = ls.encoding
    problems = first[1] if first is not None else state.spec_problems
    diagnostics = (compiler_diagnostics(src, Path(ls.workspace.get_text_document(uri).path).name, check, kernels, enc)
                   + resource_diagnostics(src, kernels, check.resources, enc)
                   + (problems if problems is not None else spec_diagnostics(src, kernels, enc))
                   + orphan_spec_diagnostics(src, found.orphan_specs, enc)
                   + ls.drafts.diagnostics(uri, src, kernels, enc)
                   + [d for source in ls.diagnostic_sources for d in source(ls, uri, src, kernels)])
    return state.version, with_drafts_said(diagnostics, state, kernels, enc)


def with_drafts_said(diagnostics: list[types.Diagnostic], state: DocumentState, kernels: list,
                     encoding: str) -> list[types.Diagnostic]:
    """A kernel's "no spec, none can be inferred" says the draft its code action offers, where
    the document cache holds one for its definition: the Warning and the quick fix agree."""
    from ..diagnostics import lsp_range
    from .drafts import draft_title

    src = state.src
    with state.specs.lock:
        drafted = {key: d.spec for key, d in state.specs.drafted.items()}
    for k in kernels:
        spec = drafted.get((k.name, src.slice(k.definition_span.start_byte, k.definition_span.end_byte)))
        if k.spec is not None or spec is None or spec.origin not in ("drafted", "captured") or not spec.spec:
            continue
        at = lsp_range(src, k.name_span, encoding)
        for d in diagnostics:
            if d.code == "spec-missing" and d.range == at:
                d.message = (f"{k.name} has no @fsr spec; one is drafted from "
                             f"{'the captured launch ' if spec.origin == 'captured' else 'the launch at '}{spec.launch}: "
                             f"the quick fix \"{draft_title(k.name, spec)}\" inserts it (Optimize proves it first)")
    return diagnostics


def schedule_check(ls: FsrServer, uri: str) -> None:
    """An nvcc check of the document (the one before it, if still running, is dropped)."""
    previous = ls.check_tasks.pop(uri, None)
    if previous is not None:
        previous.cancel()
    ls.check_tasks[uri] = asyncio.ensure_future(_check(ls, uri))


async def _check(ls: FsrServer, uri: str) -> None:
    doc = ls.workspace.get_text_document(uri)
    root = Path(ls.workspace.root_path or Path(doc.path).parent)
    build = await asyncio.to_thread(ls.drafts.index_for(root).build, Path(doc.path))  # its compile database
    settings = with_build(ls.settings, build.flags.flags) if build is not None else ls.settings
    result = await check_source(doc.source, Path(doc.path), settings, ls.gpu.remote(ls.settings))
    if result.problem:
        ls.show_once(f"fsr: {result.problem}", types.MessageType.Warning)
    ls.checks[uri] = result
    publish_soon(ls, uri)


def watch(ls: FsrServer) -> None:
    """Follow the workspace on disk (a git checkout, a generator rewriting a header)."""
    from ..watch import WorkspaceWatcher

    root = ls.workspace.root_path
    if root and ls.watcher is None and Path(root).is_dir():
        ls.loop = asyncio.get_running_loop()
        loop = ls.loop
        ls.watcher = WorkspaceWatcher(Path(root), lambda path: loop.call_soon_threadsafe(file_changed, ls, path))
        ls.watcher.start()


def index_launches(ls: FsrServer) -> None:
    """Read the workspace's launches on a thread of their own from the start (150-250 ms for a
    hundred real files), and compile a draft's queries on another (drafting/warm.py), so that
    the first hover on a kernel finds its draft ready (a few milliseconds:
    bench/draft_latency.py) instead of saying "drafting the spec..."."""
    import threading

    from ...drafting.warm import warm_drafting

    threading.Thread(target=warm_drafting, name="fsr-warm-drafting", daemon=True).start()
    root = ls.workspace.root_path
    if root and Path(root).is_dir():
        ls.drafts.index_for(Path(root)).scan_in_background()


def file_changed(ls: FsrServer, path: Path) -> None:
    from ..watch import affects

    ls.drafts.file_changed(path)
    changed = path.resolve()
    if not any(Path(doc.path).resolve() == changed for doc in ls.workspace.text_documents.values()):
        ls.cache.bump(path)  # a launch or a header on disk (an open document counts as the editor holds it)
    for uri, doc in list(ls.workspace.text_documents.items()):
        if is_cuda(uri) and affects(doc.source, Path(doc.path), path):
            schedule_check(ls, uri)
