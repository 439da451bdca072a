"""`fsr optimize FILE.cu --kernel NAME`: the search, with a progress bar, a table, a report."""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.markup import escape
from rich.table import Table

from ..evaluator import EvalOptions, Evaluator
from ..evaluator.backends.ray_cluster import RayBackend, ray_missing
from ..evaluator.backends.local import LocalBackend, local_gpus
from ..evaluator.support import gpu_support_missing
from ..kernels import find_kernel
from ..search import HistoryStore, SearchConfig, SearchOutcome, run_search
from ..search.apply import ApplyError, rewrite_if_unchanged
from ..search.generators.tuner.generator import BuiltinGenerator
from ..search.generators.llm import LLMGenerator
from ..search.gpu_bench import GpuBench
from ..search.report import write_report
from .common import add_gpu_options, add_llm_options, add_ray_option, fail, llm_config, make_console
from .workspace import workspace_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("optimize", help="search for a faster verified rewrite of a kernel",
                       description="Run the FSR search on one kernel: rounds of candidates from the LLM endpoint "
                                   "(or the built-in generator), each verified against the original and timed.")
    p.add_argument("file", type=Path)
    p.add_argument("--kernel", "-k", required=True)
    p.add_argument("--rounds", type=int, default=4, help="search depth (default 4)")
    p.add_argument("--candidates", type=int, default=8, help="candidates per round; 1 = staged refinement (default 8)")
    p.add_argument("--time-budget", type=float, default=300.0, help="seconds for the whole search (default 300)")
    p.add_argument("--target-speedup", type=float, help="stop once a verified candidate is this much faster")
    p.add_argument("--fix-attempts", type=int, default=1, help="times a failed candidate is sent back to be fixed")
    p.add_argument("--apply", action="store_true", help="write the fastest verified rewrite into FILE")
    add_llm_options(p)
    p.add_argument("--report", type=Path, help="HTML report path (default .fsr/reports/KERNEL-TIME.html)")
    p.add_argument("--workspace", type=Path, help="folder holding .fsr/ (default: nearest with .fsr or .git)")
    add_gpu_options(p, several=True)
    add_ray_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    console = make_console(stderr=True)
    try:
        source = args.file.read_text(encoding="utf-8")
    except OSError as e:
        return fail(f"cannot read {e.filename}: {e.strerror}", 2)
    if find_kernel(source, args.kernel) is None:
        return fail(f"no kernel named {args.kernel} in {args.file}", 2)
    missing = ray_missing() if args.ray else gpu_support_missing("the search needs")
    if missing:
        return fail(missing, 3)
    llm = llm_config(args)
    config = SearchConfig(rounds=args.rounds, candidates=args.candidates, time_budget=args.time_budget,
                          target_speedup=args.target_speedup, fix_attempts=args.fix_attempts,
                          sanitize_winner=not args.no_sanitize, min_gain=args.min_gain, llm=llm)
    generator = LLMGenerator(llm) if llm.configured else BuiltinGenerator()
    workspace = workspace_of(args.file, args.workspace)
    options = EvalOptions(flags=tuple(args.flags), include_dirs=(str(args.file.parent.resolve()), *args.include_dirs))
    cancel = threading.Event()
    secrets = [os.environ.get(llm.api_key_env, "")]
    try:
        gpus = local_gpus(args.gpu)
    except ValueError:
        return fail(f"--gpu {args.gpu}: expected an index, a list such as 0,1, or all", 2)
    backend = RayBackend(args.ray) if args.ray else LocalBackend([Evaluator(i) for i in gpus])
    try:
        with HistoryStore(workspace, secrets=secrets) as store:
            bench = GpuBench(backend, source, args.kernel, options, cancel=cancel)
            outcome = _run_with_progress(console, source, args, config, bench, generator, store, cancel)
    finally:
        backend.close()
    if outcome.status == "failed" and outcome.baseline is not None and outcome.baseline.status == "unavailable":
        return fail(outcome.baseline.message, 3)
    _print_outcome(outcome, args.kernel)
    report = args.report or workspace / ".fsr" / "reports" / f"{args.kernel}-{time.strftime('%Y%m%d-%H%M%S')}.html"
    if outcome.tried:
        print(f"report: {write_report(outcome, args.kernel, report)}")
    if args.apply and outcome.best is not None:
        return _apply(args.file, args.kernel, outcome, source)
    return {"improved": 0, "no_win": 0, "cancelled": 130}.get(outcome.status, 1)


def _run_with_progress(console, source, args, config, bench, generator, store, cancel) -> SearchOutcome:
    total = config.rounds * config.candidates
    result: dict[str, SearchOutcome] = {}
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[best]}"), TimeElapsedColumn(), console=console, transient=False) as bar:
        task = bar.add_task("starting", total=total, best="")

        def progress(p) -> None:
            best = f"best {p.best_speedup:.2f}x" if p.best_speedup else ""
            bar.update(task, description=f"round {p.round}/{p.rounds}: {p.message}", completed=min(p.tried, total),
                       best=best)

        def work() -> None:
            result["outcome"] = run_search(source, str(args.file), args.kernel, config, bench, generator, store,
                                           progress, cancel)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        try:
            while thread.is_alive():
                thread.join(0.2)
        except KeyboardInterrupt:
            cancel.set()
            bench.backend.cancel()
            bar.update(task, description="cancelling: keeping what was found")
            thread.join()
    return result["outcome"]


def _print_outcome(outcome: SearchOutcome, kernel: str) -> None:
    console = make_console()
    if outcome.tried:
        table = Table("round", "candidate", "verdict", "ms", "speedup", box=None, pad_edge=False)
        for t in outcome.tried:
            table.add_row(str(t.proposal.round + 1), escape((t.proposal.note or t.proposal.generator)[:60]),
                          t.result.status + (" (stored)" if t.reused else ""),
                          f"{t.time_ms:.4g}" if t.time_ms else "", f"{t.result.speedup:.2f}x" if t.result.speedup else "")
        console.print(table)
    for note in outcome.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    style = {"improved": "green", "no_win": "yellow"}.get(outcome.status, "bold red")
    console.print(f"[{style}]{escape(kernel)}: {outcome.status.replace('_', ' ')}[/]: {escape(outcome.message)}", highlight=False)


def _apply(file: Path, kernel: str, outcome: SearchOutcome, searched: str) -> int:
    """Write the winner into the file as it is now, only if its kernel is still the one that
    was searched (the rest of the file may have changed meanwhile)."""
    assert outcome.best is not None
    current = file.read_text(encoding="utf-8")
    try:
        rewrite = rewrite_if_unchanged(current, searched, kernel, outcome.best.proposal.source)
    except ApplyError as e:
        return fail(f"not applied: {e}", 1)
    tmp = file.with_name(f".{file.name}.fsr-tmp")
    tmp.write_text(rewrite.text, encoding="utf-8")
    os.chmod(tmp, file.stat().st_mode)
    os.replace(tmp, file)
    print(f"applied to {file}" + (" (launch configuration changed in the @fsr block)" if rewrite.launch_changed else ""))
    for note in rewrite.notes:
        print(f"  {note}")
    return 0
