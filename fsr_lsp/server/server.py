"""The fsr language server: LSP features only. Compilation runs as an asyncio subprocess, GPU
work in the evaluator's worker process, searches in their own threads; no handler blocks."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..kernels import Kernel, discover, discover_kernels, kernel_at
from ..search import Progress
from ..drafting.draft import Draft
from ..drafting.by_llm import model_draft
from ..drafting.origin import KernelSpec
from ..llmclient import ChatClient, LLMConfig
from ..redaction import redact
from ..search.apply import ApplyError, rewrite_if_unchanged, rewrite_with_block
from ..search.store import HistoryStore
from ..source import Position, SourceText
from ..specs import spec_template
from .check import CheckResult, check_source
from .edits import EditSupport, workspace_edit
from .logs import set_level
from .drafts import Drafts, draft_title, hover_lines
from .diagnostics import (SOURCE, compiler_diagnostics, lsp_position, lsp_range, orphan_spec_diagnostics,
                          resource_diagnostics, spec_diagnostics)
from .searches import SearchJob, Searches, new_token
from .settings import Settings, load_settings
from .watch import WorkspaceWatcher, affects

log = logging.getLogger("fsr_lsp")
CUDA_SUFFIXES = (".cu", ".cuh")
OPTIMIZE, CANCEL = "fsr.optimize", "fsr.cancel"
OPTIMIZE_AT, SEARCHES, HISTORY_AT = "fsr.optimizeAt", "fsr.searches", "fsr.historyAt"
PROGRESS_NOTIFICATION = "fsr/searchProgress"  # for editor extensions: {uri, kernel, message, percentage, done}
APPLY_KIND = types.CodeActionKind.RefactorRewrite


class FsrServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("fsr-lsp", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.settings = Settings()
        self.checks: dict[str, CheckResult] = {}
        self.check_tasks: dict[str, asyncio.Task] = {}
        self.searches = Searches()
        self.drafts = Drafts()
        self.shown: set[str] = set()  # messages shown once
        self.watcher: WorkspaceWatcher | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------ what leaves for the client, redacted

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        params.message = redact(params.message)
        super().window_show_message(params)

    def window_log_message(self, params: types.LogMessageParams) -> None:
        params.message = redact(params.message)
        super().window_log_message(params)

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        for d in params.diagnostics:
            d.message = redact(d.message)
        super().text_document_publish_diagnostics(params)

    # ------------------------------------------------------------ helpers

    def show_once(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        if message not in self.shown:
            self.shown.add(message)
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def apply_settings(self, options: Any) -> None:
        loaded = load_settings(options, None)
        self.settings = loaded.settings
        problems = list(loaded.problems)
        if loaded.settings.log_level:
            problem = set_level(loaded.settings.log_level)
            if problem:
                problems.append(f"fsr.logLevel: {problem}")
        for problem in problems:
            self.show_once(problem, types.MessageType.Warning)

    @property
    def encoding(self) -> str:
        """The position encoding negotiated with the client (pygls takes the client's first choice)."""
        kind = self.workspace.position_encoding
        return str(getattr(kind, "value", kind) or "utf-16")

    def workspace_root(self, path: Path) -> Path:
        root = self.workspace.root_path
        return Path(root) if root else path.parent

    def publish(self, uri: str) -> None:
        doc = self.workspace.get_text_document(uri)
        src = SourceText(doc.source)
        found = discover(src)
        kernels = found.kernels
        check = self.checks.get(uri, CheckResult())
        enc = self.encoding
        diagnostics = (compiler_diagnostics(src, Path(doc.path).name, check, kernels, enc)
                       + resource_diagnostics(src, kernels, check.resources, enc)
                       + spec_diagnostics(src, kernels, enc)
                       + orphan_spec_diagnostics(src, found.orphan_specs, enc)
                       + self.drafts.diagnostics(uri, src, kernels, enc)
                       + self.search_diagnostics(uri, src, kernels))
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=doc.version, diagnostics=diagnostics))

    def search_diagnostics(self, uri: str, src: SourceText, kernels: list[Kernel]) -> list[types.Diagnostic]:
        out = []
        for k in kernels:
            job = self.searches.finished.get((uri, k.name))
            if job is None or job.outcome is None or job.outcome.best is None:
                continue
            best = job.outcome.best
            launch = " (changes the launch configuration)" if "@fsr" in best.proposal.source else ""
            out.append(types.Diagnostic(range=lsp_range(src, k.name_span, self.encoding),
                                        message=f"FSR: {job.outcome.message}{launch}",
                                        severity=types.DiagnosticSeverity.Information, source=SOURCE, code="fsr-win",
                                        data={"kernel": k.name}))
        return out

    def schedule_check(self, uri: str) -> None:
        previous = self.check_tasks.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.check_tasks[uri] = asyncio.ensure_future(self._check(uri))

    async def _check(self, uri: str) -> None:
        doc = self.workspace.get_text_document(uri)
        result = await check_source(doc.source, Path(doc.path), self.settings, self.searches.remote(self.settings))
        if result.problem:
            self.show_once(f"fsr: {result.problem}", types.MessageType.Warning)
        self.checks[uri] = result
        self.publish(uri)

    def watch(self) -> None:
        root = self.workspace.root_path
        if root and self.watcher is None and Path(root).is_dir():
            self.loop = asyncio.get_running_loop()
            self.watcher = WorkspaceWatcher(Path(root), lambda path: self.loop.call_soon_threadsafe(self.file_changed, path))
            self.watcher.start()

    def file_changed(self, path: Path) -> None:
        self.drafts.file_changed(path)
        for uri, doc in list(self.workspace.text_documents.items()):
            if _is_cuda(uri) and affects(doc.source, Path(doc.path), path):
                self.schedule_check(uri)

    # ------------------------------------------------------------ searches

    async def optimize(self, uri: str, kernel: str) -> str:
        if (uri, kernel) in self.searches.running:
            message = f"{kernel} is already being optimized"
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=message))
            return message
        why = self.searches.unavailable(self.settings)
        if why:
            self.show_once(why)
            return why
        doc = self.workspace.get_text_document(uri)
        path = Path(doc.path)
        draft, ask_model = self._draft_for_search(uri, kernel)
        token = new_token()
        if self._supports_progress():  # begun before the search can report anything
            try:
                await self.work_done_progress.create_async(token)
            except Exception:  # a client that refuses a token still gets the result
                log.warning("client refused progress token")
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title=f"FSR: optimizing {kernel}", cancellable=True, message="starting", percentage=0))
            future = self.work_done_progress.tokens.get(token)
            if future is not None:
                future.add_done_callback(lambda f: self.searches.cancel(uri, kernel) if f.cancelled() else None)
        job = self.searches.start(uri, kernel, doc.source, path, self.workspace_root(path), self.settings,
                                  self._progress, self._finished, draft=draft, ask_model=ask_model, token=token)
        self.notify_progress(job, "starting", 0, done=False)
        return f"optimizing {kernel}"

    def kernel_spec(self, uri: str, kernel: Kernel) -> KernelSpec:
        """The kernel's spec and where it comes from (its block, a launch anywhere in the workspace,
        its signature), for code actions, hover and Optimize."""
        doc = self.workspace.get_text_document(uri)
        path = Path(doc.path)
        open_documents = {Path(d.path): d.source for d in self.workspace.text_documents.values()}
        return self.drafts.spec(self.workspace_root(path), path, doc.source, kernel, open_documents,
                                include_dirs=self.settings.include_paths)

    def _draft_for_search(self, uri: str, name: str) -> tuple[str | None, Callable[[LLMConfig], Draft] | None]:
        """A kernel without a block is searched with a draft from its launch (or, where the launch
        site says too little and an endpoint is set, the model's), proven first; the user sees
        the draft and where it came from before anything runs."""
        doc = self.workspace.get_text_document(uri)
        src = SourceText(doc.source)
        kernel = next((k for k in discover_kernels(src) if k.name == name), None)
        if kernel is None or kernel.spec is not None:
            return None, None
        spec = self.kernel_spec(uri, kernel)
        if spec.origin == "none" and self.settings.search_config().llm.configured:
            launches = self.drafts.index.launches() if self.drafts.index else []
            why = "; ".join(spec.problems) or "no launch found"
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=(
                f"FSR {name}: no @fsr spec and none from a launch; asking the model to draft one, then proving it")))
            return None, lambda llm: model_draft(ChatClient(llm), src, kernel, launches, why)
        if spec.origin != "drafted" or spec.spec is None:
            return None, None
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Info,
                                                       message=f"fsr: drafted @fsr spec for {name}:\n{spec.spec}"))
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=(
            f"FSR {name}: no @fsr spec; drafted one from the launch at {spec.launch} (see the log); proving it on "
            "the GPU with the original kernel, then searching")))
        return spec.spec, None

    def _supports_progress(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    def _progress(self, job: SearchJob, p: Progress) -> None:
        if job.key not in self.searches.running:
            return
        total = max(p.rounds, 1)
        best = f", best {p.best_speedup:.2f}x" if p.best_speedup else ""
        message = f"round {p.round}/{p.rounds}: {p.tried} tried{best}" if p.round else p.message[:200]
        percentage = min(99, int(100 * p.round / total))
        self.notify_progress(job, message, percentage, done=False)
        if self._supports_progress():
            self.work_done_progress.report(job.token, types.WorkDoneProgressReport(
                message=message, percentage=percentage, cancellable=True))

    def notify_progress(self, job: SearchJob, message: str, percentage: int, done: bool) -> None:
        self.protocol.notify(PROGRESS_NOTIFICATION, {"uri": job.uri, "kernel": job.kernel, "message": redact(message),
                                                     "percentage": percentage, "done": done})

    def _finished(self, job: SearchJob) -> None:
        outcome = job.outcome
        assert outcome is not None
        if job.proof is not None:
            searched = SourceText(job.searched_text)
            kernel = next((k for k in discover_kernels(searched) if k.name == job.kernel), None)
            if kernel is not None:
                self.drafts.remember(job.uri, kernel, searched, job.proof)
        self.notify_progress(job, outcome.message[:200], 100, done=True)
        if self._supports_progress():
            self.work_done_progress.end(job.token, types.WorkDoneProgressEnd(message=redact(outcome.message[:200])))
        if outcome.problem:
            self.show_once(f"FSR {job.kernel}: {outcome.problem}")
        for note in outcome.notes:  # e.g. no profiler: the search ran, with less to tell the model
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"FSR {job.kernel}: {note}"))
        if outcome.status == "improved":
            if self.settings.auto_apply:
                asyncio.ensure_future(self._auto_apply(job))
        elif outcome.status in ("no_win", "cancelled"):
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Info, message=f"FSR {job.kernel}: {outcome.message}"))
        elif not outcome.problem:
            self.show_once(f"FSR {job.kernel}: {outcome.message}")
        if job.uri in self.workspace.text_documents:
            self.publish(job.uri)

    async def _auto_apply(self, job: SearchJob) -> None:
        edit, _ = self.rewrite_edit(job)
        if edit is not None:
            await self.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
                edit=edit, label=f"FSR rewrite of {job.kernel}"))

    def rewrite_edit(self, job: SearchJob) -> tuple[types.WorkspaceEdit | None, str]:
        """The verified rewrite as a versioned edit of the document as it is now, or why not."""
        assert job.outcome is not None and job.outcome.best is not None
        doc = self.workspace.get_text_document(job.uri)
        candidate = job.outcome.best.proposal.source
        try:
            rewrite = rewrite_with_block(doc.source, job.searched_text, job.kernel, candidate, job.draft) \
                if job.draft else rewrite_if_unchanged(doc.source, job.searched_text, job.kernel, candidate)
        except ApplyError as e:
            return None, str(e)
        src = SourceText(doc.source)
        edits = [types.TextEdit(range=types.Range(start=lsp_position(src, start, self.encoding),
                                                  end=lsp_position(src, end, self.encoding)), new_text=new)
                 for start, end, new in rewrite.edits]
        r = job.outcome.best.result
        annotation = types.ChangeAnnotation(label=f"FSR rewrite of {job.kernel} ({r.speedup:.2f}x, verified)",
                                            needs_confirmation=True,
                                            description=" ".join([job.outcome.message, *rewrite.notes]))
        if rewrite.notes:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                             message=f"FSR {job.kernel}: " + "; ".join(rewrite.notes)))
        return workspace_edit(self.edit_support, job.uri, doc.version, edits, annotation), ""

    @property
    def edit_support(self) -> EditSupport:
        return EditSupport.of(self.client_capabilities)


