"""Profile in the editor: the command fsr.profile (the code action "Profile `NAME`") runs the
kernel once under Nsight Compute in the background, with cancellable progress; its findings
become diagnostics on the kernel's own lines, a summary on its name, and hover on a marked line
shows that line's counters. They stay while the kernel's definition is as it was profiled
(moved lines follow it); an edit inside the kernel retires them until the next profile."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ...failures import said
from ...redaction import redact
from ...source import SourceText
from ..diagnostics import SOURCE, lsp_range
from .. import progress
from ..protocol import string_args
from ..server import FsrServer
from .documents import publish
from .kernel_requests import KernelAsk, opened, planned, refused

if TYPE_CHECKING:
    from ...kernels import Kernel
    from ...profiling.findings import Finding, KernelProfile

PROFILE = "fsr.profile"
FINDING, SUMMARY, FAILED = "profile-finding", "profile-summary", "profile-failed"


@dataclass
class ShownProfile:
    """A kernel's last profile and the definition it was taken of (findings map onto it)."""

    profile: KernelProfile | None
    definition: str
    first_line: int  # 0-based line of the definition's start when profiled
    problem: str = ""  # why there is no profile


@dataclass
class Profiles:
    done: dict[tuple[str, str], ShownProfile] = field(default_factory=dict)
    running: dict[tuple[str, str], threading.Event] = field(default_factory=dict)


def register(server: FsrServer) -> None:
    server.diagnostic_sources.append(profile_diagnostics)

    @server.command(PROFILE)
    async def profile_command(ls: FsrServer, *args: Any) -> str:
        found = string_args(args, PROFILE, "a document URI", "a kernel name")
        if isinstance(found, str):
            return found
        return await profile(ls, *found)


def profiles(ls: FsrServer) -> Profiles:
    if not hasattr(ls, "profiles"):
        ls.profiles = Profiles()  # type: ignore[attr-defined]
    return ls.profiles  # type: ignore[attr-defined]


async def profile(ls: FsrServer, uri: str, kernel_name: str) -> str:
    from ...workflows.profile_kernel import KernelJob, profile_kernel

    state = profiles(ls)
    ask = KernelAsk("Profile", "profiling needs", "profiling", stand_in=ls.gpu.instruments.profiler is not None)
    why = refused(ls, uri, ask)
    if why:
        return why
    key = (uri, kernel_name)
    if key in state.running:
        return f"{kernel_name} is already being profiled"
    doc = opened(ls, uri)
    if isinstance(doc, str):
        return doc
    # The file as it is now: its kernel found and its spec planned on a thread (kernel_requests.py),
    # the profile run on this text, its findings placed by this text's definition.
    cancel = state.running[key] = threading.Event()  # a second Profile meanwhile is refused
    try:
        found = await planned(ls, doc, kernel_name, ask)
    except BaseException:  # the request cancelled, a bug of ours: no profile is running
        state.running.pop(key, None)
        raise
    if isinstance(found, str):
        state.running.pop(key, None)
        return found
    kernel, plan = found
    text = doc.text
    job = KernelJob(text, doc.path, kernel_name, doc.root, doc.settings, plan, cancel=cancel)
    token = await progress.begin(ls, f"FSR: profiling {kernel_name}", "starting", job.cancel)  # a cancel kills ncu
    loop = asyncio.get_running_loop()

    def report(message: str) -> None:
        loop.call_soon_threadsafe(progress.report, ls, token, message)

    try:
        outcome = await asyncio.to_thread(profile_kernel, ls.gpu.optimizer, job, report)
    except Exception as e:  # a bug of ours: said on the kernel, never lost
        outcome = None
        problem = f"the profile failed: {said(e)}"
    finally:
        state.running.pop((uri, kernel_name), None)
        progress.end(ls, token)
    definition, first = await asyncio.to_thread(_definition, text, kernel)  # a 10 MB file's line index: not on the loop
    if outcome is not None and outcome.cancelled:
        message = f"FSR: the profile of {kernel_name} was cancelled"
        ls.show(message)
        return message
    if outcome is not None and outcome.profile is not None:
        state.done[(uri, kernel_name)] = ShownProfile(outcome.profile, definition, first)
        message = f"FSR profile of {kernel_name}: {len(outcome.profile.findings)} findings; {outcome.profile.summary}"
        ls.show(message)
    else:
        problem = outcome.message if outcome is not None else problem
        state.done[(uri, kernel_name)] = ShownProfile(None, definition, first, problem)
        message = f"FSR: {problem}"
        ls.show(message, types.MessageType.Warning)
    if uri in ls.workspace.text_documents:
        publish(ls, uri)
    return redact(message)


