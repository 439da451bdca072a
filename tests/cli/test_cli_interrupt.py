"""Ctrl-C during `fsr optimize` (issue 38 item 5): the search stops, the best verified candidate
so far is the outcome, every candidate evaluated is stored, and the command says it was
interrupted and exits 130. A scripted generator and bench: round 1 verifies a 1.8x rewrite,
round 2 hangs until the interrupt cancels it. Also: a Ctrl-C while fsr is still importing.

A test command started in the background by a script (`pytest ... &`) inherits SIGINT ignored, as
the shell asks for its background jobs; Python then installs no handler and a Ctrl-C reaches
nothing. fsr keeps that choice (a script's `fsr optimize ... &` is not the terminal's to stop), so
these tests put Python's own handler back where they stand for a user at a terminal, and the last
test runs them once more from a parent that ignores SIGINT."""

from __future__ import annotations

import _thread
import os
import signal
import textwrap
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fsr_lsp.cli import optimize_cmd
from fsr_lsp.search import SearchConfig, SearchControl, run_search
from fsr_lsp.search.proposal import Proposal
from fsr_lsp.search.store import HistoryStore
from fsr_lsp.settings import Settings
from fsr_lsp.workflows.optimize import KernelJob

from ..support.scripted_bench import ScriptedBench
from ..support.search_helpers import example

SAXPY = example("saxpy.cu")
REWRITE = """__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {tag}
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: {verdict}
}}
"""


class HangsInRoundTwo:
    """Round 1: a verified 1.8x rewrite and a wrong one. Round 2: Ctrl-C, then waits for the cancel."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel
        self.interrupted = False

    def propose(self, ctx, n):
        if ctx.round == 0:
            return [Proposal(REWRITE.format(tag="a", verdict="verified 1.8"), "scripted", note="fast"),
                    Proposal(REWRITE.format(tag="b", verdict="wrong"), "scripted", note="wrong")]
        if not self.interrupted:  # one Ctrl-C: a second, asked again later, would reach pytest itself
            self.interrupted = True
            _thread.interrupt_main()  # the user's Ctrl-C, as the main thread gets it
        self.cancel.wait(10)
        return []


class ScriptedOptimizer:
    def __init__(self, store: HistoryStore) -> None:
        self.store, self.cancelled = store, False

    def run(self, job: KernelJob, progress):
        config = SearchConfig(rounds=3, candidates=2, fix_attempts=0, sanitize_winner=False, time_budget=60)
        job.outcome = run_search(SAXPY, str(job.path), job.kernel, config, ScriptedBench(), HangsInRoundTwo(job.cancel),
                                 store=self.store, control=SearchControl(progress, job.cancel))
        return job.outcome

    def cancel(self):
        self.cancelled = True


@pytest.fixture
def ctrl_c_reaches_python():
    """SIGINT as a terminal's foreground process has it (Python's handler), whatever this test
    process inherited; `_thread.interrupt_main` does nothing while SIGINT is ignored."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_ctrl_c_keeps_the_best_verified_candidate_and_stores_every_one(tmp_path: Path):
    from rich.console import Console

    job = KernelJob(SAXPY, tmp_path / "saxpy.cu", "saxpy", tmp_path, Settings(), started=time.monotonic())
    with HistoryStore(tmp_path) as store:
        optimizer = ScriptedOptimizer(store)
        t0 = time.monotonic()
        outcome, interrupted = optimize_cmd._run_with_progress(Console(file=open(os.devnull, "w")), optimizer, job)
        assert time.monotonic() - t0 < 5
        assert interrupted and optimizer.cancelled and job.cancel.is_set()
        assert outcome.best is not None and abs(outcome.best.result.speedup - 1.8) < 0.01
        assert outcome.status == "improved" and outcome.stopped == "cancelled"
        stored = store.history(str(job.path), "saxpy")
    assert sorted(r.status for r in stored) == ["verified", "wrong"]


SLOW_IMPORT = """
import importlib.abc, signal, sys, time
if sys.argv[1:] == ["as-at-a-terminal"]:  # a child of a test run in the background inherits SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "fsr_lsp.cli.main":  # the commands' imports, made slow enough to interrupt
            print("importing", flush=True)
            time.sleep(20)
        return None
sys.meta_path.insert(0, Slow())
from fsr_lsp.cli.entry import main
sys.exit(main(["spec", "--help"]))
"""


def slow_import(*args: str) -> subprocess.Popen:
    """`fsr spec --help` with its commands' imports slowed down, once it says it is importing."""
    proc = subprocess.Popen([sys.executable, "-c", SLOW_IMPORT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent.parent)})
    assert proc.stdout.readline().strip() == "importing"
    return proc


def test_ctrl_c_while_fsr_is_still_importing_is_one_line(tmp_path: Path):
    proc = slow_import("as-at-a-terminal")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "fsr: interrupted", err


def test_fsr_started_with_sigint_ignored_keeps_it_ignored_and_sigterm_still_stops_it():
    """What fsr does when its parent ignores SIGINT (a script's `fsr optimize ... &`): it leaves it
    so, as the shell asked; SIGTERM, taken as Ctrl-C, still ends it in one line."""
    proc = subprocess.Popen([sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                             f"exec({SLOW_IMPORT!r})"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent.parent)})
    assert proc.stdout.readline().strip() == "importing"
    proc.send_signal(signal.SIGINT)
    time.sleep(1)
    assert proc.poll() is None, "a SIGINT its parent ignored stopped fsr"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "fsr: interrupted", err


def test_the_ctrl_c_tests_pass_when_pytest_itself_was_started_with_sigint_ignored():
    """`pytest ... &` from a script: the tests above run again in a pytest whose SIGINT is
    ignored, as it is there, and must pass."""
    tests = [f"{__file__}::{name}" for name in ("test_ctrl_c_keeps_the_best_verified_candidate_and_stores_every_one",
                                                "test_ctrl_c_while_fsr_is_still_importing_is_one_line")]
    run = textwrap.dedent(f"""
        import signal, sys, pytest
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *{tests!r}]))
    """)
    r = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).parent.parent.parent)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 passed" in r.stdout, r.stdout[-2000:]
