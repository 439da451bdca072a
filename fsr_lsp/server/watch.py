"""A watchdog observer on the workspace: CUDA sources and headers changed on disk outside the
editor (git checkout, a code generator) refresh the diagnostics of the open files they affect,
and the index of kernel launches that specs are drafted from."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

WATCHED = (".cu", ".cuh", ".h", ".hpp", ".hh", ".inl", ".cuinc", ".cpp", ".cc", ".cxx", ".c")


class _Handler(FileSystemEventHandler):
    def __init__(self, on_change: Callable[[Path], None]) -> None:
        self.on_change = on_change

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in ("modified", "created", "moved"):
            return
        path = Path(str(getattr(event, "dest_path", "") or event.src_path))
        if path.suffix.lower() in WATCHED and ".fsr" not in path.parts:
            self.on_change(path)


class WorkspaceWatcher:
    """Calls `on_change(path)` from the observer's thread; the caller hops to its own loop."""

    def __init__(self, root: Path, on_change: Callable[[Path], None]) -> None:
        self.root = root
        self._observer = Observer()
        self._observer.schedule(_Handler(on_change), str(root), recursive=True)

    def start(self) -> None:
        self._observer.daemon = True
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)


def affects(document_text: str, document_path: Path, changed: Path) -> bool:
    """Whether a change to `changed` can change the diagnostics of this document: the file
    itself, or a header it includes (matched by file name)."""
    if changed == document_path:
        return True
    name = changed.name
    return any(line.lstrip().startswith("#") and "include" in line and name in line
               for line in document_text.splitlines())
