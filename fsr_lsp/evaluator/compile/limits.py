"""Limits on compiling untrusted text: memory, CPU time, what it may write, the wall clock.

A model's candidate can make a compiler grow without bound (a header that never ends, a
template that recurses): 24 GB and the kernel's OOM killer were seen. Every compile of a
candidate therefore runs in a process with an address-space limit, a CPU-time limit and a
file-size limit (which bounds its log and its outputs), under a wall clock; only the first
`log_bytes` of what it prints are read. A limit hit is a rejection that says which limit.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ... import scratch

# Sets the limits, then becomes the command: no Python code runs between fork and exec (a
# preexec_fn is unsafe in a process with threads, and the compile pool has them).
_TRAMPOLINE = ("import os, resource, sys\n"
               "a = sys.argv\n"
               "resource.setrlimit(resource.RLIMIT_AS, (int(a[1]), int(a[1])))\n"
               "resource.setrlimit(resource.RLIMIT_CPU, (int(a[2]), int(a[2]) + 5))\n"
               "resource.setrlimit(resource.RLIMIT_FSIZE, (int(a[3]), int(a[3])))\n"
               "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
               "os.execv(a[4], a[4:])\n")
_MEMORY_WORDS = re.compile(r"out of memory|bad_alloc|cannot allocate memory|memory exhausted|virtual memory exhausted",
                           re.I)
_DIED = re.compile(r"died due to signal (\d+)")


@dataclass(frozen=True)
class CompileLimits:
    memory_bytes: int = 4 << 30  # address space of each compiler process
    cpu_seconds: int = 120  # CPU time of each compiler process
    output_bytes: int = 256 << 20  # the largest file it may write (its log, intermediate files, the cubin)
    wall_seconds: float = 120.0  # the whole compile, children included
    log_bytes: int = 64 << 10  # what is read back of its messages

    def describe(self, limit: str) -> str:
        """The rejection's text for a limit hit."""
        return {
            "memory": f"the compiler used more than {_size(self.memory_bytes)} of memory (its limit for a candidate)",
            "cpu": f"the compiler used more than {self.cpu_seconds} s of CPU time (its limit for a candidate)",
            "output": f"the compiler wrote more than {_size(self.output_bytes)} (its limit for a candidate)",
            "wall": f"the compiler did not finish within {self.wall_seconds:.0f} s (its limit for a candidate)",
        }[limit]


@dataclass(frozen=True)
class LimitedRun:
    returncode: int
    log: str  # stdout then stderr, at most `log_bytes` of each
    limit: str = ""  # memory, cpu, output, wall; '' when no limit was hit
    truncated: bool = False


def run_limited(cmd: list[str], limits: CompileLimits, cwd: str) -> LimitedRun:
    """Run `cmd` under the limits, in its own process group (killed whole at the wall clock)."""
    with scratch.folder("log") as logs:
        out_path, err_path = Path(logs) / "out", Path(logs) / "err"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            wrapped = [sys.executable, "-c", _TRAMPOLINE, str(limits.memory_bytes), str(limits.cpu_seconds),
                       str(limits.output_bytes), *cmd]
            proc = subprocess.Popen(wrapped, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                    start_new_session=True, env={**os.environ, "TMPDIR": cwd})
            try:
                code = proc.wait(timeout=limits.wall_seconds)
                wall = False
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                code, wall = proc.wait(), True
        texts, truncated = [], False
        for path in (out_path, err_path):
            with open(path, "rb") as f:
                data = f.read(limits.log_bytes + 1)
            truncated |= len(data) > limits.log_bytes
            texts.append(data[: limits.log_bytes].decode(errors="replace"))
    log = texts[0] + texts[1] + ("\n[the compiler's output was cut here]" if truncated else "")
    return LimitedRun(code, log, "wall" if wall else limit_hit(code, log), truncated)


def limit_hit(returncode: int, log: str) -> str:
    """Which limit stopped a compiler ('' when none did): its signal, or its own words."""
    signals = {-returncode} if returncode < 0 else set()
    signals |= {int(n) for n in _DIED.findall(log)}
    if signal.SIGXCPU in signals:
        return "cpu"
    if signal.SIGXFSZ in signals:
        return "output"
    if _MEMORY_WORDS.search(log) or (returncode != 0 and (signals & {signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL})):
        return "memory"
    return ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GB" if n >= 1 << 30 else f"{n / (1 << 20):g} MB"
