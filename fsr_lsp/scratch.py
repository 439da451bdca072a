"""Scratch folders that never outlive their process: each is named for the process that made
it (`fsr-<what>-<pid>-...`), removed when done, and, when the process was killed (kill -9, an
OOM), swept by the next fsr process to start. Compilers run with TMPDIR inside theirs, so
nvcc's own `tmpxft*` files go with it."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

PREFIX = "fsr-"


def make(what: str) -> Path:
    """A fresh scratch folder for `what` (nvcc, sanitize, ...), owned by this process."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{what}-{os.getpid()}-"))


@contextmanager
def folder(what: str) -> Iterator[Path]:
    path = make(what)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep(root: str | None = None) -> int:
    """Remove the scratch folders of fsr processes that are gone; how many were removed."""
    removed = 0
    base = Path(root or tempfile.gettempdir())
    try:
        entries = list(base.iterdir())
    except OSError:
        return 0
    for entry in entries:
        pid = _owner(entry.name)
        if pid is None or pid == os.getpid() or process_alive(pid) or not entry.is_dir():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed += 1
    return removed


def _owner(name: str) -> int | None:
    if not name.startswith(PREFIX):
        return None
    parts = name.split("-")
    return int(parts[2]) if len(parts) > 3 and parts[2].isdigit() else None


def process_alive(pid: int) -> bool:
    """Whether a process of that id exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
