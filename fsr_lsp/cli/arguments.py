"""Every argument of `fsr` and `fsr-lsp` checked when it is parsed, before any work: one line and
exit 2 for a bad one (argparse's usage block is for --help), numbers finite and in range,
folders that exist, files and workspaces that can be written (tried, so that a read-only place
is said before a search rather than as a traceback after it); and the workspace a file belongs to."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable, NoReturn

# The longest wait a timeout may ask for: a week. Beyond it a thread's wait overflows
# (threading.TIMEOUT_MAX) long before any kernel or program is worth waiting for.
LONGEST_WAIT = 7 * 24 * 3600.0


class OneLineParser(argparse.ArgumentParser):
    """argparse with its error as one line: `fsr eval: argument --reps: invalid int value: 'nan'`."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def seconds(text: str) -> float:
    """A positive, finite number of seconds, at most a week."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    if value > LONGEST_WAIT:
        raise argparse.ArgumentTypeError(f"expected at most {LONGEST_WAIT:.0f} seconds (a week), got {text!r}")
    return value


def no_longer_than_a_week(text: str) -> float:
    """A number of seconds a setting's flag gives (a time budget, a request's timeout): at most a
    week; what else it must be (finite, its minimum) the settings table says when settings are made."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if math.isfinite(value) and value > LONGEST_WAIT:
        raise argparse.ArgumentTypeError(f"expected at most {LONGEST_WAIT:.0f} seconds (a week), got {text!r}")
    return value


def at_least(minimum: int, most: int | None = None) -> Callable[[str], int]:
    """A whole number of at least `minimum` (and at most `most`)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected at least {minimum}, got {value}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"expected at most {most}, got {value}")
        return value
    parse.__name__ = f"a whole number of at least {minimum}"
    return parse


def gpu_index(text: str) -> str:
    """One GPU, by its index (the commands that run on one GPU; `--gpu all` is for searches)."""
    if not re.fullmatch(r"[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"expected one GPU's index (0, 1, ...), got {text!r}")
    return str(int(text))


def folder(text: str) -> Path:
    """A folder that exists."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return path


def workspace(text: str) -> Path:
    """A folder that exists and can hold `.fsr/` (the history, captures, proofs)."""
    path = folder(text)
    problem = unwritable(path)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return path


def unwritable(place: Path) -> str:
    """Why fsr cannot write its `.fsr/` folder in `place` ('' when it can): tried, not guessed from
    permission bits (root may write anywhere but /proc; a read-only mount refuses everyone), by a
    file made and removed in `.fsr/`, or in `place` while there is no `.fsr/` yet: asking leaves
    nothing behind."""
    store = place.absolute() / ".fsr"  # named in full: `.` says nothing in a message
    if store.exists() and not store.is_dir():
        return f"{store} is a file: fsr keeps its history, captures and proofs in a folder of that name"
    target = store if store.is_dir() else store.parent
    try:
        handle, probe = tempfile.mkstemp(dir=target, prefix=".fsr-write-test-")
        os.close(handle)
        os.unlink(probe)
    except OSError as e:
        return f"cannot write in {target} (fsr keeps its history, captures and proofs in {store}): {e.strerror or e}"
    return ""


def file_to_write(make_folders: bool = False) -> Callable[[str], Path]:
    """A file that can be written (a log, a report): tried now and left as it was. With
    `make_folders`, folders missing on its way are made (the command would make them)."""
    def parse(text: str) -> Path:
        path = Path(text)
        if not text or path.is_dir():
            raise argparse.ArgumentTypeError(f"expected a file's name, got the folder {text!r}" if text
                                             else "expected a file's name")
        existed = path.exists()
        if make_folders and not path.parent.exists():  # tried, then removed: nothing is left behind by a check
            missing = [p for p in path.absolute().parents if not p.exists()]
            try:
                missing[-1].mkdir()
                missing[-1].rmdir()
            except OSError as e:
                raise argparse.ArgumentTypeError(f"cannot write {text}: {missing[-1].parent} cannot take the folders "
                                                 f"on its way ({e.strerror or e})") from None
            return path
        try:
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError as e:
            raise argparse.ArgumentTypeError(f"cannot write {text}: {e.strerror or e}") from None
        if not existed:
            path.unlink(missing_ok=True)
        return path
    parse.__name__ = "a file that can be written"
    return parse


def host_port(text: str) -> tuple[str, int]:
    """HOST:PORT (or :PORT, or PORT: on 127.0.0.1; [::1]:PORT for IPv6), the port 1-65535."""
    host, _, port = text.rpartition(":")
    if not re.fullmatch(r"[0-9]{1,5}", port):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT such as 127.0.0.1:2087, got {text!r}")
    number = int(port)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port {number} is out of range: expected 1 to 65535")
    return host.removeprefix("[").removesuffix("]") or "127.0.0.1", number


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
