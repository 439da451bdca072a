"""The FSR loop with the LLM generator on a local endpoint and the scripted evaluator stand-in."""

import sqlite3
import threading

import pytest

from fsr_lsp.search import HistoryStore, SearchConfig, run_search
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator

from ..support.fake_llm import FakeLLM, answer, status
from ..support.scripted_bench import ScriptedBench
from ..support.scripted_search import SAXPY, BuiltinBench, kernel, search

pytestmark = pytest.mark.usefixtures("without_structural_rewrites")  # saxpy's model rounds, not fsr's rewrite

SECRET = "sk-loop-secret-987654321"


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("FSR_LOOP_KEY", SECRET)


def test_the_fastest_verified_candidate_wins_and_bad_ones_are_rejected(env):
    steps = [kernel("verified 1.5", "a"), kernel("wrong", "b"), kernel("verified 2.2", "c"), kernel("compile_error", "d"),
             answer("no code, sorry"),
             # fixes, in the order the failures came
             kernel("verified 1.1", "b-fixed"), kernel("compile_error", "d-again"), kernel("verified 1.3", "e-fixed")]
    with FakeLLM(steps) as llm:
        outcome, bench = search(llm, rounds=1, candidates=5)
    assert outcome.status == "improved"
    assert outcome.best.result.speedup == 2.2 and "// c" in outcome.best.proposal.source
    assert outcome.message.startswith("2.20x faster (2 ms -> 0.9091 ms on Scripted GPU")
    assert "verified at 2 sizes, 6 input sets and 3 that probe their range)" in outcome.message
    statuses = sorted(t.result.status for t in outcome.tried)
    assert statuses == ["compile_error", "compile_error", "rejected", "verified", "verified", "verified", "verified", "wrong"]
    fixes = llm.prompts()[5:]  # asked as the failures came back, in whatever order a loaded machine gives
    for failure in ("output y has 12 of 1000", 'identifier "q" is undefined', "defines no __global__ kernel"):
        assert sum(failure in f for f in fixes) == 1, failure
    failed = {t.proposal.key for t in outcome.tried if not t.proposal.parent and t.result.status != "verified"}
    assert len(failed) == 3 and {t.proposal.parent for t in outcome.tried if t.proposal.parent} == failed


def test_the_fastest_seed_the_next_round_and_history_is_in_the_prompt(env):
    steps = [kernel("verified 1.4", "first"), kernel("verified 0.8", "slow"), kernel("verified 1.9", "second"),
             kernel("verified 1.0", "meh")]
    with FakeLLM(steps) as llm:
        outcome, _ = search(llm, rounds=2, candidates=2, fix_attempts=0)
    round2 = llm.prompts()[2]
    assert "Fastest so far: 1.40x" in round2 and "// first" in round2
    assert "Slowest verified: 0.80x" in round2 and "// slow" in round2
    assert "round 2 of 2" in round2
    assert outcome.best.result.speedup == 1.9 and outcome.rounds == 2


def test_target_speedup_stops_early(env):
    with FakeLLM([kernel("verified 3.0")], default=kernel("verified 1.1")) as llm:
        outcome, _ = search(llm, rounds=5, candidates=1, target_speedup=2.5)
    assert outcome.stopped == "target" and outcome.rounds == 1


def test_a_speedup_inside_the_spread_is_not_a_win(env):
    with FakeLLM([kernel("verified 1.03")]) as llm:
        outcome, _ = search(llm, ScriptedBench(spread=0.10), rounds=1, candidates=1)
    assert outcome.status == "no_win" and outcome.best is None
    assert "not beyond the noise and a 2% minimum gain" in outcome.message and outcome.best_tried.result.speedup == 1.03


def test_a_winner_that_fails_stricter_checks_gives_way(env):
    with FakeLLM([kernel("unconfirmed 3.0"), kernel("verified 1.5")]) as llm:
        outcome, bench = search(llm, rounds=1, candidates=2, sanitize_winner=True)
    assert outcome.best.result.speedup == 1.5 and len(bench.confirmed) == 2
    assert {c.name for c in outcome.best.result.checks} >= {"sanitizer memcheck"}


