"""`fsr`: batch use of what the language server does in the editor."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .. import processes, scratch
from ..redaction import RedactingFilter, register_environment
from .arguments import OneLineParser
from . import capture_cmd, eval_cmd, history_cmd, optimize_cmd, profile_cmd, spec_cmd


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="fsr", description="Find, verify and time faster CUDA kernels.")
    sub = parser.add_subparsers(dest="command", required=True)
    eval_cmd.add_parser(sub)
    optimize_cmd.add_parser(sub)
    history_cmd.add_parser(sub)
    spec_cmd.add_parser(sub)
    capture_cmd.add_parser(sub)
    profile_cmd.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
        return args.run(args)
    except KeyboardInterrupt:
        print("fsr: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
