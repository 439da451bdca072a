"""Durable search history: every candidate, its verdict and its times, in the workspace.

SQLite (WAL) in `.fsr/history.sqlite`. Candidates are keyed by the search key (a hash of the
kernel with its spec, the compile flags and the GPU) and their own key (code + flags), so a
search killed midway loses nothing already evaluated, a resumed or repeated search reuses
verdicts instead of re-timing identical candidates, and `fsr history` can list them.
Secrets are redacted before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..evaluator.records import EvalResult
from ..evaluator.worker.serde import from_json, to_json
from ..redaction import redact, register
from ..scratch import process_alive
from ..stores import open_store
from .proposal import Proposal, Tried

_SCHEMA = """
CREATE TABLE IF NOT EXISTS searches (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    file TEXT NOT NULL,
    kernel TEXT NOT NULL,
    gpu TEXT NOT NULL,
    started REAL NOT NULL,
    finished REAL,
    config TEXT NOT NULL,
    outcome TEXT,
    pid INTEGER
);
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY,
    search_key TEXT NOT NULL,
    search_id INTEGER,
    cand_key TEXT NOT NULL,
    file TEXT NOT NULL,
    kernel TEXT NOT NULL,
    round INTEGER NOT NULL,
    generator TEXT NOT NULL,
    note TEXT NOT NULL,
    source TEXT NOT NULL,
    flags TEXT NOT NULL,
    prompt TEXT NOT NULL,
    response TEXT NOT NULL,
    parent TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT NOT NULL,
    speedup REAL,
    time_ms REAL,
    gpu TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (search_key, cand_key)
);
CREATE INDEX IF NOT EXISTS candidates_by_kernel ON candidates (file, kernel);
"""
REUSABLE = ("verified", "wrong", "compile_error", "rejected", "unchanged", "spec_error")  # verdicts that do not depend on luck


def search_key(kernel_text: str, gpu_name: str, flags: Iterable[str] = ()) -> str:
    payload = json.dumps([kernel_text.strip(), gpu_name, list(flags)])
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


@dataclass
class StoredCandidate:
    round: int
    generator: str
    status: str
    speedup: float | None
    time_ms: float | None
    message: str
    source: str
    created: float


class HistoryStore:
    def __init__(self, workspace: str | Path, secrets: Iterable[str] = ()) -> None:
        folder = Path(workspace) / ".fsr"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "history.sqlite"
        for secret in secrets:
            register(secret)
        self._lock = threading.Lock()
        self._db = open_store(self.path, _SCHEMA)  # a damaged file moved aside, a fresh one made
        self._db.execute("PRAGMA synchronous=NORMAL")
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(searches)")}
        if "pid" not in columns:  # a history from before searches knew their process
            self._db.execute("ALTER TABLE searches ADD COLUMN pid INTEGER")
        self._mark_interrupted()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "HistoryStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def redact(self, text: str) -> str:
        return redact(text)

    # ------------------------------------------------------------ searches

    def start_search(self, key: str, file: str, kernel: str, gpu: str, config: dict) -> int:
        with self._lock, self._db:
            cur = self._db.execute(
                "INSERT INTO searches (key, file, kernel, gpu, started, config, pid) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, file, kernel, gpu, time.time(), self.redact(json.dumps(config, default=str)), os.getpid()))
            return int(cur.lastrowid)

    def _mark_interrupted(self) -> None:
        """Searches whose process is gone without ending them (a kill, a crash) are marked so."""
        with self._lock, self._db:
            rows = self._db.execute("SELECT id, pid FROM searches WHERE finished IS NULL").fetchall()
            for search_id, pid in rows:
                if pid is None or not process_alive(pid):
                    self._db.execute("UPDATE searches SET finished = ?, outcome = ? WHERE id = ?",
                                     (time.time(), json.dumps({"status": "interrupted",
                                                               "message": "the search's process ended before it did"}),
                                      search_id))

    def interrupted(self, file: str, kernel: str) -> int:
        """How many searches of this kernel ended without finishing."""
        with self._lock:
            rows = self._db.execute("SELECT outcome FROM searches WHERE file = ? AND kernel = ?",
                                    (os.path.abspath(file), kernel)).fetchall()
        return sum(1 for (outcome,) in rows if outcome and json.loads(outcome).get("status") == "interrupted")

    def finish_search(self, search_id: int, outcome: dict) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE searches SET finished = ?, outcome = ? WHERE id = ?",
                             (time.time(), self.redact(json.dumps(outcome, default=str)), search_id))

    # ------------------------------------------------------------ candidates

    def record(self, key: str, search_id: int | None, file: str, kernel: str, tried: Tried) -> None:
        p, r = tried.proposal, tried.result
        time_ms = r.candidate_time.median_ms if r.candidate_time else None
        row = (key, search_id, p.key, file, kernel, p.round, p.generator, self.redact(p.note), self.redact(p.source),
               " ".join(p.flags), self.redact(p.prompt), self.redact(p.response), p.parent, r.status,
               self.redact(r.message), r.speedup, time_ms, r.gpu.name if r.gpu else "",
               self.redact(to_json(r)), time.time())
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO candidates (search_key, search_id, cand_key, file, kernel, round, generator, "
                "note, source, flags, prompt, response, parent, status, message, speedup, time_ms, gpu, result, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def lookup(self, key: str, proposal: Proposal) -> EvalResult | None:
        """A stored verdict for the same candidate in the same search context, when it is one
        that another run would repeat (not a timeout or a crash, which may be luck)."""
        with self._lock:
            row = self._db.execute("SELECT status, result FROM candidates WHERE search_key = ? AND cand_key = ?",
                                   (key, proposal.key)).fetchone()
        if row is None or row[0] not in REUSABLE:
            return None
        return from_json(EvalResult, row[1])

    def load(self, key: str) -> list[Tried]:
        """Every stored candidate of a search context, oldest first (for resuming)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT source, generator, note, flags, parent, round, result FROM candidates "
                "WHERE search_key = ? ORDER BY id", (key,)).fetchall()
        out = []
        for source, generator, note, flags, parent, rnd, result in rows:
            proposal = Proposal(source=source, generator=generator, note=note, flags=tuple(flags.split()),
                                parent=parent, round=rnd)
            out.append(Tried(proposal, from_json(EvalResult, result), reused=True))
        return out

    def history(self, file: str, kernel: str) -> list[StoredCandidate]:
        with self._lock:
            rows = self._db.execute(
                "SELECT round, generator, status, speedup, time_ms, message, source, created FROM candidates "
                "WHERE file = ? AND kernel = ? ORDER BY id", (os.path.abspath(file), kernel)).fetchall()
        return [StoredCandidate(*row) for row in rows]

