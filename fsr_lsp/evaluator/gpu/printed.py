"""What kernels print (device `printf`): kept out of the worker's stdout, and compared.

The worker inherits fd 1 from its parent: the LSP channel under the server, the user's
terminal under the CLI. A kernel that prints per thread would corrupt the one and flood the
other (a check kernel printing 4 M mismatch lines on random inputs held a proof for 120 s).
So the worker points fd 1 at a file of its own before CUDA starts, and reads back what was
printed after each launch, emptying the file.

Printed text is an effect of the kernel: a rewrite that drops a check's `printf` does less
work than the original and must not pass for it. On the same inputs the candidate must print
the same lines as the original, in any order (threads print in no fixed order). Where the
original's own two runs print differently (a pointer's address, the clock, or more than the
device's printf buffer holds, which drops lines in no fixed order), the lines cannot be the
judge; the candidate must still print, at least half as many lines as the original did.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections import Counter
from dataclasses import dataclass

READ_CAP = 4 << 20  # bytes read back after a launch; the device's buffer holds 1 MiB by default
SHOWN = 120  # characters of a line quoted in a verdict


class PrintedOutput:
    """fd 1 of this process, pointed at a file: what was printed since the last look."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._libc = ctypes.CDLL(None)

    @classmethod
    def redirect_stdout(cls) -> "PrintedOutput":
        """Point fd 1 at a fresh, already unlinked file (appended to, so emptying it restarts
        every writer at its start). Call before CUDA starts, in the worker process only."""
        reader, path = tempfile.mkstemp(prefix="fsr-printed-")
        writer = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.unlink(path)
        os.dup2(writer, 1)
        os.close(writer)
        return cls(reader)

    def take(self) -> str:
        """The text printed since the last call (up to READ_CAP bytes), and the file emptied."""
        self._libc.fflush(None)  # the driver writes through C's buffered stdout
        size = os.fstat(self._fd).st_size
        if not size:
            return ""
        data = os.pread(self._fd, min(size, READ_CAP), 0)
        os.ftruncate(self._fd, 0)
        return data.decode(errors="replace")


@dataclass(frozen=True)
class Printed:
    """One launch's printed lines."""

    lines: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> "Printed":
        return cls(tuple(text.splitlines()))

    def same_as(self, other: "Printed") -> bool:
        return Counter(self.lines) == Counter(other.lines)


def printed_difference(candidate: Printed, first: Printed, second: Printed) -> str | None:
    """Why the candidate's printing is not the original's (its two runs `first` and `second` on
    the same inputs), or None. Exact where the original repeats itself, by amount where not."""
    if first.same_as(second):
        if candidate.same_as(first):
            return None
        extra = Counter(candidate.lines) - Counter(first.lines)
        missing = Counter(first.lines) - Counter(candidate.lines)
        if extra:
            line = next(iter(extra))
            return (f"prints {sum(extra.values())} line(s) the original does not, e.g. {line[:SHOWN]!r}"
                    + (f", and not {sum(missing.values())} it does" if missing else ""))
        line = next(iter(missing))
        return f"does not print {sum(missing.values())} line(s) the original prints, e.g. {line[:SHOWN]!r}"
    least = min(len(first.lines), len(second.lines))
    if least and len(candidate.lines) * 2 < least:
        return (f"prints {len(candidate.lines)} line(s) where the original prints {least} or more (its own runs "
                f"print different lines, so only the amount is compared)")
    return None
