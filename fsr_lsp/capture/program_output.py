"""Whether two runs of a program printed the same: numbers within a tolerance, the rest as text.

A program's own timing lines ("kernel took 3.2 ms", "312 GB/s") change with the rewrite by
design: they are counted and left out, never compared. A number is equal to the other run's
within the kernel's tolerance, or within one unit of the last digit it was printed with."""

from __future__ import annotations

import re
from dataclasses import dataclass

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b", re.I)
TIMING = re.compile(r"\b(ms|msec|millisec\w*|us|usec|µs|ns|sec|secs|seconds?|s)\b|elapsed|time|timing|duration|"
                    r"[GMKT]B/s|[GT]FLOP|bandwidth|throughput|speedup|per second", re.I)


@dataclass(frozen=True)
class Comparison:
    same: bool
    compared: int  # lines compared
    timing_lines: int  # lines left out as the program's own timings
    first_difference: str = ""  # "line 12: 'x = 3.1' then, now 'x = 4.7'"

    def describe(self) -> str:
        skipped = f" ({self.timing_lines} timing line{'s' if self.timing_lines != 1 else ''} not compared)" \
            if self.timing_lines else ""
        if self.same:
            return f"the same output: {self.compared} line{'s' if self.compared != 1 else ''} compared{skipped}"
        return f"a different output: {self.first_difference}{skipped}"


def compare_outputs(before: str, after: str, rtol: float = 1e-5, atol: float = 1e-8) -> Comparison:
    """Line by line, the program's timing lines left out of both."""
    old = [(i, line) for i, line in enumerate(before.splitlines(), 1) if not _timing(line)]
    new = [(i, line) for i, line in enumerate(after.splitlines(), 1) if not _timing(line)]
    timing = len(before.splitlines()) - len(old)
    for (at, was), (_, now) in zip(old, new):
        if not _same_line(was, now, rtol, atol):
            return Comparison(False, len(old), timing, f"line {at}: {_short(was)!r} then, now {_short(now)!r}")
    if len(old) != len(new):
        longer, which = (old, "first") if len(old) > len(new) else (new, "second")
        at, line = longer[min(len(old), len(new))]
        return Comparison(False, len(old), timing, f"the {which} run printed {abs(len(old) - len(new))} more line(s), "
                                                   f"from line {at}: {_short(line)!r}")
    return Comparison(True, len(old), timing)


def _timing(line: str) -> bool:
    return bool(TIMING.search(line)) and bool(NUMBER.search(line))


def _same_line(was: str, now: str, rtol: float, atol: float) -> bool:
    if NUMBER.sub("#", was) != NUMBER.sub("#", now):
        return False
    return all(_close(a, b, rtol, atol) for a, b in zip(NUMBER.findall(was), NUMBER.findall(now)))


def _close(a: str, b: str, rtol: float, atol: float) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if x != x or y != y:  # nan
        return x != x and y != y
    printed = max(_last_digit(a), _last_digit(b))
    return abs(x - y) <= max(atol + rtol * abs(x), printed * 1.0001)


def _last_digit(text: str) -> float:
    """One unit of the last digit `text` was printed with (0.01 for "3.14", 1 for "42")."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2]) if "." in mantissa else 0
    return 10.0 ** (-decimals + (int(exponent) if exponent.lstrip("+-").isdigit() else 0))


def _short(line: str) -> str:
    return line if len(line) <= 100 else line[:97] + "..."
