"""`fsr capture [--kernel K] -- CMD ARGS...`: run the user's own program under the capture
library and show, per kernel it launched, the launches recorded (grid, block, arguments and
the allocations its pointers point into). `fsr spec`, `fsr optimize` and the editor then take
a kernel's spec from the workspace's latest capture."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from ..capture import Capture, CaptureError, run_capture
from ..settings import settings_from_args, add_setting_flags
from .arguments import at_least, folder, seconds
from .console import fail, make_console


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="record each kernel launch of a run of your program (for specs)",
                       description="Runs CMD (a binary built with nvcc, static cudart included; python train.py; "
                                   "a test) with a CUPTI injection library that records, for each kernel launched, "
                                   "grid, block, dynamic shared memory, scalar arguments and the allocation each "
                                   "pointer points into. Stored in the workspace's .fsr/captures/; fsr spec, fsr "
                                   "optimize and the editor take specs from the latest capture.",
                       usage="fsr capture [options] -- CMD [ARGS...]")
    p.add_argument("--kernel", "-k", action="append", default=[], help="only this kernel (repeatable)")
    p.add_argument("--workspace", type=folder, default=Path.cwd(), help="the workspace (default: this folder)")
    p.add_argument("--timeout", type=seconds, default=None, help="stop the program after this many seconds")
    p.add_argument("--max-per-kernel", type=at_least(1), default=64, help="distinct launches kept per kernel")
    add_setting_flags(p, "compiler.nvcc", "capture.snapshotBytes")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    try:
        settings = settings_from_args(args)
    except ValueError as e:
        return fail(str(e), 2)
    console = make_console(stderr=True, highlight=False)
    console.print(f"capturing the launches of: {escape(' '.join(command))}")
    try:
        capture = run_capture(command, args.workspace.resolve(), kernels=tuple(args.kernel),
                              snapshot_bytes=settings.capture_snapshot_bytes, max_per_kernel=args.max_per_kernel,
                              timeout=args.timeout, nvcc=settings.compiler_nvcc)
    except CaptureError as e:
        return fail(str(e), 2)
    _print(capture)
    if not capture.launches:
        return fail("no kernel launch was recorded: did the program launch one"
                    + (f" named {', '.join(args.kernel)}" if args.kernel else "")
                    + "? (a program that never touches the GPU, or one run under another profiler, records none)", 1)
    return 0


def _print(capture: Capture) -> None:
    console = make_console(highlight=False)
    if not capture.launches:
        return
    table = Table(title=f"launches captured in {capture.folder}")
    for column in ("kernel", "launches", "shapes", "most frequent", "pointers"):
        table.add_column(column)
    for base in sorted({x.base for x in capture.launches}):
        mine = capture.of(base)
        top = mine[0]
        pointers = [p for p in top.params if p.alloc is not None]
        sizes = ", ".join(f"{p.alloc.size - p.alloc.offset} B" for p in pointers)
        table.add_row(escape(top.name if top.template_args else base), str(sum(x.count for x in mine)), str(len(mine)),
                      escape(top.where()), escape(f"{len(pointers)}: {sizes}" if pointers else "0"))
    console.print(table)
    if capture.exit_code:
        console.print(f"the program exited with status {capture.exit_code}: what it launched before is kept")
    for problem in capture.problems:
        console.print(f"[yellow]problem:[/] {escape(problem)}")
    if capture.launches:
        console.print("fsr spec FILE.cu, fsr optimize and the editor now take specs from this capture")
