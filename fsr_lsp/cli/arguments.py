"""Every argument checked when it is parsed, before any work: one line and exit 2 for a bad
one (argparse's usage block is for --help), numbers finite and in range, folders that exist;
and the workspace a file belongs to."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Callable, NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse with its error as one line: `fsr eval: argument --reps: invalid int value: 'nan'`."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def seconds(text: str) -> float:
    """A positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def at_least(minimum: int) -> Callable[[str], int]:
    """A whole number of at least `minimum`."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected at least {minimum}, got {value}")
        return value
    parse.__name__ = f"a whole number of at least {minimum}"
    return parse


def folder(text: str) -> Path:
    """A folder that exists."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return path


def workspace_of(file: Path, explicit: Path | None = None) -> Path:
    """Where a file's workspace (and so its `.fsr/` history) is: the folder given (--workspace),
    else the nearest ancestor holding `.fsr` or `.git`, else the file's folder."""
    if explicit is not None:
        return explicit
    here = file.resolve().parent
    for place in (here, *here.parents):
        if (place / ".fsr").is_dir() or (place / ".git").exists():
            return place
    return here
