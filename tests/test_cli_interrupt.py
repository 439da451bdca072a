"""Ctrl-C during `fsr optimize` (issue 38 item 5): the search stops, the best verified candidate
so far is the outcome, every candidate evaluated is stored, and the command says it was
interrupted and exits 130. A scripted generator and bench: round 1 verifies a 1.8x rewrite,
round 2 hangs until the interrupt cancels it. Also: a Ctrl-C while fsr is still importing."""

from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from fsr_lsp.cli import optimize_cmd
from fsr_lsp.search import SearchConfig, run_search
from fsr_lsp.search.proposal import Proposal
from fsr_lsp.search.store import HistoryStore
from fsr_lsp.settings import Settings
from fsr_lsp.workflows.optimize import OptimizeRun

from .scripted_bench import ScriptedBench
from .search_helpers import example

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

    def propose(self, ctx, n):
        if ctx.round == 0:
            return [Proposal(REWRITE.format(tag="a", verdict="verified 1.8"), "scripted", note="fast"),
                    Proposal(REWRITE.format(tag="b", verdict="wrong"), "scripted", note="wrong")]
        _thread.interrupt_main()  # the user's Ctrl-C, as the main thread gets it
        self.cancel.wait(10)
        return []


class ScriptedOptimizer:
    def __init__(self, store: HistoryStore) -> None:
        self.store, self.cancelled = store, False

    def run(self, job: OptimizeRun, progress):
        config = SearchConfig(rounds=3, candidates=2, fix_attempts=0, sanitize_winner=False, time_budget=60)
        job.outcome = run_search(SAXPY, str(job.path), job.kernel, config, ScriptedBench(), HangsInRoundTwo(job.cancel),
                                 store=self.store, cancel=job.cancel, on_progress=progress)
        return job.outcome

    def cancel(self):
        self.cancelled = True


def test_ctrl_c_keeps_the_best_verified_candidate_and_stores_every_one(tmp_path: Path):
    from rich.console import Console

    job = OptimizeRun(SAXPY, tmp_path / "saxpy.cu", "saxpy", tmp_path, Settings(), started=time.monotonic())
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
import importlib.abc, sys, time
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


def test_ctrl_c_while_fsr_is_still_importing_is_one_line(tmp_path: Path):
    proc = subprocess.Popen([sys.executable, "-c", SLOW_IMPORT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert proc.stdout.readline().strip() == "importing"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "fsr: interrupted", err
