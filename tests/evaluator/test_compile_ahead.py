"""The first candidates compile while the GPU worker starts (about 4 s of torch and CUDA on an
H200, in every search's first win): the search hands the generator's likely first proposals to
the bench before it measures the original, and the local backend compiles them for the arch
nvidia-smi predicts, into the cache the real requests read."""

from __future__ import annotations

import threading
from pathlib import Path

from fsr_lsp.evaluator import EvalOptions
from fsr_lsp.evaluator.backends import EvalRequest, LocalBackend
from fsr_lsp.evaluator.backends import local
from fsr_lsp.search import SearchConfig, run_search
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator

from ..support.scripted_bench import ScriptedBench

SOFTMAX = (Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "softmax.cu").read_text()


class AheadBench(ScriptedBench):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[str]]] = []

    def compile_ahead(self, proposals):
        self.calls.append(("compile_ahead", [p.generator for p in proposals]))

    def baseline(self):
        self.calls.append(("baseline", []))
        return super().baseline()


def test_the_search_compiles_the_structural_rewrites_ahead_before_it_measures_the_original():
    bench = AheadBench()
    run_search(SOFTMAX, "softmax.cu", "softmax_forward", SearchConfig(rounds=1, candidates=2, time_budget=5),
               bench, BuiltinGenerator())
    assert bench.calls[0] == ("compile_ahead", ["builtin:warp-per-row", "builtin:online-softmax"])
    assert bench.calls[1] == ("baseline", [])


class Worker:
    device_index = 0

    def __init__(self, alive: bool) -> None:
        from fsr_lsp.evaluator.records import GpuInfo

        self.alive = alive
        self.gpu = GpuInfo(0, "up", "10.0", 1, 1, 1) if alive else None


def requests(n: int) -> list[EvalRequest]:
    return [EvalRequest(SOFTMAX, "softmax_forward", f"// candidate {i}\n", EvalOptions()) for i in range(n)]


def test_the_backend_compiles_ahead_for_the_predicted_arch_or_the_up_workers_own(monkeypatch):
    """Cold, for the arch nvidia-smi predicts; warm (a warm service's worker), for the worker's own:
    the original's measurement and the first round's drafting still come before the first
    candidates' requests, and their compiles overlap those instead of delaying the screen."""
    seen: list[tuple[str | None, str]] = []
    lock = threading.Lock()

    def prepare(source, kernel, candidate, arch, options):
        with lock:
            seen.append((candidate, arch))
        raise RuntimeError("a compile that fails here is the real request's to report")

    monkeypatch.setattr(local, "prepare", prepare)
    monkeypatch.setattr(local, "predicted_arch", lambda index: "sm_90a")
    thread = LocalBackend(Worker(alive=False), workers=2).compile_ahead(requests(3))
    assert thread is not None
    thread.join(10)
    assert sorted(seen) == [(f"// candidate {i}\n", "sm_90a") for i in range(3)]
    thread = LocalBackend(Worker(alive=True)).compile_ahead(requests(2))  # up: its arch, not nvidia-smi's guess
    assert thread is not None
    thread.join(10)
    assert sorted(seen[3:]) == [(f"// candidate {i}\n", "sm_100a") for i in range(2)]
    del seen[3:]
    monkeypatch.setattr(local, "predicted_arch", lambda index: None)
    thread = LocalBackend(Worker(alive=False)).compile_ahead(requests(3))  # no nvidia-smi: nothing guessed
    assert thread is not None
    thread.join(10)
    assert len(seen) == 3
