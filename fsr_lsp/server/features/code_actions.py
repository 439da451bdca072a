"""Code actions: Optimize (or Cancel) and Profile on a kernel, Optimize addressing a profile
finding, the spec quick fixes (the draft from a launch,
the filled-in template, a block size), and Apply FSR rewrite, whose edit is computed when
chosen by clients that resolve (VS Code, Neovim) and with the action for those that do not
(Emacs eglot)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types

from ...source import Position, SourceText
from ..diagnostics import SOURCE, lsp_position
from ..edits import EditSupport, workspace_edit
from ..server import FsrServer, is_cuda, not_on_disk
from .capture import CONFIRM, confirmable
from .commands import CANCEL, OPTIMIZE
from .drafts import draft_title
from .profiling import FINDING, PROFILE, profiles
from .kernel_requests import known_spec
from .searches import chosen_rewrite, rewrite_edit

if TYPE_CHECKING:
    from ...drafting.origin import KernelSpec
    from ...kernels import Kernel
    from ..document_cache import DocumentState
    from ..search_jobs import SearchJob

APPLY_KIND = types.CodeActionKind.RefactorRewrite


def register(server: FsrServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, APPLY_KIND,
                                                               types.CodeActionKind.Refactor],
                                            resolve_provider=True))
    async def code_action(ls: FsrServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        if not is_cuda(uri):
            return []
        doc = ls.document(uri)
        if doc is None:
            return []
        state = ls.cache.state(uri, doc)  # what this version's requests share (document_cache.py)
        kernel = await ls.cache.kernel_at(state, params.range.start, ls.encoding)
        at = _Document(uri, doc.version, state.src, ls.encoding, ls.edit_support)
        actions: list[types.CodeAction] = []
        if kernel is not None:
            actions += _kernel_actions(ls, at, kernel, await _spec(ls, state, kernel))
        for d in params.context.diagnostics:
            if d.source == SOURCE and d.code == FINDING and isinstance(d.data, dict):
                actions.append(_optimize_finding(uri, d))
                continue
            if d.source != SOURCE or not str(d.code or "").startswith("spec") or not isinstance(d.data, dict):
                continue
            k = await _kernel_of(ls, state, d)
            if k is None:
                continue
            if k.spec is None:
                if not any(a.title.startswith(("Insert @fsr", "Draft @fsr")) for a in actions):
                    for fix in _spec_fixes(at, k, await _spec(ls, state, k)):
                        fix.diagnostics = [d]
                        actions.append(fix)
                continue
            if d.code == "spec-block":
                actions.append(_set_block(at, k, d))
            actions.append(_reset_spec(at, k, d))
        return actions

    @server.feature(types.CODE_ACTION_RESOLVE)
    def resolve_code_action(ls: FsrServer, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        job = ls.searches.finished.get((data.get("uri", ""), data.get("kernel", "")))
        if job is None or job.outcome is None or job.outcome.best is None:
            action.disabled = types.CodeActionDisabled(reason="no verified rewrite is available any more")
            return action
        edit, why = rewrite_edit(ls, job)
        if edit is None:
            action.disabled = types.CodeActionDisabled(reason=why)
        else:
            action.edit = edit
        return action


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


async def _kernel_of(ls: FsrServer, state: DocumentState, d: types.Diagnostic) -> Kernel | None:
    """The kernel a diagnostic is about: the one at its range (a window of a large file), else
    the file's kernel of that name."""
    name = d.data.get("kernel") if isinstance(d.data, dict) else None
    here = await ls.cache.kernel_at(state, d.range.start, ls.encoding)
    if here is not None and here.name == name:
        return here
    if state.large:  # a full discovery of a large file is no request's work
        return None
    return next((k for k in state.discovery().kernels if k.name == name), None)


async def _spec(ls: FsrServer, state: DocumentState, kernel: Kernel) -> KernelSpec | None:
    """The spec a kernel without a block would get for this version of the document, as far as
    it is known now (its draft is offered once it is done: never one of an earlier text)."""
    if kernel.spec is not None or not kernel.complete:
        return None
    known = await known_spec(ls, state, kernel, earlier=False)
    return known.spec if known is not None else None


