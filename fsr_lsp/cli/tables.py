"""Readable tables of evaluation results (rich)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..evaluator.records import EvalResult
from .console import make_console

_STYLE = {"pass": "green", "fail": "bold red", "skip": "yellow"}


def render_result(result: EvalResult, file: Path, candidate: Path | None, console: Console | None = None,
                  min_gain: float = 0.02) -> None:
    console = console or make_console()
    where = f" on {result.gpu.name} ({result.gpu.arch})" if result.gpu else ""
    against = f" vs {candidate}" if candidate else ""
    console.print(f"[bold]{escape(result.kernel)}[/] in {escape(str(file))}{escape(against)}{escape(where)}")
    if result.checks:
        table = Table("check", "result", "detail", box=None, pad_edge=False)
        for c in result.checks:
            table.add_row(escape(c.name), f"[{_STYLE[c.status]}]{c.status}[/]", escape(c.detail))
        console.print(table)
    times = [("original", result.original_time), ("candidate", result.candidate_time), ("ref (torch)", result.ref_time)]
    if any(t for _, t in times):
        table = Table(f"timing at {result.bench_size}", "median ms", "spread (IQR)", "min ms", "max ms", "runs",
                      box=None, pad_edge=False)
        for name, t in times:
            if t is not None:
                table.add_row(name, f"{t.median_ms:.4f}", f"{t.spread_pct:.1f}%", f"{t.min_ms:.4f}", f"{t.max_ms:.4f}", str(t.reps))
        console.print(table)
    if result.speedup is not None and result.speedup_ci is not None:
        low, high = result.speedup_ci
        verdict = (f"[green]a win[/]: the whole interval is above {1 + min_gain:.3g}x" if result.is_win(min_gain)
                   else f"[yellow]no win[/]: the interval does not clear {1 + min_gain:.3g}x (--min-gain {min_gain:g})")
        console.print(f"speedup {result.speedup:.3f}x, 95% interval {low:.3f}-{high:.3f}: {verdict}", highlight=False)
    if result.speedup_vs_ref is not None:
        console.print(f"against ref: {result.speedup_vs_ref:.2f}x")
    for w in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
    if result.status in ("compile_error", "spec_error") and "\n" in result.message:
        head, _, log = result.message.partition("\n")
        console.print(f"[bold red]{result.status}[/]: {escape(head)}", highlight=False)
        console.print(log, markup=False, highlight=False)
        return
    color = "green" if result.verified else "bold red"
    console.print(f"[{color}]{result.status}[/]: {escape(result.message)}", highlight=False)


