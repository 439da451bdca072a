"""Whole-file work on a large open document, in a process of its own.

A tree-sitter parse or a regular expression over a 10 MB file holds Python's GIL for tens of
milliseconds at a time (the end of a parse, where the tree is balanced, cannot be split); on a
thread of the server that stalls the event loop, and hovers on every other document wait. So a
large document's kernels (for its diagnostics) and its kernels' specs (drafted from launches
across the workspace, its own among them) are worked out in a child process; the server's own
threads read only windows of such a file (document_cache.py).

Texts over a megabyte go to the child as files, written a megabyte at a time on a thread:
pickling ten megabytes for the pipe would hold the GIL for 40 ms. One worker, started the first
time a large document needs it, shut down with the server, and killed by the reaper if the
server is killed (processes.py: it inherits the server's mark); its files are in a scratch
folder of the server's (scratch.py). The child keeps a launch index of the workspace of its
own; the server tells it which files changed on disk with its next draft."""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from lsprotocol import types

    from ..drafting.origin import KernelSpec
    from ..drafting.workspace import LaunchIndex
    from ..kernels import Discovery, Kernel

log = logging.getLogger("fsr_lsp")
PROBE = "FSR_LSP_CACHE_PROBE"  # "module:function" told of each discovery and draft (tests only)
BY_FILE_CHARS = 1 << 20  # texts longer than this go to the child as files
KEPT_FILES = 4  # a document's last files kept (a job still queued may read one)


@dataclass(frozen=True)
class Stored:
    """A text the child reads from a file."""

    file: str


class LargeDocuments:
    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsr-large-io")
        self._changed: list[Path] = []  # files changed on disk since the child's last draft
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._files: dict[str, list[tuple[str | None, Path]]] = {}  # a document -> its files, the newest with its text
        self._count = itertools.count()

    def discovery(self, name: str, text: str, encoding: str) -> Future:
        """Future of (every kernel of the document `name`'s `text`, their spec diagnostics)."""
        return self._later(lambda: (_discovery, self._stored(name, text), encoding))

    def spec(self, uri: str, version: int | None, root: Path, path: Path, text: str, kernel: Kernel,
             documents: dict[Path, str], include_dirs: tuple[str, ...]) -> Future:
        """Future of the kernel's spec, as `drafting.workspace.workspace_spec` gives it, for the
        document `uri` at `version`."""
        with self._lock:
            changed, self._changed = tuple(self._changed), []

        def job() -> tuple:
            texts = {p: self._stored(str(p), t) for p, t in documents.items()}
            return _spec, (uri, version), root, path, self._stored(str(path), text), kernel, texts, include_dirs, changed

        return self._later(job)

    def file_changed(self, path: Path) -> None:
        with self._lock:
            if self._pool is not None:
                self._changed.append(path)

    def shutdown(self) -> None:
        with self._lock:
            pool, self._pool, folder, self._folder = self._pool, None, self._folder, None
        self._io.shutdown(wait=False, cancel_futures=True)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    # ------------------------------------------------------------ on the server's side

    def _later(self, job: Callable[[], tuple]) -> Future:
        """The job's call, prepared (texts written) on the io thread, then run in the child."""
        result: Future = Future()

        def hand_over() -> None:
            try:
                fn, *args = job()
                inner = self._submit(fn, *args)
            except BaseException as error:  # noqa: BLE001 - told to whoever waits
                result.set_exception(error)
                return
            inner.add_done_callback(lambda done: _copy(done, result))

        self._io.submit(hand_over)
        return result

    def _stored(self, name: str, text: str) -> str | Stored:
        """A long text as a file the child reads (written once per text, in chunks: no long
        hold of the GIL); a short one as itself."""
        if len(text) <= BY_FILE_CHARS:
            return text
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

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        import multiprocessing  # loaded when the first large document needs it, not at start-up
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        for _ in (1, 2):  # a worker that died (killed, out of memory) is replaced once
            with self._lock:
                if self._pool is None:
                    self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
                pool = self._pool
            try:
                return pool.submit(fn, *args)
            except BrokenProcessPool:
                log.warning("the process for large documents ended: started again")
                with self._lock:
                    if self._pool is pool:
                        self._pool = None
                        self._changed = []  # a new child reads the workspace afresh
        raise BrokenProcessPool("the process for large documents cannot be started")


def _copy(done: Future, result: Future) -> None:
    if done.cancelled():
        result.cancel()
    elif done.exception() is not None:
        result.set_exception(done.exception())  # type: ignore[arg-type]
    else:
        result.set_result(done.result())


# ------------------------------------------------------------ in the child

_INDEXES: dict[Path, LaunchIndex] = {}
_TEXTS: dict[str, str] = {}  # the files read last, by name


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


def _discovery(text: str | Stored, encoding: str) -> tuple[Discovery, list[types.Diagnostic]]:
    from ..kernels import discover
    from ..source import SourceText
    from .diagnostics import spec_diagnostics

    src = SourceText(_text(text))
    found = discover(src)
    return found, spec_diagnostics(src, found.kernels, encoding)


def _spec(document: tuple[str, int | None], root: Path, path: Path, text: str | Stored, kernel: Kernel,
          documents: dict[Path, str | Stored], include_dirs: tuple[str, ...], changed: tuple[Path, ...]) -> KernelSpec:
    from ..drafting.workspace import LaunchIndex, workspace_spec

    probe("draft", *document, kernel.name)
    index = _INDEXES.get(root)
    if index is None:
        index = _INDEXES[root] = LaunchIndex(root)
    for changed_path in changed:
        index.refresh(changed_path)
    return workspace_spec(index, path, _text(text), kernel, {p: _text(t) for p, t in documents.items()},
                          include_dirs=include_dirs)


def probe(event: str, uri: str, version: int | None, detail: str = "") -> None:
    """Tell the test probe (PROBE) of a discovery or a draft, where it runs: the server's threads
    or this process."""
    target = os.environ.get(PROBE)
    if target:
        from ..evaluator.support import load

        load(target)(event, uri, version, detail)
