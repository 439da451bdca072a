"""`fsr optimize FILE.cu --kernel NAME`: the editor's Optimize from the command line (the same use
case: a kernel with no spec gets a draft from its launch anywhere in the workspace, proven
first), with a progress bar, a table and a report."""

from __future__ import annotations

import argparse
import logging
import os
import threading
import time
from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..failures import said
from ..drafting.by_llm import model_draft
from ..llmclient import ChatClient
from ..search import SearchOutcome
from ..search.loop import first_win_seconds
from ..search.applicable import applicable
from ..search.apply import ApplyError
from ..search.report import parents, write_report
from ..workflows.optimize import Optimizer, KernelJob
from . import STARTED
from .kernel_job import KernelCommand, kernel_job
from .console import fail, make_console


def run(args: argparse.Namespace) -> int:
    console = make_console(stderr=True)
    optimizer = Optimizer(instruments=args.instruments)
    job = kernel_job(args, KernelCommand("searching", optimizer.unavailable, lambda s: lambda: _model_drafter(s)),
                     started=STARTED)
    if isinstance(job, int):
        return job
    plan = job.plan
    assert plan is not None
    if plan.message:
        console.print(escape(plan.message), highlight=False)
    if plan.draft:
        console.print(plan.draft, markup=False, highlight=False)
    try:
        outcome, interrupted = _run_with_progress(console, optimizer, job)
    except ValueError as e:  # a --gpu that names no GPU
        optimizer.close()
        return fail(str(e), 2)
    except Exception as e:  # a bug of ours, a locked history: one line, never a traceback (it goes to the log)
        logging.getLogger("fsr_lsp.cli").debug("the search of %s failed", args.kernel, exc_info=True)
        optimizer.close()
        return fail(f"the search failed: {said(e)}", 1)
    try:  # the answer first, then the workers go
        if interrupted:
            args.apply = False  # the user stopped it: what was found is reported, the file left alone
        code = _finish(args, job, outcome, job.workspace, job.settings.search_sanitize)
        if interrupted:
            found = "the best verified result so far is above" if outcome.best else "no verified win so far"
            console.print(f"interrupted after {time.monotonic() - job.started:.1f} s: {found}; every candidate "
                          "evaluated is stored, and the next search of this kernel starts from them", highlight=False)
            return 130
        return code
    finally:
        optimizer.close()


def _finish(args: argparse.Namespace, job: KernelJob, outcome: SearchOutcome, workspace: Path, sanitized: bool) -> int:
    if outcome.status == "failed" and outcome.baseline is not None and outcome.baseline.status == "unavailable":
        return fail(outcome.baseline.message, 3)
    _print_outcome(outcome, args.kernel, sanitized)
    report = args.report or workspace / ".fsr" / "reports" / f"{args.kernel}-{time.strftime('%Y%m%d-%H%M%S')}.html"
    if outcome.tried:
        print(f"report: {write_report(outcome, args.kernel, report)}")
    if args.apply and outcome.best is not None:
        return _apply(args.file, job)
    return {"improved": 0, "no_win": 0, "cancelled": 130}.get(outcome.status, 1)


def _model_drafter(settings):
    chat = ChatClient(settings.llm_config())
    return lambda src, k, launches, why: model_draft(chat, src, k, launches, why)


def _run_with_progress(console, optimizer: Optimizer, job: KernelJob) -> tuple[SearchOutcome, bool]:
    """The search in a thread; a progress bar on a terminal, a line per step when piped (a log
    or a CI job sees the search move, not silence until the end). Ctrl-C (or SIGTERM) cancels
    it: the search stops, keeps what it verified, and the outcome comes back marked interrupted."""
    config = job.settings.search_config()
    total = config.rounds * config.candidates
    result: dict[str, SearchOutcome] = {}
    live = console.is_terminal
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[best]}"), TimeElapsedColumn(), console=console, transient=False,
                  disable=not live) as bar:
        task = bar.add_task("starting", total=total, best="")
        last = [""]

        def progress(p) -> None:
            best = f"best verified {p.best_speedup:.2f}x" if p.best_speedup else ""
            description = f"round {p.round}/{p.rounds}: {p.message}"
            bar.update(task, description=description, completed=min(p.tried, total), best=best)
            line = f"{description} ({p.tried} tried{', ' + best if best else ''})"
            if not live and line != last[0]:
                last[0] = line
                console.print(line, markup=False, highlight=False)

        done = threading.Event()

        def work() -> None:
            try:
                result["outcome"] = optimizer.run(job, progress)
            except BaseException as e:  # re-raised in the main thread
                result["error"] = e
            finally:
                done.set()

        # Waited on through an event, not join(): a join that Ctrl-C interrupts can return later
        # while the thread still runs (CPython before 3.13), and the search would be lost.
        threading.Thread(target=work, daemon=True).start()
        interrupted = False
        try:
            while not done.wait(0.2):
                pass
        except KeyboardInterrupt:
            interrupted = True
            job.cancel.set()
            optimizer.cancel()
            bar.update(task, description="interrupted: keeping what was found")
            while not done.wait(0.2):  # a second Ctrl-C ends fsr at once (130)
                pass
    if "error" in result:
        raise result["error"]
    return result["outcome"], interrupted


def _print_outcome(outcome: SearchOutcome, kernel: str, sanitized: bool = True) -> None:
    console = make_console()
    if outcome.tried:
        table = Table("#", "round", "from", "candidate", "verdict", "ms", "speedup", box=None, pad_edge=False)
        for i, (t, parent) in enumerate(zip(outcome.tried, parents(outcome.tried))):
            table.add_row(str(i + 1), str(t.proposal.round + 1), parent, escape((t.proposal.note or t.proposal.generator)[:60]),
                          t.result.status + (" (stored)" if t.reused else ""),
                          f"{t.time_ms:.4g}" if t.time_ms else "", f"{t.result.speedup:.2f}x" if t.result.speedup else "")
        console.print(table)
    for note in outcome.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    first = first_win_seconds(outcome, sanitized)
    if first is not None:
        console.print(f"first fully verified win after {first:.1f} s; the search took {outcome.seconds:.1f} s",
                      highlight=False)
    style = {"improved": "green", "no_win": "yellow"}.get(outcome.status, "bold red")
    console.print(f"[{style}]{escape(kernel)}: {outcome.status.replace('_', ' ')}[/]: {escape(outcome.message)}", highlight=False)


def _apply(file: Path, job: KernelJob) -> int:
    """Write the winner into the file as it is now, only if its kernel is still the one that
    was searched (the rest of the file may have changed meanwhile), with the proven spec block
    when the search ran on a draft."""
    outcome = job.outcome
    assert outcome is not None and outcome.best is not None
    current = file.read_text(encoding="utf-8")
    try:
        chosen = applicable(current, job.searched_text if job.draft else job.text, job.kernel, job.draft, outcome,
                            job.settings.search_config().min_gain, job.launched_from)
    except ApplyError as e:
        return fail(f"not applied: {e}", 1)
    rewrite = chosen.rewrite
    if chosen.instead:
        print(f"note: {chosen.instead}")
    tmp = file.with_name(f".{file.name}.fsr-tmp")
    tmp.write_text(rewrite.text, encoding="utf-8")
    os.chmod(tmp, file.stat().st_mode)
    os.replace(tmp, file)
    print(f"applied to {file}" + (" (launch configuration changed in the @fsr block)" if rewrite.launch_changed else ""))
    for note in rewrite.notes:
        print(f"  {note}")
    return 0
