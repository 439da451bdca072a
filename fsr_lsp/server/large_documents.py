"""Whole-file work on a large open document, in processes of its own.

A tree-sitter parse or a regular expression over a 10 MB file holds Python's GIL for tens of
milliseconds at a time (the end of a parse, where the tree is balanced, cannot be split); on a
thread of the server that stalls the event loop, and hovers on every other document wait. So a
large document's kernels (for its diagnostics) and its kernels' specs (drafted from launches
across the workspace, its own among them) are worked out in child processes; the server's own
threads read only windows of such a file (document_cache.py).

Two children, each started the first time a large document needs it: one works out kernels,
the other drafts specs (from each kernel's view of the text, kernels/kernel_view.py), so a
hover's draft never waits behind a 10 MB discovery; the drafting one is started, and warmed,
when a large document opens. Each over a pipe (no queue, whose semaphores multiprocessing's
resource tracker would report as leaked when the server exits at once), one job at a time from
a thread of the server's; each ends when its pipe closes, and the reaper kills it if the server
is killed (processes.py: it inherits the server's mark). Texts over a megabyte go to them as
files, written a megabyte at a time (pickling ten megabytes for the pipe would hold the GIL for
40 ms), in a scratch folder of the server's (scratch.py). The drafting child keeps a launch
index of the workspace of its own; the server tells it which files changed on disk with its
next draft."""

from __future__ import annotations

import itertools
import logging
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .. import processes

if TYPE_CHECKING:
    from lsprotocol import types

    from ..drafting.origin import KernelSpec
    from ..drafting.workspace import LaunchIndex
    from ..kernels import Discovery, Kernel

log = logging.getLogger("fsr_lsp")
BY_FILE_CHARS = 1 << 20  # texts longer than this go to the child as files
KEPT_FILES = 4  # a document's last files kept (a job still queued may read one)


@dataclass(frozen=True)
class Stored:
    """A text the child reads from a file."""

    file: str


