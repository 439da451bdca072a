"""A self-contained HTML report of a search: each candidate's time per round, and a table."""

from __future__ import annotations

import html
import time
from pathlib import Path

from .loop import SearchOutcome

_W, _H, _PAD = 720, 360, 48


def write_report(outcome: SearchOutcome, kernel: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(outcome, kernel), encoding="utf-8")
    return path


def render(outcome: SearchOutcome, kernel: str) -> str:
    rows = []
    for t in outcome.tried:
        r = t.result
        rows.append(f"<tr class='{r.status}'><td>{t.proposal.round + 1}</td><td>{html.escape(t.proposal.note or t.proposal.generator)}</td>"
                    f"<td>{r.status}</td><td>{_num(t.time_ms)}</td><td>{_num(r.speedup, 'x')}</td>"
                    f"<td>{html.escape(r.message.splitlines()[0] if r.message else '')[:200]}</td></tr>")
    base = outcome.baseline.original_time.median_ms if outcome.baseline and outcome.baseline.original_time else None
    gpu = outcome.baseline.gpu.name if outcome.baseline and outcome.baseline.gpu else ""
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>fsr: {html.escape(kernel)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}}
tr.verified td{{color:#075}} tr.wrong td,tr.crashed td,tr.timeout td{{color:#a00}}</style></head><body>
<h1>{html.escape(kernel)}</h1>
<p>{html.escape(outcome.message)}</p>
<p>{html.escape(gpu)}; {len(outcome.tried)} candidates in {outcome.rounds} rounds, {outcome.seconds:.0f} s; stopped: {html.escape(outcome.stopped)}.
Generated {time.strftime('%Y-%m-%d %H:%M')}.</p>
{_plot(outcome, base)}
<table><tr><th>round</th><th>candidate</th><th>verdict</th><th>ms</th><th>speedup</th><th>detail</th></tr>
{''.join(rows)}</table></body></html>
"""


def _plot(outcome: SearchOutcome, base: float | None) -> str:
    """Candidate time (ms) against round; failures drawn as crosses along the top."""
    points = [(t.proposal.round, t.time_ms) for t in outcome.tried if t.verified and t.time_ms]
    failed = [t.proposal.round for t in outcome.tried if not t.verified]
    values = [ms for _, ms in points] + ([base] if base else [])
    if not values:
        return "<p>No candidate was verified, so there is nothing to plot.</p>"
    top, bottom = max(values) * 1.1, 0.0
    rounds = max(outcome.rounds, 1)

    def x(r: float) -> float:
        return _PAD + (r + 0.5) * (_W - 2 * _PAD) / rounds

    def y(ms: float) -> float:
        return _H - _PAD - (ms - bottom) / (top - bottom) * (_H - 2 * _PAD)

    parts = [f"<svg width='{_W}' height='{_H}' xmlns='http://www.w3.org/2000/svg'>",
             f"<line x1='{_PAD}' y1='{_H - _PAD}' x2='{_W - _PAD}' y2='{_H - _PAD}' stroke='#444'/>",
             f"<line x1='{_PAD}' y1='{_PAD}' x2='{_PAD}' y2='{_H - _PAD}' stroke='#444'/>",
             f"<text x='{_W / 2}' y='{_H - 10}' text-anchor='middle'>round</text>",
             f"<text x='12' y='{_PAD - 12}'>ms</text>",
             f"<text x='{_PAD - 6}' y='{y(top) + 4}' text-anchor='end'>{top:.3g}</text>",
             f"<text x='{_PAD - 6}' y='{y(0) + 4}' text-anchor='end'>0</text>"]
    for r in range(rounds):
        parts.append(f"<text x='{x(r)}' y='{_H - _PAD + 16}' text-anchor='middle'>{r + 1}</text>")
    if base:
        parts.append(f"<line x1='{_PAD}' y1='{y(base)}' x2='{_W - _PAD}' y2='{y(base)}' stroke='#888' stroke-dasharray='4'/>"
                     f"<text x='{_W - _PAD}' y='{y(base) - 4}' text-anchor='end'>original {base:.3g} ms</text>")
    for i, (r, ms) in enumerate(points):
        jitter = (i % 5 - 2) * 4
        parts.append(f"<circle cx='{x(r) + jitter}' cy='{y(ms)}' r='4' fill='#075'/>")
    for i, r in enumerate(failed):
        cx, cy = x(r) + (i % 5 - 2) * 4, _PAD - 8
        parts.append(f"<path d='M{cx - 3},{cy - 3}L{cx + 3},{cy + 3}M{cx - 3},{cy + 3}L{cx + 3},{cy - 3}' stroke='#a00'/>")
    parts.append("</svg>")
    return "\n".join(parts)


def _num(v: float | None, suffix: str = "") -> str:
    return "" if v is None else f"{v:.4g}{suffix}"
