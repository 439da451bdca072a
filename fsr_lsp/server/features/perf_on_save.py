"""Performance on save (setting fsr.perfOnSave, off by default) and the command
fsr.checkPerformance: a kernel with a stored timing that a save changed is re-timed in the
background against its fastest stored version (workflows/perf_check.py); slower beyond the
noise is a Warning on its name, faster an Information. Saves are coalesced (a check starts
once saves pause, and a new save stops the check in flight); never on keystrokes; cancellable
through its progress."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ...failures import said
from ...redaction import redact
from ...source import SourceText
from ..diagnostics import SOURCE, lsp_range
from .. import progress
from ..protocol import flat_args
from ..server import FsrServer
from .documents import publish

if TYPE_CHECKING:
    from ...kernels import Kernel
    from ...workflows.perf_check import PerfVerdict

CHECK = "fsr.checkPerformance"
QUIET_SECONDS = 2.0  # saves closer together than this make one check
SLOWER, FASTER = "perf-regression", "perf-faster"


@dataclass
class PerfState:
    verdicts: dict[tuple[str, str], PerfVerdict] = field(default_factory=dict)
    running: dict[str, threading.Event] = field(default_factory=dict)  # uri -> its check's cancel
    pending: dict[str, asyncio.TimerHandle] = field(default_factory=dict)


def state(ls: FsrServer) -> PerfState:
    if not hasattr(ls, "perf"):
        ls.perf = PerfState()  # type: ignore[attr-defined]
    return ls.perf  # type: ignore[attr-defined]


def register(server: FsrServer) -> None:
    server.diagnostic_sources.append(perf_diagnostics)
    server.save_hooks.append(saved)

    @server.command(CHECK)
    async def check_command(ls: FsrServer, *args: Any) -> str:
        flat = flat_args(args)
        if not flat:
            return "fsr.checkPerformance needs a document URI"
        return await check(ls, str(flat[0]))


def saved(ls: FsrServer, uri: str) -> None:
    """A save: with fsr.perfOnSave, a check once saves pause; the one in flight stops."""
    if not ls.settings.perf_on_save:
        return
    if not ls.trust.trusted:  # a check runs the workspace's kernels: said once, not on every save
        ls.show_once(ls.trust.refusal("performance on save"), types.MessageType.Warning)
        return
    s = state(ls)
    if uri in s.pending:
        s.pending.pop(uri).cancel()
    if uri in s.running:
        s.running[uri].set()
    loop = asyncio.get_running_loop()
    s.pending[uri] = loop.call_later(QUIET_SECONDS, lambda: asyncio.ensure_future(_after_quiet(ls, uri)))


async def _after_quiet(ls: FsrServer, uri: str) -> None:
    state(ls).pending.pop(uri, None)
    await check(ls, uri)


async def check(ls: FsrServer, uri: str) -> str:
    from ...workflows.perf_check import check_performance

    s = state(ls)
    doc = ls.document(uri)
    if doc is None:
        return f"{uri} is not open in the editor"
    why = ls.trust.refusal("the performance check")  # it runs the workspace's kernels
    if why:
        ls.show(why, types.MessageType.Warning)
        return why
    timer = ls.gpu.instruments.timer
    why = "" if timer is not None else ls.gpu.unavailable(ls.settings, "timing on save needs")
    if why:
        ls.show_once(why)
        return why
    while uri in s.running:  # the check a save stopped: wait for it to go
        s.running[uri].set()
        await asyncio.sleep(0.05)
    cancel = threading.Event()
    s.running[uri] = cancel
    token = await progress.begin(ls, "FSR: re-timing changed kernels", "against their stored timings", cancel)
    path = Path(doc.path)
    try:
        backend = None if timer is not None else ls.gpu.backend(ls.settings)
        verdicts = await asyncio.to_thread(check_performance, backend, doc.source, path, ls.workspace_root(path),
                                           ls.settings, cancel, timer=timer)
    except Exception as e:  # a bug of ours, or no GPU after all: said, never lost
        verdicts = []
        ls.show_once(f"FSR: the performance check failed: {said(e)}")
    finally:
        s.running.pop(uri, None)
        progress.end(ls, token)
    if cancel.is_set():
        return "cancelled"
    for v in verdicts:
        s.verdicts[(uri, v.kernel)] = v
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=redact(f"FSR: {v.message}")))
    if uri in ls.workspace.text_documents:
        publish(ls, uri)
    return "; ".join(v.message for v in verdicts) or "no kernel with a stored timing changed"


def perf_diagnostics(ls: FsrServer, uri: str, src: SourceText, kernels: list[Kernel]) -> list[types.Diagnostic]:
    """Each verdict on its kernel's name, while the kernel reads as it did when checked."""
    from ...kernels import kernel_source

    out = []
    for k in kernels:
        v = state(ls).verdicts.get((uri, k.name))
        if v is None or v.kind not in ("slower", "faster") or kernel_source(src, k).definition != v.definition:
            continue
        slower = v.kind == "slower"
        out.append(types.Diagnostic(range=lsp_range(src, k.name_span, ls.encoding), message=f"FSR: {v.message}",
                                    source=SOURCE, code=SLOWER if slower else FASTER, data={"kernel": k.name},
                                    severity=types.DiagnosticSeverity.Warning if slower else types.DiagnosticSeverity.Information))
    return out
