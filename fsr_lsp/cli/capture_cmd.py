"""`fsr capture [--kernel K] [--build CMD] -- CMD ARGS...`: run the user's own program under the
capture library and show, per kernel it launched, the launches recorded (grid, block, arguments
and the allocations its pointers point into). `fsr spec`, `fsr optimize` and the editor then take
a kernel's spec from the workspace's latest capture. `--build` first runs the build, recording
how it compiles each file (its flags then join every compile of those kernels)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from ..capture import Capture, CaptureError, CaptureOptions, run_capture
from ..capture.build_watch import run_build
from ..settings import settings_from_args
from .console import fail, make_console




def run(args: argparse.Namespace) -> int:
    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    try:
        settings = settings_from_args(args)
    except ValueError as e:
        return fail(str(e), 2)
    console = make_console(stderr=True, highlight=False)
    if args.build is not None:
        code = _build(console, args.build, args.workspace.resolve(), settings.compiler_nvcc, args.timeout)
        if code:
            return code
    if not command:
        return 0 if args.build is not None else fail(
            "no command to capture: give the program to run, e.g. fsr capture -- ./app 1024", 2)
    console.print(f"capturing the launches of: {escape(' '.join(command))}")
    try:
        capture = run_capture(command, args.workspace.resolve(),
                              CaptureOptions(kernels=tuple(args.kernel), snapshot_bytes=settings.capture_snapshot_bytes,
                                             max_per_kernel=args.max_per_kernel, timeout=args.timeout,
                                             nvcc=settings.compiler_nvcc, build=args.build or ""))
    except CaptureError as e:
        return fail(str(e), 2)
    _print(capture)
    if not capture.launches:
        status = f"the program exited with status {capture.exit_code} and " if capture.exit_code else ""
        return fail(f"{status}no kernel launch was recorded: did the program launch one"
                    + (f" named {', '.join(args.kernel)}" if args.kernel else "")
                    + "? (a program that never touches the GPU, or one run under another profiler, records none); "
                    "nothing was kept", 1)
    return 0


def _build(console, command: str, workspace: Path, nvcc: str, timeout: float | None) -> int:
    """Run the build, watching its nvcc; 0 to go on to the program, else fsr's exit status."""
    if not command.strip():
        return fail("--build needs the build command, e.g. --build \"make -B\"", 2)
    console.print(f"building, recording each nvcc compile: {escape(command)}")
    built = run_build(command, workspace, nvcc=nvcc, timeout=timeout)
    for file in built.files():
        console.print(f"  recorded how the build compiles {escape(file)}")
    for problem in built.problems:
        console.print(f"[yellow]problem:[/] {escape(problem)}")
    if built.exit_code != 0:
        return fail(f"the build did not succeed (exit status {built.exit_code}): the program was not run, so its "
                    "launches are not of the build just recorded; earlier captures are kept", 1)
    return 0


def _print(capture: Capture) -> None:
    console = make_console(highlight=False)
    if not capture.launches:
        return
    table = Table(title=f"launches captured in {capture.folder}")
    for column in ("kernel", "launches", "shapes", "most frequent", "GPU time", "pointers"):
        table.add_column(column)
    for base in sorted({x.base for x in capture.launches}):
        mine = capture.of(base)
        top = mine[0]
        pointers = [p for p in top.params if p.alloc is not None]
        sizes = ", ".join(f"{p.alloc.size - p.alloc.offset} B" for p in pointers)
        table.add_row(escape(top.name if top.template_args else base), str(sum(x.count for x in mine)), str(len(mine)),
                      escape(top.where()), f"{top.gpu_ns / 1e6:.4g} ms" if top.timed else "-",
                      escape(f"{len(pointers)}: {sizes}" if pointers else "0"))
    console.print(table)
    if capture.exit_code:
        console.print(f"the program exited with status {capture.exit_code}: what it launched before is kept")
    for problem in capture.problems:
        console.print(f"[yellow]problem:[/] {escape(problem)}")
    if capture.launches:
        console.print("fsr spec FILE.cu, fsr optimize and the editor now take these kernels' specs from this capture "
                      "(other kernels keep theirs from earlier captures)")