def _kernel_actions(ls: FsrServer, at: _Document, kernel: Kernel, spec: KernelSpec | None) -> list[types.CodeAction]:
    actions = []
    uri = at.uri
    why = not_on_disk(uri) or ls.trust.refusal("Optimize")
    if why:  # the actions it would need, disabled with the reason where the client shows that
        caps = ls.client_capabilities
        code_action = caps.text_document.code_action if caps and caps.text_document else None
        if code_action is not None and code_action.disabled_support:
            actions += [types.CodeAction(title=f"Optimize `{kernel.name}` with FSR", kind=types.CodeActionKind.Refactor,
                                         disabled=types.CodeActionDisabled(reason=why))]
        return actions + (_spec_fixes(at, kernel, spec) if kernel.spec is None else [])
    running = ls.searches.busy((uri, kernel.name))  # its spec being planned counts: Cancel stops it there
    actions.append(types.CodeAction(
        title=f"Optimize `{kernel.name}` with FSR" if not running else f"Cancel the FSR search of `{kernel.name}`",
        kind=types.CodeActionKind.Refactor,
        command=types.Command(title="FSR", command=CANCEL if running else OPTIMIZE, arguments=[uri, kernel.name])))
    profiling = (uri, kernel.name) in profiles(ls).running
    if not profiling:
        actions.append(types.CodeAction(title=f"Profile `{kernel.name}` (Nsight Compute, findings by line)",
                                        kind=types.CodeActionKind.Refactor,
                                        command=types.Command(title="FSR", command=PROFILE, arguments=[uri, kernel.name])))
    if confirmable(ls, kernel.name):
        actions.append(types.CodeAction(title=f"Confirm `{kernel.name}` in your program (rebuild, rerun, compare)",
                                        kind=types.CodeActionKind.Refactor,
                                        command=types.Command(title="FSR", command=CONFIRM,
                                                              arguments=[uri, kernel.name])))
    if kernel.spec is None:
        actions += _spec_fixes(at, kernel, spec)
    job = ls.searches.finished.get((uri, kernel.name))
    if job is not None and job.outcome is not None and job.outcome.best is not None:
        apply = _apply_action(ls, at, job)
        if apply is not None:
            actions.append(apply)
    return actions


def _optimize_finding(uri: str, d: types.Diagnostic) -> types.CodeAction:
    """Optimize with the finding in the model's prompt (the built-in tuner does not read it)."""
    data = d.data if isinstance(d.data, dict) else {}
    kernel, finding = str(data.get("kernel", "")), str(data.get("finding", ""))
    return types.CodeAction(title=f"Optimize `{kernel}` with FSR, addressing this finding",
                            kind=types.CodeActionKind.QuickFix, diagnostics=[d],
                            command=types.Command(title="FSR", command=OPTIMIZE,
                                                  arguments=[uri, kernel, f"line {d.range.start.line + 1}: {finding}"]))


def _apply_action(ls: FsrServer, at: _Document, job: SearchJob) -> types.CodeAction | None:
    """Lazy (the edit is computed when chosen) for clients that resolve `edit`; for the others
    the edit itself, computed against the document version of this request."""
    assert job.outcome is not None and job.outcome.best is not None
    chosen, _ = chosen_rewrite(ls, job) if "@fsr" in job.outcome.best.proposal.source else (None, "")
    applied = chosen.tried if chosen is not None else job.outcome.best  # the one the edit will hold
    r = applied.result
    launch = ", changes the launch" if "@fsr" in applied.proposal.source else ""
    action = types.CodeAction(title=f"Apply FSR rewrite ({r.speedup:.2f}x{launch})", kind=APPLY_KIND,
                              data={"uri": at.uri, "kernel": job.kernel})
    if at.support.resolve_edit:
        return action
    edit, why = rewrite_edit(ls, job)
    if edit is not None:
        action.edit = edit
        return action
    if at.support.disabled_actions:
        action.disabled = types.CodeActionDisabled(reason=why)
        return action
    return None


def _spec_fixes(at: _Document, kernel: Kernel, spec: KernelSpec | None) -> list[types.CodeAction]:
    """The draft from a launch (preferred) when there is one, and the filled-in template."""
    out = []
    if spec is not None and spec.origin in ("drafted", "captured") and spec.spec and spec.launch:
        start = kernel.definition_span.start_byte
        out.append(types.CodeAction(title=draft_title(kernel.name, spec), kind=types.CodeActionKind.QuickFix,
                                    is_preferred=True, edit=at.edit(start, start, spec.spec)))
    out.append(_insert_spec(at, kernel))
    return out


def _insert_spec(at: _Document, kernel: Kernel) -> types.CodeAction:
    from ...specs import spec_template

    start = kernel.definition_span.start_byte
    return types.CodeAction(title=f"Insert @fsr spec for `{kernel.name}`", kind=types.CodeActionKind.QuickFix,
                            edit=at.edit(start, start, spec_template(kernel)))


def _reset_spec(at: _Document, kernel: Kernel, d: types.Diagnostic) -> types.CodeAction:
    from ...specs import spec_template

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
