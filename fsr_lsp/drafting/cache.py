"""Settled proofs, kept per kernel text and GPU in the workspace (`.fsr/proofs.sqlite`), so a
draft is proven once: by the CLI, by the editor's Optimize, or by whichever comes first."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ..evaluator.worker.serde import from_json, to_json
from ..stores import open_store
from .proof import Proof

_SCHEMA = """
CREATE TABLE IF NOT EXISTS proofs (
    key TEXT PRIMARY KEY,
    kernel TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class ProofCache:
    def __init__(self, workspace: Path) -> None:
        folder = workspace / ".fsr"
        folder.mkdir(parents=True, exist_ok=True)
        self._db = open_store(folder / "proofs.sqlite", _SCHEMA, timeout=10)  # a damaged file moved aside
        self._lock = threading.Lock()

    def get(self, key: str) -> Proof | None:
        with self._lock:
            row = self._db.execute("SELECT record FROM proofs WHERE key = ?", (key,)).fetchone()
        return from_json(Proof, row[0]) if row else None

    def put(self, key: str, proof: Proof) -> None:
        record = to_json(proof)
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO proofs (key, kernel, status, record, created) VALUES (?, ?, ?, ?, ?)",
                             (key, proof.kernel, proof.status, record, time.time()))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ProofCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
