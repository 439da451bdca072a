"""Optimize in the editor: the search starts in the background (the Optimize use case, in its own
thread), reports LSP work-done progress and `fsr/searchProgress`, and ends as a diagnostic on
the kernel with an Apply action whose edit is built against the document as it is then."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ...redaction import redact
from ...source import SourceText
from ..diagnostics import SOURCE, lsp_position, lsp_range
from ..edits import workspace_edit
from ..search_jobs import SearchJob, new_token
from ..server import FsrServer
from .documents import publish
from .kernel_requests import KernelAsk, opened, planned, refused

if TYPE_CHECKING:
    from ...kernels import Kernel
    from ...search import Progress
    from ...settings import Settings

log = logging.getLogger("fsr_lsp")
PROGRESS_NOTIFICATION = "fsr/searchProgress"  # for editor extensions: {uri, kernel, message, percentage, done}


def register(server: FsrServer) -> None:
    """The commands (features/commands.py) start and cancel searches; a win is a diagnostic."""
    server.diagnostic_sources.append(search_diagnostics)


OPTIMIZE = KernelAsk("Optimize", "searches need", "searching")


async def optimize(ls: FsrServer, uri: str, kernel_name: str, focus: str = "") -> str:
    """Start a search of the kernel and return at once with what was started (or why not);
    `focus`: a profile finding the model is asked to address."""
    from ...workflows.optimize import KernelJob

    why = refused(ls, uri, OPTIMIZE)
    if why:
        return why
    key = (uri, kernel_name)
    if ls.searches.busy(key):
        message = f"{kernel_name} is already being optimized"
        ls.show(message)
        return message
    doc = opened(ls, uri)
    if isinstance(doc, str):
        return doc
    # The file as it is now: its kernel found, its spec planned and the search run on this text
    # (Apply later checks that the kernel is still the one searched).
    cancel = ls.searches.planning[key] = threading.Event()
    try:
        found = await planned(ls, doc, kernel_name, OPTIMIZE, lambda: _model_drafter(doc.settings))
    finally:
        ls.searches.planning.pop(key, None)
    if isinstance(found, str):
        return found
    if cancel.is_set():
        message = f"FSR {kernel_name}: cancelled before the search began"
        ls.show(message)
        return message
    _, plan = found
    if plan.draft is not None:
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info,
                                                     message=f"fsr: drafted @fsr spec for {kernel_name}:\n{plan.draft}"))
    if plan.message:
        ls.show(f"FSR {plan.message} (see the log)" if plan.draft else f"FSR {plan.message}")
    token = await _progress_token(ls, uri, kernel_name)
    run = KernelJob(doc.text, doc.path, kernel_name, doc.root, doc.settings, plan, focus=focus)
    job = ls.searches.start(uri, run, lambda j, p: _progress(ls, j, p), lambda j: _finished(ls, j), token=token)
    notify_progress(ls, job, "starting", 0, done=False)
    return f"optimizing {kernel_name}"


async def _progress_token(ls: FsrServer, uri: str, kernel_name: str) -> str:
    """A work-done progress begun before the search can report anything; its cancel cancels the
    search."""
    token = new_token()
    if ls.supports_progress:
        try:
            await ls.work_done_progress.create_async(token)
        except Exception:  # a client that refuses a token still gets the result
            log.warning("client refused progress token")
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"FSR: optimizing {kernel_name}", cancellable=True, message="starting", percentage=0))
        future = ls.work_done_progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda f: ls.searches.cancel(uri, kernel_name) if f.cancelled() else None)
    return token


def _model_drafter(settings: Settings):
    from ...drafting.by_llm import model_draft
    from ...llmclient import ChatClient

    llm = settings.llm_config()
    chat = ChatClient(llm)
    return lambda src, kernel, launches, why: model_draft(chat, src, kernel, launches, why)


def _progress(ls: FsrServer, job: SearchJob, p: Progress) -> None:
    if job.key not in ls.searches.running:
        return
    total = max(p.rounds, 1)
    best = f", best {p.best_speedup:.2f}x" if p.best_speedup else ""
    message = f"round {p.round}/{p.rounds}: {p.tried} tried{best}" if p.round else p.message[:200]
    percentage = min(99, int(100 * p.round / total))
    notify_progress(ls, job, message, percentage, done=False)
    if ls.supports_progress:
        ls.work_done_progress.report(job.token, types.WorkDoneProgressReport(
            message=redact(message), percentage=percentage, cancellable=True))


def notify_progress(ls: FsrServer, job: SearchJob, message: str, percentage: int, done: bool) -> None:
    ls.protocol.notify(PROGRESS_NOTIFICATION, {"uri": job.uri, "kernel": job.kernel, "message": redact(message),
                                               "percentage": percentage, "done": done})


def _finished(ls: FsrServer, job: SearchJob) -> None:
    from ...kernels import discover_kernels

    outcome = job.outcome
    assert outcome is not None
    if job.proof is not None:
        searched = SourceText(job.searched_text)
        kernel = next((k for k in discover_kernels(searched) if k.name == job.kernel), None)
        if kernel is not None:
            ls.drafts.remember(job.uri, kernel, searched, job.proof)
    notify_progress(ls, job, outcome.message[:200], 100, done=True)
    if ls.supports_progress:
        ls.work_done_progress.end(job.token, types.WorkDoneProgressEnd(message=redact(outcome.message[:200])))
    if outcome.problem:
        ls.show_once(f"FSR {job.kernel}: {outcome.problem}")
    for note in outcome.notes:  # e.g. no profiler: the search ran, with less to tell the model
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"FSR {job.kernel}: {note}"))
    if outcome.status == "improved":
        if ls.settings.auto_apply:
            asyncio.ensure_future(_auto_apply(ls, job))
    elif outcome.status in ("no_win", "cancelled"):
        ls.show(f"FSR {job.kernel}: {outcome.message}")
    elif not outcome.problem:
        ls.show_once(f"FSR {job.kernel}: {outcome.message}")
    if job.uri in ls.workspace.text_documents:
        publish(ls, job.uri)


async def _auto_apply(ls: FsrServer, job: SearchJob) -> None:
    edit, _ = rewrite_edit(ls, job)
    if edit is not None:
        await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=f"FSR rewrite of {job.kernel}"))


def chosen_rewrite(ls: FsrServer, job: SearchJob) -> tuple[Any, str]:
    """The verified rewrite to apply to the document as it is now (search/applicable.py), or
    (None, why not)."""
    from ...search.applicable import applicable
    from ...search.apply import ApplyError

    assert job.outcome is not None and job.outcome.best is not None
    doc = ls.workspace.get_text_document(job.uri)
    try:
        return applicable(doc.source, job.searched_text, job.kernel, job.draft, job.outcome,
                          job.run.settings.search_config().min_gain, job.run.launched_from), ""
    except ApplyError as e:
        return None, str(e)


def rewrite_edit(ls: FsrServer, job: SearchJob) -> tuple[types.WorkspaceEdit | None, str]:
    """The verified rewrite as a versioned edit of the document as it is now, or why not."""
    chosen, why = chosen_rewrite(ls, job)
    if chosen is None:
        return None, why
    doc = ls.workspace.get_text_document(job.uri)
    rewrite = chosen.rewrite
    src = SourceText.of(doc.source)
    edits = [types.TextEdit(range=types.Range(start=lsp_position(src, start, ls.encoding),
                                              end=lsp_position(src, end, ls.encoding)), new_text=new)
             for start, end, new in rewrite.edits]
    r = chosen.tried.result
    said = [chosen.instead] if chosen.instead else []
    annotation = types.ChangeAnnotation(label=f"FSR rewrite of {job.kernel} ({r.speedup:.2f}x, verified)",
                                        needs_confirmation=True,
                                        description=" ".join([job.outcome.message, *said, *rewrite.notes]))
    if rewrite.notes or said:
        ls.show(f"FSR {job.kernel}: " + "; ".join([*said, *rewrite.notes]), types.MessageType.Warning)
    return workspace_edit(ls.edit_support, job.uri, doc.version, edits, annotation), ""


def search_diagnostics(ls: FsrServer, uri: str, src: SourceText, kernels: list[Kernel]) -> list[types.Diagnostic]:
    """An Information diagnostic on each kernel with a verified win."""
    out = []
    for k in kernels:
        job = ls.searches.finished.get((uri, k.name))
        if job is None or job.outcome is None or job.outcome.best is None:
            continue
        launch = " (changes the launch configuration)" if "@fsr" in job.outcome.best.proposal.source else ""
        out.append(types.Diagnostic(range=lsp_range(src, k.name_span, ls.encoding),
                                    message=f"FSR: {job.outcome.message}{launch}",
                                    severity=types.DiagnosticSeverity.Information, source=SOURCE, code="fsr-win",
                                    data={"kernel": k.name}))
    return out