def test_a_speedup_beyond_the_bandwidth_gets_a_second_verification(env):
    with FakeLLM([kernel("verified 400")]) as llm:
        outcome, bench = search(llm, rounds=1, candidates=1, sanitize_winner=False)
    assert len(bench.confirmed) == 1  # even with sanitizers off
    assert any("below the" in w and "GB/s" in w for w in outcome.best.result.warnings)


def test_an_endpoint_that_is_down_fails_cleanly(env):
    with FakeLLM(default=status(503)) as llm:
        outcome, _ = search(llm, rounds=2, candidates=2)
    assert outcome.status == "failed" and "the generator failed" in outcome.message and "HTTP 503" in outcome.message


def test_cancel_stops_promptly_and_keeps_what_was_found(env):
    cancel = threading.Event()

    def progress(p):
        if p.message.endswith("done"):
            cancel.set()

    with FakeLLM(default=kernel("verified 1.6")) as llm:
        outcome, _ = search(llm, rounds=5, candidates=1, cancel=cancel, progress=progress)
    assert outcome.stopped == "cancelled" and outcome.rounds == 1
    assert outcome.status == "improved" and outcome.best.result.speedup == 1.6


def test_staged_mode_uses_the_workload_guide(env):
    with FakeLLM(default=kernel("verified 1.2")) as llm:
        search(llm, rounds=1, candidates=1)
    (prompt,) = llm.prompts()
    assert "stage 1 of 1" in prompt and "elementwise kernel the limit is memory bandwidth" in prompt


def test_resume_after_a_kill_reuses_stored_verdicts_and_stores_no_key(env, tmp_path):
    class Killed(Exception):
        pass

    class DyingBench(ScriptedBench):
        def evaluate(self, proposals, on_result=None):
            if any("second-round" in p.source for p in proposals):
                raise Killed
            return super().evaluate(proposals, on_result)

    steps = [kernel("verified 1.3", "one"), kernel("wrong", "two"), kernel("verified 1.4", "second-round")]
    with FakeLLM(steps, default=kernel("verified 1.4", "second-round")) as llm:
        with pytest.raises(Killed):
            search(llm, DyingBench(), HistoryStore(tmp_path, secrets=[SECRET]), rounds=2, candidates=2, fix_attempts=0)
    store = HistoryStore(tmp_path, secrets=[SECRET])
    assert len(store.load(next(iter(_keys(tmp_path))))) == 2  # nothing evaluated was lost
    steps = [kernel("verified 1.3", "one"), kernel("wrong", "two"), kernel("verified 1.4", "second-round"),
             kernel("verified 1.2", "other")]
    with FakeLLM(steps) as llm:
        outcome, bench = search(llm, store=store, rounds=2, candidates=2, fix_attempts=0)
    reused = [t for t in outcome.tried if t.reused]
    assert len(reused) == 2 and not any("// one" in s or "// two" in s for s in bench.evaluated)
    assert outcome.best.result.speedup == 1.4
    raw = (tmp_path / ".fsr" / "history.sqlite").read_bytes()
    for name in ("history.sqlite-wal",):
        if (tmp_path / ".fsr" / name).exists():
            raw += (tmp_path / ".fsr" / name).read_bytes()
    assert SECRET.encode() not in raw
    rows = store.history("examples/saxpy.cu", "saxpy")
    assert len(rows) == 4 and {r.status for r in rows} == {"verified", "wrong"}


def _keys(tmp_path):
    db = sqlite3.connect(tmp_path / ".fsr" / "history.sqlite")
    return {row[0] for row in db.execute("SELECT DISTINCT search_key FROM candidates")}