server = FsrServer()


def _is_cuda(uri: str) -> bool:
    return uri.lower().endswith(CUDA_SUFFIXES)


@server.feature(types.INITIALIZE)
def initialize(ls: FsrServer, params: types.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, dict) and "fsr" in options:
        options = options["fsr"]
    ls.apply_settings(options)


@server.feature(types.INITIALIZED)
async def initialized(ls: FsrServer, params: types.InitializedParams) -> None:
    ls.watch()
    await _pull_configuration(ls)


async def _pull_configuration(ls: FsrServer) -> None:
    caps = ls.client_capabilities
    if caps and caps.workspace and caps.workspace.configuration:
        try:
            (section,) = await ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="fsr")]))
        except Exception as e:  # a client that fails the request keeps the options it gave
            log.warning("workspace/configuration failed: %s", e)
            return
        if section:
            ls.apply_settings(section)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: FsrServer, params: types.DidChangeConfigurationParams) -> None:
    settings = params.settings
    if isinstance(settings, dict) and isinstance(settings.get("fsr"), dict):
        ls.apply_settings(settings["fsr"])
    else:
        await _pull_configuration(ls)
    for uri in list(ls.workspace.text_documents):
        if _is_cuda(uri):
            ls.schedule_check(uri)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: FsrServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    if _is_cuda(uri):
        ls.publish(uri)
        if ls.settings.diagnostics_on_open:
            ls.schedule_check(uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: FsrServer, params: types.DidSaveTextDocumentParams) -> None:
    if _is_cuda(params.text_document.uri):
        ls.schedule_check(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: FsrServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.checks.pop(uri, None)
    task = ls.check_tasks.pop(uri, None)
    if task is not None:
        task.cancel()
    if _is_cuda(uri):
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: FsrServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    if not _is_cuda(uri):
        return None
    doc = ls.workspace.get_text_document(uri)
    src = SourceText(doc.source)
    kernel = _kernel_at(src, params.position, ls.encoding)
    if kernel is None:
        return None
    lines = [f"**`{kernel.name}`** ({len(kernel.params)} parameters)"]
    if kernel.spec is None and kernel.complete:
        lines += hover_lines(ls.kernel_spec(uri, kernel), ls.drafts.proof_of(uri, kernel, src))
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


def _stored_best(ls: FsrServer, path: Path, kernel: str) -> str:
    store_file = ls.workspace_root(path) / ".fsr" / "history.sqlite"
    if not store_file.exists():
        return ""
    with HistoryStore(ls.workspace_root(path)) as store:
        rows = store.history(str(path), kernel)
    timed = [r for r in rows if r.status == "verified" and r.speedup]
    if not timed:
        return f"{len(rows)} stored candidates, none verified" if rows else ""
    best = max(timed, key=lambda r: r.speedup or 0)
    return f"best stored candidate: {best.speedup:.2f}x ({best.time_ms:.4g} ms), {len(rows)} candidates in the history"


def _kernel_at(src: SourceText, position: types.Position, encoding: str) -> Kernel | None:
    return kernel_at(src, src.byte_at(Position(position.line, position.character), encoding))


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, APPLY_KIND,
                                                           types.CodeActionKind.Refactor],
                                        resolve_provider=True))
