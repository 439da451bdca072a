"""`fsr spec FILE... [--kernel K] [--json]`: each kernel's spec, where it came from, and its
problems (attached, inferred from the signature, drafted from a launch site, or none)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from ..drafting.origin import kernel_specs
from .common import fail


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spec", help="show each kernel's @fsr spec: attached, inferred or drafted from a launch",
                       description="For each kernel of the files: its spec block (attached, inferred from the "
                                   "signature, or drafted from a launch in any of the files given), where it came "
                                   "from, and its problems. Drafts are checked by the spec parser, not yet proven "
                                   "on the GPU: read them before use.")
    p.add_argument("files", type=Path, nargs="+", help=".cu/.cuh/.cpp/.h files (launches may be in any of them)")
    p.add_argument("--kernel", "-k", help="only this kernel")
    p.add_argument("--json", action="store_true", help="one JSON array, an object per kernel")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    missing = [str(f) for f in args.files if not f.is_file()]
    if missing:
        return fail(f"cannot read {', '.join(missing)}", 2)
    specs = [s for s in kernel_specs(list(args.files)) if args.kernel in (None, s.kernel)]
    if args.kernel and not specs:
        return fail(f"no kernel named {args.kernel} in {', '.join(map(str, args.files))}", 2)
    if args.json:
        print(json.dumps([s.as_json() for s in specs], indent=2))
        return 0
    console = Console(soft_wrap=True)
    for s in specs:
        console.print(f"[bold]{s.kernel}[/] ({s.file}:{s.line}): [cyan]{s.origin}[/]", highlight=False)
        if s.spec:
            console.print(s.spec.rstrip(), markup=False, highlight=False)
        for key, origin in s.provenance.items():
            console.print(f"  {key}: {origin}", markup=False, highlight=False)
        for problem in s.problems:
            console.print(f"  [yellow]problem:[/] {problem}", highlight=False)
    return 0