def test_the_builtin_generator_composes_what_won():
    config = SearchConfig(rounds=2, candidates=9, sanitize_winner=False, fix_attempts=0)
    outcome = run_search(SAXPY, "examples/saxpy.cu", "saxpy", config, BuiltinBench(), BuiltinGenerator())
    assert outcome.status == "improved"
    best = outcome.best.proposal
    assert "__restrict__" in best.note and "block 128" in best.note
    assert abs(outcome.best.result.speedup - 1.32) < 1e-9


def test_a_round_leader_that_fails_the_full_verification_is_demoted_before_anyone_sees_it(env, tmp_path):
    steps = [kernel("unconfirmed 3.0", "cheat"), kernel("verified 1.4", "honest"), kernel("verified 1.2", "later")]
    store = HistoryStore(tmp_path)
    with FakeLLM(steps, default=kernel("verified 1.1", "more")) as llm:
        outcome, bench = search(llm, store=store, rounds=2, candidates=2, fix_attempts=0, sanitize_winner=True)
    round2 = llm.prompts()[2]
    assert "Fastest so far: 1.40x" in round2 and "// honest" in round2
    assert "3.00x" not in round2 and "// cheat" not in round2.split("Fastest so far")[1]
    cheat = next(t for t in outcome.tried if "// cheat" in t.proposal.source)
    assert cheat.result.status == "wrong" and "demoted as round 1 leader" in cheat.result.message
    rows = {r.source.split("// ")[1].split()[0]: r for r in store.history("examples/saxpy.cu", "saxpy")}
    assert rows["cheat"].status == "wrong" and "demoted as round 1 leader" in rows["cheat"].message
    # each leader is confirmed once, and the winner is not confirmed a second time
    assert sorted(bench.confirmed).count(next(s for s in bench.confirmed if "// honest" in s)) == 1
    assert outcome.best.result.speedup == 1.4 and outcome.best.result.confirmed


def test_a_win_needs_its_whole_interval_above_the_minimum_gain(env):
    with FakeLLM([kernel("verified 1.05 ci 1.01 1.09")]) as llm:
        outcome, _ = search(llm, rounds=1, candidates=1)
    assert outcome.status == "no_win" and "(interval 1.010-1.090)" in outcome.message
    with FakeLLM([kernel("verified 1.05 ci 1.01 1.09")]) as llm:
        outcome, _ = search(llm, rounds=1, candidates=1, min_gain=0.0)
    assert outcome.status == "improved"
    with FakeLLM([kernel("verified 1.05 ci 1.03 1.07")]) as llm:
        outcome, _ = search(llm, rounds=1, candidates=1)
    assert outcome.status == "improved"


def relaunched(verdict: str, tag: str) -> str:
    """A candidate with a launch of its own (its @fsr block): one a fixed launch cannot take."""
    return answer(f"""```cuda
/* @fsr
grid = "cdiv(n, 512)"
block = 512
*/
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {tag}
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: {verdict}
}}
```
{tag}""")


@pytest.mark.parametrize("fixed", [False, True])
def test_with_a_fixed_launch_the_fastest_win_under_it_is_fully_verified_too(env, fixed):
    """Only a rewrite under the program's own launch can be applied where the launch cannot
    follow (search/applicable.py), and only one verified as strictly as the winner: its
    sanitizers must run although it is no leader."""
    steps = [relaunched("verified 3.0", "fast"), kernel("verified 1.4", "kept"), relaunched("verified 2.0", "also")]
    with FakeLLM(steps, default=kernel("verified 1.1", "more")) as llm:
        outcome, bench = search(llm, rounds=1, candidates=3, fix_attempts=0, sanitize_winner=True, seeds=1,
                                launch_fixed=fixed)
    kept = next(t for t in outcome.tried if "// kept" in t.proposal.source)
    assert kept.result.confirmed is fixed
    assert any("// kept" in s for s in bench.confirmed) is fixed
    if fixed:  # first: a deadline that cuts the leaders' checks short still leaves the win the user can take
        assert "// kept" in bench.confirmed[0]
    assert outcome.best.result.speedup == 3.0
