"""Workspace edits in the shape each client can apply.

Clients differ: VS Code resolves a code action's `edit` lazily and asks before applying an
annotated change; Neovim resolves too; Emacs eglot 1.9 never sends `codeAction/resolve` and
applies only an action's `edit` (or runs its `command`); some clients know only `changes`.
The server reads the client's capabilities once and builds every edit (the rewrite and every
quick fix) accordingly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol import types


@dataclass(frozen=True)
class EditSupport:
    resolve_edit: bool = False  # codeAction/resolve may fill in `edit`: actions can be lazy
    document_changes: bool = False  # versioned TextDocumentEdits; else a plain `changes` map
    annotations: bool = False  # change annotations (confirmation before applying)
    disabled_actions: bool = False  # CodeAction.disabled is shown rather than hidden

    @classmethod
    def of(cls, caps: types.ClientCapabilities | None) -> "EditSupport":
        if caps is None:
            return cls()
        text = caps.text_document
        action = text.code_action if text else None
        resolve = action.resolve_support if action else None
        ws = caps.workspace.workspace_edit if caps.workspace else None
        return cls(resolve_edit=bool(resolve and "edit" in (resolve.properties or [])),
                   document_changes=bool(ws and ws.document_changes),
                   annotations=bool(ws and ws.document_changes and ws.change_annotation_support),
                   disabled_actions=bool(action and action.disabled_support))


def workspace_edit(support: EditSupport, uri: str, version: int | None, edits: list[types.TextEdit],
                   annotation: types.ChangeAnnotation | None = None) -> types.WorkspaceEdit:
    """One document's edits: versioned (the client refuses them if the document moved on) where
    the client can, annotated where it shows annotations, a plain `changes` map otherwise."""
    if not support.document_changes:
        return types.WorkspaceEdit(changes={uri: list(edits)})
    annotated: list[Any] = list(edits)
    annotations = None
    if annotation is not None and support.annotations:
        annotated = [types.AnnotatedTextEdit(range=e.range, new_text=e.new_text, annotation_id=ANNOTATION_ID)
                     for e in edits]
        annotations = {ANNOTATION_ID: annotation}
    document = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=annotated)
    return types.WorkspaceEdit(document_changes=[document], change_annotations=annotations)


ANNOTATION_ID = "fsr-rewrite"
