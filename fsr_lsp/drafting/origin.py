"""Where each kernel's spec comes from: its own block, inference from the signature, a draft
from a launch site, or nowhere, with the problems of each. One record per kernel, for
`fsr spec` (and the editor)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from ..kernels import discover, kernel_source
from ..source import SourceText
from ..spec import parse_spec, render_spec
from .draft import draft_spec
from .host import Launch, find_launches

Origin = Literal["attached", "inferred", "drafted", "none"]


@dataclass
class KernelSpec:
    file: str
    kernel: str
    line: int  # 1-based line of the kernel's name
    origin: Origin
    spec: str | None  # the /* @fsr ... */ text
    problems: list[str] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)  # for drafts: where each value came from

    def as_json(self) -> dict:
        data = asdict(self)
        data.pop("provenance")
        return data


def kernel_specs(files: list[Path]) -> list[KernelSpec]:
    """Every kernel of every file, with launches looked up across all the files given (a kernel
    in a .cu file is often launched from a .cpp next to it)."""
    texts = {f: SourceText(f.read_text(encoding="utf-8", errors="replace")) for f in files}
    launches = [launch for src in texts.values() for launch in find_launches(src)]
    out = []
    for path, src in texts.items():
        out += specs_of(str(path), src, launches)
    return out


def specs_of(name: str, src: SourceText, launches: list[Launch]) -> list[KernelSpec]:
    found = discover(src)
    orphans = [f"the @fsr block at line {o.comment.span.start.line + 1} attaches to no kernel: {o.reason}"
               for o in found.orphan_specs]
    out = []
    for k in found.kernels:
        line = k.name_span.start.line + 1
        if not k.complete:
            out.append(KernelSpec(name, k.name, line, "none", None, ["the kernel is incomplete (unbalanced braces)"]))
            continue
        result = parse_spec(src, k)
        problems = [p.message for p in result.problems if p.severity != "info"]
        if k.spec is not None:
            out.append(KernelSpec(name, k.name, line, "attached", kernel_source(src, k).spec, problems))
            continue
        draft = draft_spec(src, k, launches)  # grounded in how the kernel is used: before a guess from its signature
        if draft.text is not None:
            out.append(KernelSpec(name, k.name, line, "drafted", draft.text, draft.problems + orphans, draft.provenance))
        elif result.spec is not None:
            out.append(KernelSpec(name, k.name, line, "inferred", render_spec(result.spec),
                                  [f"not drafted: {p}" for p in draft.problems] + orphans))
        else:
            out.append(KernelSpec(name, k.name, line, "none", None, problems + draft.problems + orphans))
    return out