def code_action(ls: FsrServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    if not _is_cuda(uri):
        return []
    doc = ls.workspace.get_text_document(uri)
    at = _Document(uri, doc.version, SourceText(doc.source), ls.encoding, ls.edit_support)
    kernel = _kernel_at(at.src, params.range.start, ls.encoding)
    actions: list[types.CodeAction] = []
    if kernel is not None:
        actions += _kernel_actions(ls, at, kernel)
    for d in params.context.diagnostics:
        if d.source != SOURCE or not str(d.code or "").startswith("spec") or not isinstance(d.data, dict):
            continue
        k = next((k for k in discover_kernels(at.src) if k.name == d.data.get("kernel")), None)
        if k is None:
            continue
        if k.spec is None:
            if not any(a.title.startswith(("Insert @fsr", "Draft @fsr")) for a in actions):
                for fix in _spec_fixes(ls, at, k):
                    fix.diagnostics = [d]
                    actions.append(fix)
            continue
        if d.code == "spec-block":
            actions.append(_set_block(at, k, d))
        actions.append(_reset_spec(at, k, d))
    return actions


@dataclass(frozen=True)
class _Document:
    """The document a code action request is about, as it is now, and how the client edits."""

    uri: str
    version: int | None
    src: SourceText
    encoding: str
    support: EditSupport

    def edit(self, start: int, end: int, text: str) -> types.WorkspaceEdit:
        rng = types.Range(start=lsp_position(self.src, start, self.encoding), end=lsp_position(self.src, end, self.encoding))
        return workspace_edit(self.support, self.uri, self.version, [types.TextEdit(range=rng, new_text=text)])


def _kernel_actions(ls: FsrServer, at: _Document, kernel: Kernel) -> list[types.CodeAction]:
    actions = []
    uri = at.uri
    running = (uri, kernel.name) in ls.searches.running
    actions.append(types.CodeAction(
        title=f"Optimize `{kernel.name}` with FSR" if not running else f"Cancel the FSR search of `{kernel.name}`",
        kind=types.CodeActionKind.Refactor,
        command=types.Command(title="FSR", command=CANCEL if running else OPTIMIZE, arguments=[uri, kernel.name])))
    if kernel.spec is None:
        actions += _spec_fixes(ls, at, kernel)
    job = ls.searches.finished.get((uri, kernel.name))
    if job is not None and job.outcome is not None and job.outcome.best is not None:
        apply = _apply_action(ls, at, job)
        if apply is not None:
            actions.append(apply)
    return actions


def _apply_action(ls: FsrServer, at: _Document, job: SearchJob) -> types.CodeAction | None:
    """Lazy (the edit is computed when chosen) for clients that resolve `edit`; for the others
    the edit itself, computed against the document version of this request."""
    assert job.outcome is not None and job.outcome.best is not None
    r = job.outcome.best.result
    launch = ", changes the launch" if "@fsr" in job.outcome.best.proposal.source else ""
    action = types.CodeAction(title=f"Apply FSR rewrite ({r.speedup:.2f}x{launch})", kind=APPLY_KIND,
                              data={"uri": at.uri, "kernel": job.kernel})
    if at.support.resolve_edit:
        return action
    edit, why = ls.rewrite_edit(job)
    if edit is not None:
        action.edit = edit
        return action
    if at.support.disabled_actions:
        action.disabled = types.CodeActionDisabled(reason=why)
        return action
    return None


def _spec_fixes(ls: FsrServer, at: _Document, kernel: Kernel) -> list[types.CodeAction]:
    """The draft from a launch (preferred) when there is one, and the filled-in template."""
    out = []
    spec = ls.kernel_spec(at.uri, kernel) if kernel.complete else None
    if spec is not None and spec.origin == "drafted" and spec.spec and spec.launch:
        start = kernel.definition_span.start_byte
        out.append(types.CodeAction(title=draft_title(kernel.name, spec), kind=types.CodeActionKind.QuickFix,
                                    is_preferred=True, edit=at.edit(start, start, spec.spec)))
    out.append(_insert_spec(at, kernel))
    return out


def _insert_spec(at: _Document, kernel: Kernel) -> types.CodeAction:
    start = kernel.definition_span.start_byte
    return types.CodeAction(title=f"Insert @fsr spec for `{kernel.name}`", kind=types.CodeActionKind.QuickFix,
                            edit=at.edit(start, start, spec_template(kernel)))


def _reset_spec(at: _Document, kernel: Kernel, d: types.Diagnostic) -> types.CodeAction:
    assert kernel.spec is not None
    span = kernel.spec.span
    return types.CodeAction(title=f"Replace the @fsr spec of `{kernel.name}` with a filled-in template",
                            kind=types.CodeActionKind.QuickFix, diagnostics=[d],
                            edit=at.edit(span.start_byte, span.end_byte, spec_template(kernel).rstrip("\n")))


def _set_block(at: _Document, kernel: Kernel, d: types.Diagnostic) -> types.CodeAction:
    bound = (kernel.launch_bounds or "").split(",")[0].strip()
    threads = min(256, int(bound)) if bound.isdigit() else 256
    start = at.src.byte_at(Position(d.range.start.line, d.range.start.character), at.encoding)
    end = at.src.byte_at(Position(d.range.end.line, d.range.end.character), at.encoding)
    return types.CodeAction(title=f"Set block = {threads}", kind=types.CodeActionKind.QuickFix, diagnostics=[d],
                            is_preferred=True, edit=at.edit(start, end, f"block = {threads}"))


@server.feature(types.CODE_ACTION_RESOLVE)
def resolve_code_action(ls: FsrServer, action: types.CodeAction) -> types.CodeAction:
    data = action.data if isinstance(action.data, dict) else {}
    job = ls.searches.finished.get((data.get("uri", ""), data.get("kernel", "")))
    if job is None or job.outcome is None or job.outcome.best is None:
        action.disabled = types.CodeActionDisabled(reason="no verified rewrite is available any more")
        return action
    edit, why = ls.rewrite_edit(job)
    if edit is None:
        action.disabled = types.CodeActionDisabled(reason=why)
    else:
        action.edit = edit
    return action


@server.command(OPTIMIZE)
async def optimize_command(ls: FsrServer, *args: Any) -> str:
    uri, kernel = _command_args(args)
    return await ls.optimize(uri, kernel)


@server.command(CANCEL)
def cancel_command(ls: FsrServer, *args: Any) -> str:
    uri, kernel = _command_args(args)
    return "cancelling" if ls.searches.cancel(uri, kernel) else f"no search of {kernel} is running"


@server.command(OPTIMIZE_AT)
async def optimize_at_command(ls: FsrServer, *args: Any) -> str:
    kernel = _kernel_from_position(ls, args)
    if kernel is None:
        return "no kernel at the cursor"
    return await ls.optimize(str(_flat(args)[0]), kernel.name)


@server.command(SEARCHES)
def searches_command(ls: FsrServer, *args: Any) -> list[dict]:
    return [{"uri": uri, "kernel": kernel} for uri, kernel in ls.searches.running]


@server.command(HISTORY_AT)
def history_at_command(ls: FsrServer, *args: Any) -> dict:
    kernel = _kernel_from_position(ls, args)
    if kernel is None:
        return {"kernel": None, "rows": []}
    path = Path(ls.workspace.get_text_document(str(_flat(args)[0])).path)
    with HistoryStore(ls.workspace_root(path)) as store:
        rows = store.history(str(path), kernel.name)
    return {"kernel": kernel.name, "rows": [{"round": r.round + 1, "generator": r.generator, "status": r.status,
                                             "speedup": r.speedup, "time_ms": r.time_ms, "message": r.message[:200]}
                                            for r in rows]}


def _flat(args: tuple) -> tuple:
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], list) else args


def _kernel_from_position(ls: FsrServer, args: tuple) -> Kernel | None:
    uri, line, character = _flat(args)[:3]
    src = SourceText(ls.workspace.get_text_document(str(uri)).source)
    return _kernel_at(src, types.Position(line=int(line), character=int(character)), ls.encoding)


def _command_args(args: tuple) -> tuple[str, str]:
    if len(args) == 1 and isinstance(args[0], list):  # some clients wrap the arguments once more
        args = tuple(args[0])
    return str(args[0]), str(args[1])


@server.feature(types.SHUTDOWN)
def shutdown(ls: FsrServer, *args: Any) -> None:
    ls.searches.shutdown()
    if ls.watcher is not None:
        ls.watcher.stop()

