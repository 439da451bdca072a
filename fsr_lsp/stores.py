"""The one way fsr opens a store of its own (`.fsr/history.sqlite`, `proofs.sqlite`,
`timings.sqlite`, and the folders `captures/` and `confirms/`): a file that is no database (garbage, a folder of that name, a file SQLite calls
malformed) is moved aside, kept for whoever wants to look, named in one line on stderr and in
the log, and a fresh store is made, so the command or the editor's hover goes on. Where even
that fails (a read-only folder), the store lives in memory for this process and says so."""

from __future__ import annotations

import logging
import sqlite3
import sys
import time
from pathlib import Path

log = logging.getLogger("fsr_lsp.stores")


def open_store(path: Path, schema: str, timeout: float = 30.0, wal: bool = True) -> sqlite3.Connection:
    """A connection to the SQLite store at `path` with `schema` applied (its statements must be
    idempotent: CREATE ... IF NOT EXISTS)."""
    try:
        return _connect(path, schema, timeout, wal)
    except sqlite3.DatabaseError as e:  # no database, malformed, a folder (OperationalError is one too)
        kept = _moved_aside(path)
        if kept is not None:
            _say(f"{path} was damaged ({e}); kept as {kept.name}, a new one started")
            try:
                return _connect(path, schema, timeout, wal)
            except sqlite3.DatabaseError as again:
                e = again
        _say(f"{path} cannot be used ({e}); kept in memory for this run only, nothing of it is saved")
        return _connect(Path(":memory:"), schema, timeout, wal=False)


def store_folder(path: Path) -> Path:
    """`path` as a folder (made where missing, its parents too): a file in its place (garbage
    where `.fsr/captures` belongs) is moved aside, kept and named in one line, as a damaged
    store is. Raises OSError where no folder can be had there."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        return path
    except FileExistsError:
        kept = _moved_aside(path)
        if kept is None:
            raise
        _say(f"{path} was a file, not the folder fsr keeps there; kept as {kept.name}, a new folder made")
        path.mkdir(parents=True, exist_ok=True)
        return path


def _connect(path: Path, schema: str, timeout: float, wal: bool) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), check_same_thread=False, timeout=timeout)
    try:
        if wal:
            db.execute("PRAGMA journal_mode=WAL")
        db.executescript(schema)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _moved_aside(path: Path) -> Path | None:
    """The damaged store (and its WAL files) renamed beside it; None where it cannot be."""
    kept = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        path.rename(kept)
    except OSError:
        return None
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        try:
            if side.exists():
                side.rename(kept.with_name(kept.name + suffix))
        except OSError:
            pass
    return kept


def _say(message: str) -> None:
    log.warning(message)
    print(f"fsr: {message}", file=sys.stderr)
