"""Diagnostics for a CUDA document: compiler messages, per-kernel resources, spec problems,
and search results, each at the right place (UTF-16 positions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..source import SourceText, Span, units
from .check import CheckResult
from .nvcc_output import Message

if TYPE_CHECKING:
    from ..evaluator.records import Resources
    from ..kernels import Kernel, OrphanSpec

SOURCE = "fsr"
MAX_PER_PUBLISH = 200  # a binary or generated file can give thousands: the editor's list is unusable past this


def capped(diagnostics: list[types.Diagnostic], limit: int = MAX_PER_PUBLISH) -> list[types.Diagnostic]:
    """At most `limit`: the most severe first, in file order, and one line on the first line
    saying how many more there are."""
    if len(diagnostics) <= limit:
        return diagnostics
    ordered = sorted(diagnostics, key=lambda d: (d.severity or 4, d.range.start.line, d.range.start.character))
    kept, left = ordered[:limit - 1], ordered[limit - 1:]
    errors = sum(1 for d in left if d.severity == types.DiagnosticSeverity.Error)
    zero = types.Position(line=0, character=0)
    summary = types.Diagnostic(range=types.Range(start=zero, end=zero), source=SOURCE, code="more",
                               severity=types.DiagnosticSeverity.Warning,
                               message=f"{len(left)} more diagnostics not shown ({errors} errors): the first "
                                       f"{limit - 1}, the most severe first, are")
    return sorted(kept, key=lambda d: (d.range.start.line, d.range.start.character)) + [summary]


def compiler_diagnostics(src: SourceText, name: str, result: CheckResult, kernels: list[Kernel],
                         encoding: str = "utf-16") -> list[types.Diagnostic]:
    lines = src.text.splitlines()
    out = []
    by_name = {k.name: k for k in kernels}
    for m in result.messages:
        severity = types.DiagnosticSeverity.Error if m.severity == "error" else types.DiagnosticSeverity.Warning
        if m.kernel and m.kernel in by_name:
            rng = lsp_range(src, by_name[m.kernel].name_span, encoding)
            text = m.text
        elif m.file and m.file != name:  # an included file: report on the line including it, if any
            rng = _include_range(src, m.file, encoding)
            text = f"{m.file}:{m.line + 1}: {m.text}"
        else:
            rng = _message_range(lines, m, encoding)
            text = m.text
        out.append(types.Diagnostic(range=rng, message=text, severity=severity, source="nvcc" if not m.kernel else "ptxas",
                                    code=m.code or None))
    return out


def resource_diagnostics(src: SourceText, kernels: list[Kernel], resources: dict[str, Resources],
                         encoding: str = "utf-16") -> list[types.Diagnostic]:
    out = []
    for k in kernels:
        res = resources.get(k.name)
        if res is None:
            continue
        spills = res.spill_stores or res.spill_loads
        text = (f"{k.name}: {res.registers} registers, {res.shared_bytes} B shared memory, {res.stack_bytes} B stack"
                + (f", {res.spill_stores} B spill stores, {res.spill_loads} B spill loads" if spills else ", no spills"))
        out.append(types.Diagnostic(range=lsp_range(src, k.name_span, encoding), message=text, source=SOURCE, code="resources",
                                    severity=types.DiagnosticSeverity.Warning if spills else types.DiagnosticSeverity.Information))
    return out


def spec_diagnostics(src: SourceText, kernels: list[Kernel], encoding: str = "utf-16") -> list[types.Diagnostic]:
    from ..specs import parse_spec

    out = []
    for k in kernels:
        if not k.complete:
            continue
        for p in parse_spec(src, k).problems:
            severity = types.DiagnosticSeverity.Information if p.severity == "info" else types.DiagnosticSeverity.Warning
            out.append(types.Diagnostic(range=lsp_range(src, p.span, encoding), message=p.message, severity=severity, source=SOURCE,
                                        code=p.code, data={"kernel": k.name}))
    return out


def orphan_spec_diagnostics(src: SourceText, orphans: list[OrphanSpec], encoding: str = "utf-16") -> list[types.Diagnostic]:
    """A Warning on the first line of each @fsr block that attaches to no kernel."""
    out = []
    for o in orphans:
        start = o.comment.span.start_byte
        line_end = src.data.find(b"\n", start)
        end = line_end if 0 <= line_end < o.comment.span.end_byte else o.comment.span.end_byte
        out.append(types.Diagnostic(range=lsp_range(src, src.span(start, end), encoding),
                                    message=f"this @fsr block attaches to no kernel: {o.reason}",
                                    severity=types.DiagnosticSeverity.Warning, source=SOURCE, code="spec-orphan"))
    return out


def lsp_range(src: SourceText, span: Span, encoding: str = "utf-16") -> types.Range:
    """A span as an LSP range in the negotiated encoding (recomputed from its bytes)."""
    return types.Range(start=lsp_position(src, span.start_byte, encoding), end=lsp_position(src, span.end_byte, encoding))


def lsp_position(src: SourceText, byte: int, encoding: str = "utf-16") -> types.Position:
    p = src.position(byte, encoding)
    return types.Position(line=p.line, character=p.character)


def _message_range(lines: list[str], m: Message, encoding: str) -> types.Range:
    def _utf16(text: str) -> int:
        return units(text, encoding)

    line = max(0, min(m.line, len(lines) - 1)) if lines else 0
    text = lines[line] if lines else ""
    if m.column >= 0:
        start = _utf16(text[: m.column])
        rest = text[m.column:]
        word = len(rest) - len(rest.lstrip("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
        end = start + max(1, _utf16(rest[: word or 1]))
    else:
        start = _utf16(text[: len(text) - len(text.lstrip())])
        end = _utf16(text)
    return types.Range(start=types.Position(line=line, character=start), end=types.Position(line=line, character=end))


def _include_range(src: SourceText, file: str, encoding: str) -> types.Range:
    for i, line in enumerate(src.text.splitlines()):
        if line.lstrip().startswith("#") and "include" in line and file.split("/")[-1] in line:
            return types.Range(start=types.Position(line=i, character=0),
                               end=types.Position(line=i, character=units(line, encoding)))
    return types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
