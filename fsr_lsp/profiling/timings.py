"""The measured versions of each kernel (`.fsr/timings.sqlite`): the original a search timed, the
rewrite it found, and each version a performance check timed. A later edit is re-timed against
the fastest of them on the same GPU, in one run (absolute times from other runs only pick it)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..stores import open_store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY,
    file TEXT NOT NULL,
    kernel TEXT NOT NULL,
    source TEXT NOT NULL,
    definition TEXT NOT NULL,
    time_ms REAL NOT NULL,
    gpu TEXT NOT NULL,
    label TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS versions_by_kernel ON versions (file, kernel, gpu);
"""


@dataclass
class TimedVersion:
    file: str
    kernel: str
    source: str  # the whole file as it was timed (its kernel is the version)
    definition: str  # the kernel's definition as it was timed
    time_ms: float
    gpu: str
    label: str  # "the original a search timed", "the rewrite a search found", "saved"
    created: float

    @property
    def when(self) -> str:
        """'14:02', or '2026-11-23 14:02' for another day."""
        stamp = time.localtime(self.created)
        today = time.localtime()
        same_day = stamp.tm_yday == today.tm_yday and stamp.tm_year == today.tm_year
        return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", stamp)


class Timings:
    def __init__(self, workspace: str | Path) -> None:
        folder = Path(workspace) / ".fsr"
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = open_store(folder / "timings.sqlite", _SCHEMA, wal=False)  # a damaged file moved aside

    def __enter__(self) -> "Timings":
        return self

    def __exit__(self, *exc: object) -> None:
        self._db.close()

    def record(self, file: str, kernel: str, source: str, definition: str, time_ms: float, gpu: str, label: str) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT INTO versions (file, kernel, source, definition, time_ms, gpu, label, created) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (os.path.abspath(file), kernel, source, definition.strip(), time_ms, gpu, label, time.time()))

    def fastest(self, file: str, kernel: str, gpu: str) -> TimedVersion | None:
        """The fastest version measured on this GPU (the latest of equals)."""
        with self._lock:
            row = self._db.execute(
                "SELECT file, kernel, source, definition, time_ms, gpu, label, created FROM versions "
                "WHERE file = ? AND kernel = ? AND gpu = ? ORDER BY time_ms ASC, created DESC LIMIT 1",
                (os.path.abspath(file), kernel, gpu)).fetchone()
        return TimedVersion(*row) if row else None

    def versions(self, file: str, kernel: str) -> list[TimedVersion]:
        """Every version of a kernel timed, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT file, kernel, source, definition, time_ms, gpu, label, created FROM versions "
                "WHERE file = ? AND kernel = ? ORDER BY created ASC", (os.path.abspath(file), kernel)).fetchall()
        return [TimedVersion(*row) for row in rows]

    def kernels(self, file: str) -> set[str]:
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT kernel FROM versions WHERE file = ?", (os.path.abspath(file),))
            return {r[0] for r in rows}
