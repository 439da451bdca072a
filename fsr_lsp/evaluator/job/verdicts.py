"""A verdict reached on the CPU, before any GPU work: a stage of `prepare` raises it, and prepare
returns it as the evaluation's result (a bad spec, a rejected or uncompilable candidate, an
unchanged one)."""

from __future__ import annotations

import time
from typing import Sequence

from ..records import Check, CompileResult, EvalResult


class Final(Exception):
    """The result of an evaluation that needs no GPU."""

    def __init__(self, result: EvalResult) -> None:
        super().__init__(result.message)
        self.result = result


def final(kernel: str, status: str, message: str, started: float, checks: Sequence[Check] = (),
          compiled: dict[str, CompileResult] | None = None) -> Final:
    """The verdict `status` with its one-line `message`, the checks passed before it, and what
    was compiled; raise it."""
    result = EvalResult(kernel=kernel, status=status, message=message,  # type: ignore[arg-type]
                        seconds=time.perf_counter() - started, checks=list(checks))
    if compiled:
        result.compile = dict(compiled)
    return Final(result)


def first_error(log: str) -> str:
    """The compiler's first error line (else its first line)."""
    for line in log.splitlines():
        if "error" in line:
            return line.strip()
    return log.strip().splitlines()[0] if log.strip() else "failed"
