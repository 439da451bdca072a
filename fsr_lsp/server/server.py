"""The fsr language server's state, shared by its features. Each feature lives in `features/`
and registers its own handlers (main.py builds the server); what one adds to every document's
diagnostics or does on a save it registers here too, so the documents feature need not know
it. Compilation runs as an asyncio subprocess, GPU work in the evaluator's worker process,
searches in their own threads; no handler blocks."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..redaction import redact
from ..settings import USER, Settings, load_settings
from .document_cache import DocumentCache
from .edits import EditSupport
from .features.drafts import Drafts
from .framing import serve_stdio, serve_tcp
from .logs import set_level
from .protocol import FsrProtocol
from .search_jobs import Searches
from .gpu_owner import GpuOwner
from ..instruments import GPU, Instruments
from .trust import Trust

if TYPE_CHECKING:  # what the server holds; the modules load when the work is first done
    from ..kernels import Kernel
    from .check import CheckResult
    from .watch import WorkspaceWatcher

log = logging.getLogger("fsr_lsp")
CUDA_SUFFIXES = (".cu", ".cuh")
# (server, uri, text, its kernels) -> diagnostics; (server, uri) -> None
DiagnosticSource = Callable[["FsrServer", str, Any, "list[Kernel]"], list[types.Diagnostic]]
SaveHook = Callable[["FsrServer", str], None]


class FsrServer(LanguageServer):
    def __init__(self, instruments: Instruments = GPU) -> None:
        """`instruments`: stand-ins for the GPU work (tests: tests/doubles.py); the GPU's own by default."""
        super().__init__("fsr-lsp", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=FsrProtocol)
        self.settings = Settings()
        self.trust = Trust()  # what the client said of the workspace (trust.py)
        self.checks: dict[str, CheckResult] = {}
        self.check_tasks: dict[str, asyncio.Task] = {}
        self.to_publish: dict[str, None] = {}  # documents whose diagnostics are due, in order
        self.publisher: asyncio.Future | None = None
        self.instruments = instruments
        self.gpu = GpuOwner(instruments)  # the GPU, for every feature (gpu_owner.py)
        self.searches = Searches(self.gpu)
        self.drafts = Drafts()
        self.cache = DocumentCache(instruments.probe)  # each open document's kernels and specs, per version
        self.shown: set[str] = set()  # messages shown once
        self.watcher: WorkspaceWatcher | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.diagnostic_sources: list[DiagnosticSource] = []  # each feature's diagnostics of a document
        self.save_hooks: list[SaveHook] = []  # what features do when a document is saved

    # ------------------------------------------------------------ transports: pygls's, with our reader

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Stdio, read by framing.py: a bad header or length costs one message, not the session."""
        serve_stdio(self, stdin, stdout)

    def start_tcp(self, host: str, port: int) -> None:
        """TCP (debugging), read the same way."""
        serve_tcp(self, host, port)

    # ------------------------------------------------------------ what leaves for the client, redacted

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        params.message = redact(params.message)
        super().window_show_message(params)

    def window_log_message(self, params: types.LogMessageParams) -> None:
        params.message = redact(params.message)
        super().window_log_message(params)

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        from .diagnostics import capped

        params.diagnostics = capped(params.diagnostics)
        for d in params.diagnostics:
            d.message = redact(d.message)
        super().text_document_publish_diagnostics(params)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Bad JSON or bytes that are not UTF-8 are answered -32700 (no popup: the client sent them;
        framing.py does this itself, pygls's websocket loop comes here); a client's other
        mistakes never get here (protocol.py logs them). The rest is a fault of ours: logged
        at error, and shown as pygls does."""
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            self.protocol.parse_error(error)  # type: ignore[attr-defined]
            return
        log.error("error in the server: %s: %s", type(error).__name__, redact(str(error)))
        super().report_server_error(error, source)

    def document(self, uri: str) -> Any:
        """The open document, or None for a URI the client never opened (no disk read, no
        traceback: a request about it simply has no answer). pygls keeps documents by their URI
        unquoted (`%20` a space, `%2B` a plus), as clients send them quoted."""
        docs = self.workspace.text_documents
        return docs.get(uri) or docs.get(unquote(uri))

    def open_kernel(self, uri: str, name: str) -> "tuple[Any, Kernel] | str":
        """An open document and its kernel `name`, or why there is none (a command's answer)."""
        from ..kernels import find_kernel

        doc = self.document(uri)
        if doc is None:
            return f"{uri} is not open in the editor"
        state = self.cache.state(uri, doc)
        kernel = (find_kernel(doc.source, name) if state.large
                  else next((k for k in state.discovery().kernels if k.name == name), None))
        return (doc, kernel) if kernel is not None else f"no kernel named {name}"

    # ------------------------------------------------------------ shared helpers

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def show_once(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        if message not in self.shown:
            self.shown.add(message)
            self.show(message, kind)

    def apply_settings(self, options: Any, after_start: bool = False) -> None:
        """`after_start`: the settings came from workspace/configuration or didChangeConfiguration
        (the client may have said those hold a workspace's values), not initializationOptions."""
        source = self.trust.configuration_source if after_start else USER
        loaded = load_settings(options, None, source=source, trusted=self.trust.trusted, kept=self.settings)
        self.settings = loaded.settings
        self.cache.bump()  # include paths: every spec is drafted again
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

    @property
    def edit_support(self) -> EditSupport:
        return EditSupport.of(self.client_capabilities)

    @property
    def supports_progress(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)


def is_cuda(uri: str) -> bool:
    return uri.lower().endswith(CUDA_SUFFIXES)


def not_on_disk(uri: str) -> str:
    """Why a document cannot be searched or profiled ('' when it can): a search compiles the
    file with its includes and stores its history beside it, a profile runs it, so both need a
    file on disk; an `untitled:` buffer or a remote document has only its text."""
    if uri.startswith("file:"):
        return ""
    return (f"{uri} is not a file on disk: save it as a .cu file to optimize or profile its kernels "
            "(its diagnostics and hovers work from the text)")

