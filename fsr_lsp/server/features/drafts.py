"""Specs for kernels without one, in the editor: the draft from a launch anywhere in the
workspace (the quick fix inserts it), what the hover says of where each value came from, and
the proof's verdict as a diagnostic on the kernel. Optimize proves a draft before it searches
(the Optimize use case); this module knows where the last proofs stand."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ...source import SourceText
from ..diagnostics import SOURCE, lsp_range

if TYPE_CHECKING:
    from ...drafting.origin import Drafter, KernelSpec
    from ...drafting.proof import Proof
    from ...drafting.workspace import LaunchIndex
    from ...kernels import Kernel


@dataclass
class ProvenState:
    """The last proof of a kernel's draft, and the definition it was about (a stale one is not shown)."""

    definition: str
    proof: Proof


class Drafts:
    def __init__(self) -> None:
        self.index: LaunchIndex | None = None
        self.proofs: dict[tuple[str, str], ProvenState] = {}

    def index_for(self, root: Path) -> LaunchIndex:
        if self.index is None or self.index.root != root:
            from ...drafting.workspace import LaunchIndex

            self.index = LaunchIndex(root)
        return self.index

    def file_changed(self, path: Path) -> None:
        if self.index is not None:
            self.index.refresh(path)

    def spec(self, root: Path, path: Path, text: str, kernel: Kernel, open_documents: dict[Path, str],
             drafter: Drafter | None = None, include_dirs: tuple[str, ...] = (),
             flags: tuple[str, ...] = ()) -> KernelSpec:
        """The kernel's spec and its origin, with launches from every file of the workspace,
        resolved as `fsr optimize` resolves it (`flags`: the compiler flags, whose -D choose
        typedefs' branches)."""
        from ...drafting.resolver import workspace_spec

        return workspace_spec(self.index_for(root), path, text, kernel, open_documents, drafter, include_dirs, flags)

    def remember(self, uri: str, kernel: Kernel, src: SourceText, proof: Proof) -> None:
        d = kernel.definition_span
        self.proofs[(uri, kernel.name)] = ProvenState(src.slice(d.start_byte, d.end_byte), proof)

    def proof_of(self, uri: str, kernel: Kernel, src: SourceText) -> Proof | None:
        state = self.proofs.get((uri, kernel.name))
        d = kernel.definition_span
        return state.proof if state is not None and state.definition == src.slice(d.start_byte, d.end_byte) else None

    def diagnostics(self, uri: str, src: SourceText, kernels: list[Kernel], encoding: str) -> list[types.Diagnostic]:
        """A Warning on each kernel whose drafted spec failed its proof: which check, which argument."""
        out = []
        for k in kernels:
            proof = self.proof_of(uri, k, src)
            if proof is None or proof.status != "failed" or k.spec is not None:
                continue
            out.append(types.Diagnostic(
                range=lsp_range(src, k.name_span, encoding), severity=types.DiagnosticSeverity.Warning, source=SOURCE,
                code="spec-proof", message=f"the drafted @fsr spec failed its proof on {proof.gpu or 'the GPU'}: "
                                           f"{proof.message}",
                data={"kernel": k.name, "check": proof.check, "argument": proof.argument}))
        return out


def register(server: object) -> None:
    """Nothing to register: drafts show through documents (diagnostics), hover and code actions."""


def draft_title(kernel: str, spec: KernelSpec) -> str:
    if spec.origin == "captured":
        return f"Insert @fsr spec for `{kernel}` from the captured launch {spec.launch}"
    return f"Draft @fsr spec for `{kernel}` from the launch at {spec.launch}"


def hover_lines(spec: KernelSpec, proof: Proof | None) -> list[str]:
    """Where the spec comes from; for a draft, where each value came from and its proof; how
    the user's build compiles the kernel, where a compile database says."""
    built = [f"- {spec.build}"] if spec.build else []
    if spec.origin == "attached":
        return built
    if spec.origin == "inferred":
        return ["- spec: inferred from the signature (no launch found to draft from)", *built]
    if spec.origin == "none":
        return [f"- no spec: {spec.problems[0]}" if spec.problems else "- no spec"]
    where = f"the launch at {spec.launch}" if spec.launch else "the model"
    if spec.origin == "captured":
        lines = [f"- spec: captured from a run: {spec.launch} (not in the file: the quick fix inserts it; "
                 "Optimize proves it first)"]
    else:
        lines = [f"- spec: drafted from {where} (not in the file: the quick fix inserts it; Optimize proves it first)"]
    lines += [f"  - `{key}`: {origin}" for key, origin in spec.provenance.items()]
    lines += [f"  - guess: {problem}" for problem in spec.problems]
    if proof is not None:
        lines.append(f"- proof on {proof.gpu or 'the GPU'}: {proof.status}: {proof.message}")
    return lines + built
