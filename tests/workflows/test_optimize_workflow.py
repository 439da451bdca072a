"""The optimize workflow around the search: what it does after the search never costs its result."""

from __future__ import annotations

from fsr_lsp.search import SearchOutcome
from fsr_lsp.settings import Settings
from fsr_lsp.workflows import optimize, perf_check


def test_a_failure_recording_what_the_search_timed_keeps_the_searchs_outcome(monkeypatch, tmp_path):
    """Recording the timings for later edits is bookkeeping: when it raises (it once did on a
    winner whose block stated only its launch), the verified result still comes back."""
    found = SearchOutcome("improved", "3.28x faster")

    def broken(*args, **kwargs):
        raise AttributeError("'NoneType' object has no attribute 'smem'")

    monkeypatch.setattr(optimize, "run_search", lambda *args, **kwargs: found)
    monkeypatch.setattr(optimize.Optimizer, "_bench", lambda self, job: None)
    monkeypatch.setattr(perf_check, "record_search", broken)
    run = optimize.KernelJob("", tmp_path / "k.cu", "k", tmp_path, Settings())
    assert optimize.Optimizer().run(run, lambda p: None) is found
    assert run.outcome is found
