"""`fsr`: batch use of what the language server does in the editor."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Callable

from .. import processes, scratch
from ..redaction import RedactingFilter, register_environment
from ..instruments import GPU, Instruments
from .parsers import build_parser

__all__ = ["build_parser", "main"]


def _work(command: str) -> Callable[[argparse.Namespace], int]:
    """What the command does, imported only for the command that runs (parsers.py has what each
    takes)."""
    if command == "eval":
        from .eval_cmd import run
    elif command == "optimize":
        from .optimize_cmd import run
    elif command == "history":
        from .history_cmd import run
    elif command == "spec":
        from .spec_cmd import run
    elif command == "capture":
        from .capture_cmd import run
    elif command == "confirm":
        from .confirm_cmd import run
    else:
        from .profile_cmd import run
    return run


def main(argv: list[str] | None = None, instruments: Instruments = GPU) -> int:
    """`instruments`: stand-ins for the GPU work (tests: tests/doubles.py); the GPU's own by default."""
    args = build_parser().parse_args(argv)
    args.instruments = instruments
    run = _work(args.command)
    if os.environ.get("FSR_LOG_FILE"):  # for whoever debugs timing: fsr's own debug log, timestamped
        logging.basicConfig(filename=os.environ["FSR_LOG_FILE"], level=logging.DEBUG,
                            format="%(relativeCreated)8.0f ms %(threadName)s %(name)s: %(message)s")
        logging.getLogger().handlers[0].addFilter(RedactingFilter())
    register_environment([getattr(args, "llm_key_env", "")])
    # Every child (the evaluator's worker, compilers, sanitizers, a captured program) ends with
    # fsr, however fsr ends; --help and a bad argument start nothing.
    processes.start_reaper(processes.mark_tree())
    scratch.sweep()  # what a killed fsr left behind
    try:
        return run(args)
    except KeyboardInterrupt:
        print("fsr: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
