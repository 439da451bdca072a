"""Every kernel launch in the workspace, for drafting specs of kernels launched from another
file (`kernels.cu` defines, `main.cpp` or `ops.cu` launches). Files on disk are read once, on
first use, on a thread of their own (a request waits a moment for it, never for a large
workspace's whole scan), and again when the watcher says they changed; open documents count
as the editor holds them, each parsed once per text it holds. Only files that contain `<<<`
are parsed. The workspace's latest capture (`fsr capture`) is read when its folder changes."""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path

from ..capture import Capture, latest_capture
from ..capture.launches import CAPTURES
from ..kernels.aliases import included_texts, includer_texts
from ..kernels.lexical import word_places
from ..source import SourceText
from .build_commands import BuildIndex, FileBuild
from .host import Launch, find_launches

SOURCES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".inl")
SKIPPED_DIRS = {".git", ".fsr", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".cache"}
MAX_FILES = 5000  # a workspace bigger than this is indexed in part, and says so
MAX_BYTES = 2 << 20  # generated sources above 2 MiB are left out
FIRST_WAIT = 1.0  # seconds the first request waits for the workspace's scan


class LaunchIndex:
    def __init__(self, root: Path, first_wait: float | None = FIRST_WAIT) -> None:
        """`first_wait`: seconds a first request waits for the scan (None: the whole scan, as a
        command does: it answers once, and a partial index would draft from half the launches)."""
        self.root = root
        self.first_wait = first_wait
        self._files: dict[Path, list[Launch]] | None = None
        self._read_as: dict[Path, tuple[int, int]] = {}  # a file on disk -> (len, hash) of the text its launches are of
        # path (or path and kernel: a large document read for one kernel) -> (len, hash, launches) of its text
        self._open: dict[Path | tuple[Path, str | None], tuple[int, int, list[Launch]]] = {}
        self._lock = threading.Lock()
        self._scanning: threading.Thread | None = None
        self.truncated = False
        self._capture: tuple[int, Capture | None] = (-1, None)  # (captures folder's mtime, latest capture)
        self._fixed_capture = False
        self.builds = BuildIndex(root)

    def build(self, path: Path) -> FileBuild | None:
        """How the user's build compiles `path` (its compile databases), or None."""
        return self.builds.of(resolved(path))

    def use_capture(self, capture: Capture | None) -> None:
        """Take this capture (or none) instead of the workspace's (`fsr spec --capture DIR`, `--no-capture`)."""
        self._fixed_capture = True
        self._capture = (-1, capture)

    def capture(self) -> Capture | None:
        """The workspace's latest capture with launches in it, read again only when a new one lands."""
        if self._fixed_capture:
            return self._capture[1]
        try:
            stamp = (self.root / CAPTURES).stat().st_mtime_ns
        except OSError:
            return None
        if stamp != self._capture[0]:
            self._capture = (stamp, latest_capture(self.root))
        return self._capture[1]

    def launches(self, open_documents: dict[Path, str] | None = None, own: Path | None = None,
                 kernel: str | None = None) -> list[Launch]:
        """All launches: from disk (as far as a background scan has come), with open documents'
        own text in place of theirs. An open document over MAX_BYTES is left out as it is on
        disk (a generated file: parsing it for a kernel of another file costs seconds), unless
        it is `own`, the document of the kernel being drafted; of `own`, where it is that large
        and `kernel` is named, only that kernel's launches are read (a 10 MB file's 4,321 took
        4 s, for a hover on one kernel). Where `own` launches `kernel` itself, the scan is not
        waited for: a draft takes the kernel's own file's launches over any other's (draft.py).
        With `kernel` named, another open document that never names it is not read (under
        edits to many documents, each edited one was parsed again for every draft)."""
        open_documents = open_documents or {}
        self.scan_in_background()  # reading the disk goes on while the own file is read
        own_text = open_documents.get(own) if own is not None else None
        decided = own is not None and kernel is not None and own_text is not None and any(
            launch.kernel == kernel for launch in self._open_launches(own, own_text, kernel if len(own_text) > MAX_BYTES
                                                                      else None))
        files = self._index(wait=not decided)
        out = [launch for path, found in list(files.items()) if path not in open_documents for launch in found]
        for path, text in open_documents.items():
            if kernel is not None and path != own and not mentions(text, kernel):
                continue  # it cannot launch the kernel drafted: an edit of it is not parsed again for this draft
            if len(text) <= MAX_BYTES:
                out += self._open_launches(path, text)
            elif path == own:
                out += self._open_launches(path, text, kernel)
        return out

    def scan_in_background(self) -> None:
        """Read the workspace's files on a thread of their own; `launches` meanwhile uses what is read."""
        with self._lock:
            if self._files is not None or self._scanning is not None:
                return
            self._files = {}
            self._scanning = threading.Thread(target=self._scan, name="fsr-launch-index", daemon=True)
            self._scanning.start()

    def refresh(self, path: Path) -> None:
        """The watcher saw `path` change on disk."""
        if self._files is not None and path.suffix.lower() in SOURCES:
            self._files[path.resolve()] = self._read(path.resolve())

    def _index(self, wait: bool = True) -> dict[Path, list[Launch]]:
        """The files read so far: on first use the scan starts on its own thread and is waited
        for a moment (a small workspace is read whole by then, a large one is not waited for)."""
        self.scan_in_background()
        scanning = self._scanning
        if wait and scanning is not None and scanning is not threading.current_thread():
            scanning.join(self.first_wait)
        assert self._files is not None
        return self._files

    def _scan(self) -> None:
        assert self._files is not None
        for path in self._sources():
            self._files.setdefault(path, self._read(path))

    def _open_launches(self, path: Path, text: str, kernel: str | None = None) -> list[Launch]:
        """An open document's launches (or those of `kernel`), parsed again only when its text changed."""
        key = (len(text), hash(text))
        for cached_path in (path, (path, kernel)):
            cached = self._open.get(cached_path)
            if cached is not None and cached[:2] == key:
                return [launch for launch in cached[2] if kernel in (None, launch.kernel)]
        disk = self._files.get(path) if self._files is not None and kernel is None else None
        # an opened document as it is on disk: the scan's reading of it serves (a first touch parsed it again)
        found = disk if disk is not None and self._read_as.get(path) == key else self._read_text(path, text, kernel)
        for stale in [k for k, v in self._open.items() if isinstance(k, tuple) and k[0] == path and v[:2] != key]:
            del self._open[stale]  # another version's
        self._open[path if kernel is None else (path, kernel)] = (*key, found)
        return found

    def _sources(self):
        count = 0
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".")]
            for name in names:
                if Path(name).suffix.lower() in SOURCES:
                    count += 1
                    if count > MAX_FILES:
                        self.truncated = True
                        return
                    yield (Path(folder) / name).resolve()

    def _read(self, path: Path) -> list[Launch]:
        try:
            if path.stat().st_size > MAX_BYTES:
                return []
            data = path.read_bytes()
        except OSError:
            return []
        text = data.decode("utf-8", errors="replace")
        self._read_as[path] = (len(text), hash(text))
        return self._read_text(path, text) if b"<<<" in data else []

    def _read_text(self, path: Path, text: str, kernel: str | None = None) -> list[Launch]:
        if "<<<" not in text:
            return []
        headers = tuple(included_texts(text, (path.parent, self.root))) if "#include" in text else ()
        headers += tuple(includer_texts(path, (self.root,)))  # a header written to follow others
        return find_launches(SourceText(text), self.relative(path), headers, kernel)

    def relative(self, path: Path) -> str:
        try:
            return str(resolved(path).relative_to(resolved(self.root)))
        except ValueError:
            return str(path)


def mentions(text: str, kernel: str) -> bool:
    """Whether `text` names `kernel` as a word: a launch of it (directly, through a macro's
    argument or a helper) must."""
    return next(word_places(text, kernel), None) is not None


@lru_cache(maxsize=8192)
def resolved(path: Path) -> Path:
    """`path.resolve()`, once per path: a draft resolved every open document's path (50 of them:
    a quarter of a draft's time under edits)."""
    return path.resolve()
