"""A self-contained HTML report of a search: the winner's diff against the original, each
candidate's time per round with the best-so-far line, the failures grouped by reason, and a
table of every candidate."""

from __future__ import annotations

import difflib
import html
import re
import time
from collections import defaultdict
from pathlib import Path

from ..redaction import redact
from .loop import SearchOutcome
from .proposal import Tried

_W, _H, _PAD = 720, 360, 48
_STYLE = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}
tr.verified td{color:#075} tr.wrong td,tr.crashed td,tr.timeout td{color:#a00}
pre.diff{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:13px}
pre.diff .add{background:#e6ffec;color:#05501c;display:block} pre.diff .del{background:#ffebe9;color:#82071e;display:block}
pre.diff .hunk{color:#6639ba;display:block} details{margin:4px 0}"""


def write_report(outcome: SearchOutcome, kernel: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact(render(outcome, kernel)), encoding="utf-8")
    return path


def parents(tried: list[Tried]) -> list[str]:
    """Each candidate's parent as the tables show it: the row number (from 1) of the candidate it
    refines or fixes, "original" for a rewrite of the original itself."""
    row = {t.proposal.key: i + 1 for i, t in enumerate(tried)}
    return [str(row[t.proposal.parent]) if t.proposal.parent in row else "original" for t in tried]


def render(outcome: SearchOutcome, kernel: str) -> str:
    rows = []
    for i, (t, parent) in enumerate(zip(outcome.tried, parents(outcome.tried))):
        r = t.result
        rows.append(f"<tr class='{r.status}'><td>{i + 1}</td><td>{t.proposal.round + 1}</td><td>{parent}</td>"
                    f"<td>{html.escape(t.proposal.note or t.proposal.generator)}</td>"
                    f"<td>{r.status}</td><td>{_num(t.time_ms)}</td><td>{_num(r.speedup, 'x')}</td>"
                    f"<td>{html.escape(r.message.splitlines()[0] if r.message else '')[:200]}</td></tr>")
    base = outcome.baseline.original_time.median_ms if outcome.baseline and outcome.baseline.original_time else None
    gpu = outcome.baseline.gpu.name if outcome.baseline and outcome.baseline.gpu else ""
    notes = "".join(f"<p><em>{html.escape(n)}</em></p>" for n in outcome.notes)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>fsr: {html.escape(kernel)}</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(kernel)}</h1>
<p>{html.escape(outcome.message)}</p>
<p>{html.escape(gpu)}; {len(outcome.tried)} candidates in {outcome.rounds} rounds, {outcome.seconds:.0f} s; stopped: {html.escape(outcome.stopped)}.
Generated {time.strftime('%Y-%m-%d %H:%M')}.</p>{notes}
{winner_diff(outcome)}
<h2>Time per round</h2>
{_plot(outcome, base)}
{failure_groups(outcome.tried)}
<h2>Every candidate</h2>
<table><tr><th>#</th><th>round</th><th>from</th><th>candidate</th><th>verdict</th><th>ms</th><th>speedup</th><th>detail</th></tr>
{''.join(rows)}</table></body></html>
"""


def winner_diff(outcome: SearchOutcome) -> str:
    """The winning rewrite against the original, as a highlighted unified diff."""
    best = outcome.best
    if best is None or not outcome.original:
        return ""
    diff = list(difflib.unified_diff(outcome.original.strip().splitlines(), best.proposal.source.strip().splitlines(),
                                     "original", "winner", lineterm="", n=3))
    lines = []
    for line in diff:
        cls = "hunk" if line.startswith("@@") else "add" if line.startswith("+") and not line.startswith("+++") \
            else "del" if line.startswith("-") and not line.startswith("---") else ""
        text = html.escape(line)
        lines.append(f"<span class='{cls}'>{text}</span>" if cls else text + "\n")
    title = html.escape(best.proposal.note or best.proposal.generator)
    return (f"<h2>What the winner changed: {title}</h2>\n"
            f"<pre class='diff'>{''.join(lines) or 'no textual change (compiler flags only: ' + html.escape(' '.join(best.proposal.flags)) + ')'}</pre>")


def failure_groups(tried: list[Tried]) -> str:
    """Failed candidates grouped by verdict and reason, largest group first."""
    groups: dict[tuple[str, str], list[Tried]] = defaultdict(list)
    for t in tried:
        if not t.verified:
            groups[(t.result.status, failure_reason(t))].append(t)
    if not groups:
        return ""
    parts = ["<h2>Why candidates failed</h2>"]
    for (status, reason), members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        items = "".join(f"<li>round {t.proposal.round + 1}: {html.escape(t.proposal.note or t.proposal.generator)}</li>"
                        for t in members)
        parts.append(f"<details><summary>{len(members)} × {html.escape(status.replace('_', ' '))}: "
                     f"{html.escape(reason)}</summary><ul>{items}</ul></details>")
    return "\n".join(parts)


def failure_reason(t: Tried) -> str:
    """The failing check's name (with its argument), or the first line of the message with the
    numbers that differ between candidates (sizes, counts, line numbers) taken out."""
    failed = [c for c in t.result.checks if c.status == "fail"]
    if failed:
        c = failed[0]
        return c.name + (f" `{c.argument}`" if c.argument else "")
    message = t.result.message.strip()
    if t.result.status == "compile_error":
        message = next((ln for ln in message.splitlines() if "error" in ln), message)
    first = message.splitlines()[0] if message else t.result.status
    return re.sub(r"\b\d+(\.\d+)?\b", "N", first)[:160]


def _plot(outcome: SearchOutcome, base: float | None) -> str:
    """Candidate time (ms) against round, the best verified time so far as a step line;
    failures drawn as crosses along the top."""
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
    best = best_so_far(outcome, base)
    if best:
        path = " ".join(f"{x(r - 0.5) if i else x(r)},{y(ms)} {x(r + 0.5) if r < rounds - 1 else x(r)},{y(ms)}"
                        for i, (r, ms) in enumerate(best))
        parts.append(f"<polyline class='best-so-far' points='{path}' fill='none' stroke='#075' stroke-width='2'/>"
                     f"<text x='{x(best[-1][0])}' y='{y(best[-1][1]) - 8}' text-anchor='middle' fill='#075'>"
                     f"best so far {best[-1][1]:.3g} ms</text>")
    for i, (r, ms) in enumerate(points):
        jitter = (i % 5 - 2) * 4
        parts.append(f"<circle cx='{x(r) + jitter}' cy='{y(ms)}' r='4' fill='#075'/>")
    for i, r in enumerate(failed):
        cx, cy = x(r) + (i % 5 - 2) * 4, _PAD - 8
        parts.append(f"<path d='M{cx - 3},{cy - 3}L{cx + 3},{cy + 3}M{cx - 3},{cy + 3}L{cx + 3},{cy - 3}' stroke='#a00'/>")
    parts.append("</svg>")
    return "\n".join(parts)


def best_so_far(outcome: SearchOutcome, base: float | None) -> list[tuple[int, float]]:
    """(round, fastest verified time up to and including it), one entry per round; the
    original's time until something beats it."""
    out = []
    best = base
    for r in range(max(outcome.rounds, 1)):
        times = [t.time_ms for t in outcome.tried if t.proposal.round == r and t.verified and t.time_ms]
        if times:
            best = min([*times, *([best] if best else [])])
        if best:
            out.append((r, best))
    return out


def _num(v: float | None, suffix: str = "") -> str:
    return "" if v is None else f"{v:.4g}{suffix}"
