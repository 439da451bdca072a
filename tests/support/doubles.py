"""The test entry point of `fsr` and `fsr-lsp`: the package's own `main`, given stand-ins for its
GPU work (fsr_lsp/instruments.py). The package reads no test switch from the
environment; this module does, for the tests that start a server or a command as a process (the
LSP tests, the editors' drivers, the CLI tests):

    python tests/support/doubles.py fsr optimize k.cu -k saxpy      # with FSR_LSP_BENCH=tests.support.scripted_bench:ScriptedBench
    python tests/support/doubles.py fsr-lsp                          # the server, with whatever stand-ins are set

(run as a script, from any folder: the repository's root is put first on the import path).

Each variable names a "module:function" (`module:factory` for the bench):
FSR_LSP_BENCH (a search's bench), FSR_LSP_PROVER (a draft's proof), FSR_LSP_PROFILER (a line
profile), FSR_LSP_TIMER (a re-timing on save), FSR_LSP_CACHE_PROBE (told of each discovery and
draft); or seconds: FSR_LSP_TEST_LARGE_SECONDS (a large message's work), FSR_LSP_TEST_PLAN_SECONDS
(planning a spec)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fsr_lsp.evaluator.support import load
from fsr_lsp.instruments import Instruments

BENCH, PROVER, PROFILER, TIMER = "FSR_LSP_BENCH", "FSR_LSP_PROVER", "FSR_LSP_PROFILER", "FSR_LSP_TIMER"
PROBE, LARGE_SECONDS, PLAN_SECONDS = "FSR_LSP_CACHE_PROBE", "FSR_LSP_TEST_LARGE_SECONDS", "FSR_LSP_TEST_PLAN_SECONDS"
STAND_INS = (BENCH, PROVER, PROFILER, TIMER, PROBE, LARGE_SECONDS, PLAN_SECONDS)
ROOT = Path(__file__).resolve().parent.parent.parent


def instruments(environ: dict[str, str] | None = None) -> Instruments:
    """The stand-ins the environment names (none set: the GPU's own)."""
    env = os.environ if environ is None else environ
    named: dict[str, Any] = {field: load(env[var]) for field, var in (
        ("bench", BENCH), ("prover", PROVER), ("profiler", PROFILER), ("timer", TIMER)) if env.get(var)}
    slow = {field: float(env[var]) for field, var in (("large_seconds", LARGE_SECONDS), ("plan_seconds", PLAN_SECONDS))
            if env.get(var)}
    return Instruments(**named, **slow, probe=env.get(PROBE, ""))


def command(program: str) -> list[str]:
    """How a test starts `program` ("fsr" or "fsr-lsp") with the stand-ins its environment names."""
    return [sys.executable, str(Path(__file__).resolve()), program]


def fsr(*args: object, cwd: Path | str = ROOT, env: dict[str, str] | None = None,
        timeout: float = 600.0) -> subprocess.CompletedProcess:
    """`fsr ARGS` run as a user runs it, its output captured as text: the one way the tests start
    the CLI (with the stand-ins `env` names, over the test's own environment)."""
    return subprocess.run([*command("fsr"), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def main(argv: list[str]) -> int:
    program, rest = argv[0], argv[1:]
    if program == "fsr":
        from fsr_lsp.cli.main import main as fsr

        return fsr(rest, instruments())
    if program == "fsr-lsp":
        from fsr_lsp.server.main import main as server

        return server(rest, instruments())
    print(f"tests.support.doubles: no program {program!r} (fsr, fsr-lsp)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.path[0] = str(ROOT)  # `tests.` stand-ins importable; this folder's modules shadow nothing
    sys.exit(main(sys.argv[1:]))