class _Child:
    """One child process and the one thread of the server's that calls it, a job at a time."""

    def __init__(self, name: str, probe: str) -> None:
        self.name, self._probe = name, probe
        self.io = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._proc: Any = None
        self._conn: Any = None
        self._lock = threading.Lock()
        self.closed = False  # after shutdown no child is started
        self.started = 0  # children started (a new one reads the workspace afresh)
        self.pieces_received = 0

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` in the child; a child that died (killed, out of memory) is replaced once."""
        for attempt in (1, 2):
            conn = self._start()
            try:
                conn.send((fn, args))
                kind, payload = conn.recv()
            except (EOFError, OSError) as error:
                self.stop()
                if attempt == 2:
                    raise RuntimeError(f"the process for large documents ended ({error or type(error).__name__})") from None
                log.warning("the process for large documents ended: started again")
                continue
            if kind == "error":
                raise RuntimeError(payload)
            if kind == "parts":  # each piece unpickled on its own: the GIL is let go between them
                pieces = [conn.recv() for _ in range(payload)]
                self.pieces_received += len(pieces)
                return pieces
            return payload
        raise AssertionError("unreachable")

    @property
    def running(self) -> bool:
        return self._proc is not None

    def _start(self) -> Any:
        if self._proc is not None and self._proc.is_alive():
            return self._conn
        if self.closed:
            raise RuntimeError("the server is shutting down")
        import multiprocessing  # loaded when the first large document needs it, not at start-up

        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        proc = context.Process(target=_serve, args=(child, self._probe), daemon=True, name=self.name)
        processes.start_child(proc)
        child.close()
        with self._lock:
            self._proc, self._conn = proc, parent
            self.started += 1
        return parent

    def stop(self) -> None:
        with self._lock:
            proc, conn, self._proc, self._conn = self._proc, self._conn, None, None
        if conn is not None:
            conn.close()  # the child's recv ends: it exits
        if proc is not None:
            proc.kill()
            threading.Thread(target=proc.join, name="fsr-large-reap", daemon=True).start()

    def shutdown(self) -> None:
        self.io.shutdown(wait=False, cancel_futures=True)
        self.closed = True
        self.stop()


class LargeDocuments:
    """Two children: one works out a large document's kernels (seconds for 10 MB), the other
    drafts its kernels' specs from their views (kernels/kernel_view.py), so a hover's spec never
    waits behind the diagnostics' discovery."""

    def __init__(self, probe: str = "") -> None:
        """`probe`: tests' "module:function" told of each draft the child makes (Instruments.probe)."""
        self._whole = _Child("fsr-large-documents", probe)
        self._drafts = _Child("fsr-large-drafts", probe)
        self._changed: list[Path] = []  # files changed on disk since the drafting child's last draft
        self._drafts_started = 0  # the drafting child whose workspace `_changed` is counted against
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._files: dict[str, list[tuple[str | None, Path]]] = {}  # a document -> its files, the newest with its text
        self._count = itertools.count()
        self._storing = threading.Lock()

    @property
    def pieces_received(self) -> int:
        """Answers that came in pieces, counted (tests)."""
        return self._whole.pieces_received + self._drafts.pieces_received

    def discovery(self, name: str, text: str, encoding: str) -> Future:
        """Future of (every kernel of the document `name`'s `text`, their spec diagnostics),
        sent over in pieces of PIECE kernels or diagnostics: unpickling 758 kernels at once held
        the GIL for 68 ms on the server's thread, and hovers on other documents waited. The
        drafting child is started beside it, its first draft's one-time costs paid meanwhile."""
        if not self._drafts.running:
            self._drafts.io.submit(self._drafts.call, _warm)
        return self._whole.io.submit(lambda: _joined(self._whole.call(_discovery, self._stored(name, text), encoding)))

    def first_look(self, name: str, text: str, encoding: str) -> Future:
        """Future of (the document's kernels as declared, the spec diagnostics of those already
        settled: kernels/discover.py's `first_look`), in the discovering process before the
        discovery asked next: half a 10 MB file's seconds, the rest being its types read through
        its aliases and structs, which the discovery then takes from where this left off."""
        return self._whole.io.submit(lambda: _joined(self._whole.call(_first_look, self._stored(name, text), encoding)))

    def spec(self, document: tuple[str, int | None], root: Path, path: Path, text: str, kernel: Kernel,
             documents: dict[Path, str], include_dirs: tuple[str, ...], flags: tuple[str, ...] = ()) -> Future:
        """Future of the kernel's spec, as `drafting.resolver.workspace_spec` gives it, for the
        `document` (uri, version)."""
        def job() -> KernelSpec:
            texts = {p: self._stored(str(p), t) for p, t in documents.items()}
            stored = self._stored(str(path), text)
            with self._lock:
                changed, self._changed = tuple(self._changed), []
                if self._drafts.started != self._drafts_started or not self._drafts.running:
                    changed = ()  # a new child reads the workspace afresh
            result = self._drafts.call(_spec, document, root, path, stored, kernel, texts, (include_dirs, flags),
                                       changed)
            with self._lock:
                self._drafts_started = self._drafts.started
            return result

        return self._drafts.io.submit(job)

    def file_changed(self, path: Path) -> None:
        with self._lock:
            if self._drafts.running:
                self._changed.append(path)

    def shutdown(self) -> None:
        for child in (self._whole, self._drafts):
            child.shutdown()
        with self._lock:
            folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def _stored(self, name: str, text: str) -> str | Stored:
        """A long text as a file the child reads (written once per text, in chunks: no long
        hold of the GIL); a short one as itself."""
        if len(text) <= BY_FILE_CHARS:
            return text
        with self._storing:  # both children's threads store texts
            return self._store(name, text)

    def _store(self, name: str, text: str) -> Stored:
        written = self._files.setdefault(name, [])
        if written and written[-1][0] is text:
            return Stored(str(written[-1][1]))
        with self._lock:
            if self._folder is None:
                from .. import scratch

                self._folder = scratch.make("large")
            file = self._folder / f"{next(self._count)}.txt"
        with open(file, "w", encoding="utf-8", errors="surrogatepass") as out:
            for start in range(0, len(text), BY_FILE_CHARS):
                out.write(text[start:start + BY_FILE_CHARS])
        written[:] = [(None, f) for _, f in written]  # an older text is not held for its file's sake
        written.append((text, file))
        for _, old in written[:-KEPT_FILES]:
            old.unlink(missing_ok=True)
        del written[:-KEPT_FILES]
        return Stored(str(file))


# ------------------------------------------------------------ in the child

_INDEXES: dict[Path, LaunchIndex] = {}
_TEXTS: dict[str, str] = {}  # the files read last, by name


_PROBE = [""]  # the child's probe (tests), as the server gave it


def _serve(conn: Any, probe_path: str = "") -> None:
    """The child: calls from the pipe, answered in turn, until the server closes it."""
    _PROBE[0] = probe_path
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result = fn(*args)
            answers = [("parts", len(result.pieces)), *result.pieces] if isinstance(result, _Pieces) else [("ok", result)]
        except Exception as error:  # noqa: BLE001 - the server says it where the result was wanted
            answers = [("error", f"{type(error).__name__}: {error}")]
        try:
            for answer in answers:
                conn.send(answer)
        except (EOFError, OSError):
            return


def _text(value: str | Stored) -> str:
    if isinstance(value, str):
        return value
    text = _TEXTS.get(value.file)
    if text is None:
        text = Path(value.file).read_text(encoding="utf-8", errors="surrogatepass")
        if len(_TEXTS) >= KEPT_FILES:
            _TEXTS.pop(next(iter(_TEXTS)))
        _TEXTS[value.file] = text
    return text


@dataclass(frozen=True)
class _Pieces:
    """An answer sent as several messages: ("kernels" | "orphans" | "diagnostics", items)."""

    pieces: list[tuple[str, list]]


PIECE = 64  # kernels (or diagnostics) a message: a few milliseconds of unpickling each


def _discovery(text: str | Stored, encoding: str) -> _Pieces:
    from ..kernels import discover
    from ..source import SourceText
    from .diagnostics import spec_diagnostics

    probe(_PROBE[0], "whole", "", None)  # tests: a discovery's start, in this process
    src = SourceText(_text(text))
    found = discover(src)
    return _pieces(found, spec_diagnostics(src, found.kernels, encoding))


def _first_look(text: str | Stored, encoding: str) -> _Pieces:
    from ..kernels.discover import first_look, settled
    from ..source import SourceText
    from .diagnostics import spec_diagnostics

    src = SourceText(_text(text))
    found = first_look(src)
    diagnostics = spec_diagnostics(src, [k for k in found.kernels if settled(k)], encoding)
    return _pieces(found, diagnostics)


def _pieces(found: Discovery, diagnostics: list[types.Diagnostic]) -> _Pieces:
    return _Pieces([*(("kernels", found.kernels[i:i + PIECE]) for i in range(0, len(found.kernels), PIECE)),
                    ("orphans", list(found.orphan_specs)),
                    *(("diagnostics", diagnostics[i:i + PIECE]) for i in range(0, len(diagnostics), PIECE))])


def _joined(pieces: list[tuple[str, list]]) -> tuple[Discovery, list[types.Diagnostic]]:
    """The discovery and its diagnostics, from the pieces `_discovery` sent."""
    from ..kernels import Discovery

    parts: dict[str, list] = {"kernels": [], "orphans": [], "diagnostics": []}
    for kind, items in pieces:
        parts[kind] += items
    return Discovery(parts["kernels"], parts["orphans"]), parts["diagnostics"]


def _warm() -> None:
    """The drafting child's head start: what a first draft imports and compiles."""
    from ..drafting.warm import warm_drafting

    warm_drafting()


def _spec(document: tuple[str, int | None], root: Path, path: Path, text: str | Stored, kernel: Kernel,
          documents: dict[Path, str | Stored], build: tuple[tuple[str, ...], tuple[str, ...]],
          changed: tuple[Path, ...]) -> KernelSpec:
    """`build`: the settings' include paths and compiler flags."""
    from ..drafting.resolver import workspace_spec
    from ..drafting.workspace import LaunchIndex

    probe(_PROBE[0], "draft", *document, kernel.name)
    index = _INDEXES.get(root)
    if index is None:
        index = _INDEXES[root] = LaunchIndex(root)
    for changed_path in changed:
        index.refresh(changed_path)
    include_dirs, flags = build
    return workspace_spec(index, path, _text(text), kernel, {p: _text(t) for p, t in documents.items()},
                          include_dirs=include_dirs, flags=flags)


def probe(target: str, event: str, uri: str, version: int | None, detail: str = "") -> None:
    """Tell the tests' probe `target` ("module:function", Instruments.probe; '' for none) of a
    discovery or a draft, where it runs: the server's threads or this process."""
    if target:
        from ..evaluator.support import load

        load(target)(event, uri, version, detail)