def _definition(text: str, kernel: Kernel) -> tuple[str, int]:
    """The kernel's definition in `text` and the 0-based line it starts on."""
    from ...kernels import kernel_source

    src = SourceText.of(text)
    return kernel_source(src, kernel).definition, src.line_of(kernel.definition_span.start_byte)


def _placed(ls: FsrServer, uri: str, src: SourceText, kernel: Kernel) -> tuple[ShownProfile, int] | None:
    """The kernel's profile and how many lines its definition moved, while it is unchanged."""
    from ...kernels import kernel_source

    p = profiles(ls).done.get((uri, kernel.name))
    if p is None or kernel_source(src, kernel).definition != p.definition:
        return None
    return p, src.line_of(kernel.definition_span.start_byte) - p.first_line


def profile_diagnostics(ls: FsrServer, uri: str, src: SourceText, kernels: list[Kernel]) -> list[types.Diagnostic]:
    out = []
    lines = src.text.splitlines()
    for k in kernels:
        placed = _placed(ls, uri, src, k)
        if placed is None:
            continue
        p, moved = placed
        name = lsp_range(src, k.name_span, ls.encoding)
        if p.profile is None:
            out.append(types.Diagnostic(range=name, message=f"FSR profile: {p.problem}", source=SOURCE, code=FAILED,
                                        severity=types.DiagnosticSeverity.Warning, data={"kernel": k.name}))
            continue
        summary = f"{p.profile.summary}; {p.profile.outside}" if p.profile.outside else p.profile.summary
        out.append(types.Diagnostic(range=name, message=f"FSR profile: {summary}", source=SOURCE, code=SUMMARY,
                                    severity=types.DiagnosticSeverity.Information, data={"kernel": k.name}))
        for f in p.profile.findings:
            at = f.line - 1 + moved
            if 0 <= at < len(lines):
                out.append(_finding(k, f, at, lines[at]))
    return out


def _finding(kernel: Kernel, f: Finding, line: int, text: str) -> types.Diagnostic:
    start = len(text) - len(text.lstrip())
    rng = types.Range(start=types.Position(line=line, character=start),
                      end=types.Position(line=line, character=len(text.encode("utf-16-le")) // 2))
    severity = types.DiagnosticSeverity.Warning if f.severe else types.DiagnosticSeverity.Information
    return types.Diagnostic(range=rng, message=f"FSR profile: {f.message}", source=SOURCE, code=FINDING, severity=severity,
                            data={"kernel": kernel.name, "kind": f.kind, "finding": f.message})


def hover_lines(ls: FsrServer, uri: str, src: SourceText, line: int, kernel: Kernel) -> list[str]:
    """The counters of a profiled line under the cursor (0-based line) in `kernel`, the kernel
    there, as Markdown lines."""
    for k in (kernel,):
        placed = _placed(ls, uri, src, k)
        if placed is None or placed[0].profile is None:
            continue
        p, moved = placed
        counters = p.profile.lines.get(line + 1 - moved)
        if counters is None or not any(f.line == counters.line for f in p.profile.findings):
            continue
        out = [f"**FSR profile of `{k.name}`**, this line ({p.profile.size} on {p.profile.gpu}):"]
        for f in p.profile.findings:
            if f.line == counters.line:
                out.append(f"- {f.message}")
                out += [f"  - {name}: {value:,}" if isinstance(value, int) else f"  - {name}: {value}"
                        for name, value in f.metrics.items()]
        out.append(f"- {counters.instructions:,} warp instructions executed, {counters.samples:,} stall samples")
        return out
    return []
