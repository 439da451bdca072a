"""Options that every GPU command takes."""

from __future__ import annotations

import argparse
import sys


def fail(message: str, code: int) -> int:
    """One line on stderr, no traceback; the exit status to return."""
    print(f"fsr: {message}", file=sys.stderr)
    return code


def add_gpu_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", type=int, default=0, help="GPU index (default 0)")
    p.add_argument("--no-sanitize", action="store_true", help="skip compute-sanitizer on round leaders and the winner")
    p.add_argument("--min-gain", type=float, default=0.02,
                   help="a win's whole speedup interval must lie above 1 + this (default 0.02: 2%%)")
    p.add_argument("--flag", action="append", default=[], dest="flags", metavar="FLAG",
                   help="extra nvcc flag, e.g. --flag=-use_fast_math (repeatable)")
    p.add_argument("-I", action="append", default=[], dest="include_dirs", metavar="DIR", help="include directory")
