"""Nothing evaluated is lost to a kill, a killed search says so, and no scratch folder outlives
its process."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from fsr_lsp import scratch
from fsr_lsp.search import HistoryStore, LLMConfig, SearchConfig, run_search
from fsr_lsp.search.generators.llm import LLMGenerator

from ..support.fake_llm import FakeLLM
from ..support.scripted_bench import ScriptedBench
from ..support.search_helpers import example
from ..support.scripted_search import kernel

ROOT = Path(__file__).resolve().parent.parent.parent
SAXPY = example("saxpy.cu")


class Killed(BaseException):
    """What kill -9 does to the search thread, as far as the store can tell."""


class DyingMidBatch(ScriptedBench):
    def evaluate(self, proposals, on_result=None):
        results = []
        for i, p in enumerate(proposals):
            if i == 2:
                raise Killed()
            results.append(self._verdict(p.source))
            on_result(i, results[-1])
        return results


def test_each_result_is_stored_the_moment_it_arrives(monkeypatch, tmp_path):
    monkeypatch.setenv("FSR_KILL_KEY", "k")
    steps = [kernel(f"verified 1.{i}", str(i)) for i in range(1, 5)]
    with FakeLLM(steps) as llm, HistoryStore(tmp_path) as store:
        cfg = SearchConfig(rounds=1, candidates=4, sanitize_winner=False, fix_attempts=0,
                           llm=LLMConfig(base_url=llm.base_url, model="m", api_key_env="FSR_KILL_KEY", max_retries=0))
        with pytest.raises(Killed):
            run_search(SAXPY, "saxpy.cu", "saxpy", cfg, DyingMidBatch(), LLMGenerator(cfg.llm, parallel=1), store)
    db = sqlite3.connect(tmp_path / ".fsr" / "history.sqlite")
    assert db.execute("SELECT COUNT(*) FROM candidates WHERE status = 'verified'").fetchone()[0] == 2


def test_a_search_whose_process_died_is_marked_interrupted_and_history_says_so(tmp_path):
    (tmp_path / ".git").mkdir()
    cu = tmp_path / "saxpy.cu"
    cu.write_text(SAXPY)
    with HistoryStore(tmp_path) as store:
        search_id = store.start_search("key", str(cu), "saxpy", "GPU", {})
    db = sqlite3.connect(tmp_path / ".fsr" / "history.sqlite")
    with db:
        db.execute("UPDATE searches SET pid = ? WHERE id = ?", (2 ** 22 + 12345, search_id))  # no such process
    with HistoryStore(tmp_path) as store:
        assert store.interrupted(str(cu), "saxpy") == 1
        store.record("key", search_id, str(cu), "saxpy", _tried())
    r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "history", str(cu), "-k", "saxpy"], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert "1 search of saxpy ended without finishing (the process was killed)" in r.stdout, r.stdout + r.stderr


def _tried():
    from fsr_lsp.search.proposal import Proposal, Tried

    return Tried(Proposal("__global__ void saxpy() {} // verdict: verified 1.2", "llm:m"),
                 ScriptedBench()._verdict("__global__ void saxpy() {} // verdict: verified 1.2"))


def test_scratch_folders_of_dead_processes_are_swept_and_live_ones_kept(tmp_path):
    dead = tmp_path / f"fsr-nvcc-{2 ** 22 + 12345}-abc"
    mine = tmp_path / f"fsr-nvcc-{os.getpid()}-def"
    other = tmp_path / "not-ours-123-x"
    for d in (dead, mine, other):
        d.mkdir()
        (d / "tmpxft_0001.cpp").write_text("left behind")
    assert scratch.sweep(str(tmp_path)) == 1
    assert not dead.exists() and mine.exists() and other.exists()


def test_a_scratch_folder_goes_when_its_work_is_done():
    with scratch.folder("test") as path:
        assert path.name.startswith(f"fsr-test-{os.getpid()}-") and path.is_dir()
    assert not path.exists()
