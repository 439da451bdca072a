"""`fsr history FILE.cu --kernel NAME`: the stored candidates of a kernel."""

from __future__ import annotations

import argparse
import time

from rich.markup import escape
from rich.table import Table

from .arguments import workspace_of
from ..search import HistoryStore
from .console import InputError, fail, kernel_of, make_console




def run(args: argparse.Namespace) -> int:
    try:
        kernel_of(args.file, args.kernel)  # the file readable as UTF-8 and the kernel in it: else one line
    except InputError as e:
        return fail(str(e), 2)
    workspace = workspace_of(args.file, args.workspace)
    if not (workspace / ".fsr" / "history.sqlite").exists():  # nothing stored: and nothing created
        make_console().print(f"no history in {workspace} (no search has run there)", markup=False)
        return 0
    with HistoryStore(workspace) as store:
        rows = store.history(str(args.file), args.kernel)
        interrupted = store.interrupted(str(args.file), args.kernel)
    console = make_console()
    if not rows:
        console.print(f"no stored candidates for {args.kernel} in {args.file}", markup=False)
        return 0
    table = Table("when", "round", "generator", "verdict", "ms", "speedup", "detail", box=None, pad_edge=False)
    for r in rows:
        table.add_row(time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created)), str(r.round + 1),
                      escape(r.generator[:40]), r.status, f"{r.time_ms:.4g}" if r.time_ms else "",
                      f"{r.speedup:.2f}x" if r.speedup else "", escape(r.message.splitlines()[0][:70] if r.message else ""))
    console.print(table)
    if interrupted:
        console.print(f"{interrupted} search{'es' if interrupted > 1 else ''} of {args.kernel} ended without "
                      "finishing (the process was killed); what they evaluated is above", markup=False)
    if args.source:
        for r in rows:
            console.rule(f"round {r.round + 1}: {r.generator} ({r.status})")
            console.print(r.source, markup=False, highlight=False)
    return 0
