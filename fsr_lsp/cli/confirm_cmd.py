"""`fsr confirm FILE --kernel NAME`: the applied rewrite in the user's own program: rebuilt as
captured, rerun under the capture, its kernel time, exit status and output held against the
captured run's (workflows/confirm.py)."""

from __future__ import annotations

import argparse

from rich.markup import escape

from ..settings import settings_from_args
from ..workflows.confirm import confirm
from .arguments import workspace_of
from .console import InputError, fail, kernel_of, make_console


def run(args: argparse.Namespace) -> int:
    try:
        kernel_of(args.file, args.kernel)
        settings = settings_from_args(args)
    except (InputError, ValueError) as e:
        return fail(str(e), 2)
    if args.no_build and args.build is not None:
        return fail("--build and --no-build: give one", 2)
    console = make_console(stderr=True, highlight=False)
    workspace = workspace_of(args.file, args.workspace)
    console.print(f"confirming {escape(args.kernel)} in your program: rebuilding and rerunning it as captured")
    rebuild = args.build if args.build is not None else not args.no_build
    done = confirm(workspace, args.file.resolve(), args.kernel, settings, rebuild=rebuild, timeout=args.timeout)
    out = make_console(highlight=False)
    for line in done.lines:
        out.print(escape(line))
    colour = {"confirmed": "green", "differs": "yellow", "failed": "red"}[done.status]
    out.print(f"[{colour}]{escape(args.kernel)}: {done.status}[/]")
    return done.exit_code
