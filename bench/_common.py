"""Shared helpers for the GPU benchmarks: tables, result files, the evaluator."""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

console = Console(width=120)


def table(title: str, columns: list[str], rows: list[list[object]]) -> None:
    t = Table(*columns, title=title, box=None, pad_edge=False)
    for row in rows:
        t.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
    console.print(t)


def save(name: str, data: object) -> None:
    """JSON results next to the benchmark, and under $OUT when the device tool runs us."""
    text = json.dumps(data, indent=2, default=str)
    for folder in filter(None, [os.environ.get("OUT"), str(ROOT / "bench" / "results")]):
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(text)


def spread_pct(values: list[float]) -> float:
    return 100.0 * (max(values) - min(values)) / statistics.median(values)
