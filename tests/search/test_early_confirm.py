"""A search's first clear win is confirmed the moment its verdict arrives, beside the rest of its
round, where the bench can confirm while it evaluates; as before (after the round) where it
cannot. Nothing is checked less: the same confirmation, once, earlier. GPU-free."""

from __future__ import annotations

import threading
import time

from fsr_lsp.search import SearchConfig, run_search
from fsr_lsp.search.generators.base import Generator
from fsr_lsp.search.proposal import Proposal

from ..support.scripted_bench import ScriptedBench
from ..support.search_helpers import example

SAXPY = example("saxpy.cu")
GAP_S = 0.3  # each verdict of a round this long after the one before


def rewrite(verdict: str, tag: str) -> Proposal:
    return Proposal(f"__global__ void saxpy(int n, float a, const float* x, float* y) {{ /* {tag} */ }}"
                    f" // verdict: {verdict}", "test")


class Fixed(Generator):
    """One round of the given proposals, then nothing."""

    def __init__(self, proposals: list[Proposal]) -> None:
        self.proposals = proposals

    def propose(self, ctx, n):
        return self.proposals if ctx.round == 0 else []

    def fix(self, ctx, failed):
        return None


class Paced(ScriptedBench):
    """Verdicts that arrive GAP_S apart; each confirmation's start and end, and the round's end."""

    def __init__(self, beside: bool) -> None:
        super().__init__()
        self.confirms_beside = beside  # type: ignore[misc]
        self.times: dict[str, float] = {}
        self.lock = threading.Lock()

    def evaluate(self, proposals, on_result=None):
        results = []
        for i, p in enumerate(proposals):
            time.sleep(GAP_S)
            results.append(self._verdict(p.source))
            if on_result is not None:
                on_result(i, results[-1])
        self.times["round ended"] = time.monotonic()
        return results

    def confirm(self, proposal):
        with self.lock:
            self.times.setdefault("first confirmation began", time.monotonic())
        time.sleep(0.1)
        return super().confirm(proposal)


def search(bench: Paced, proposals: list[Proposal]):
    config = SearchConfig(rounds=2, candidates=len(proposals), time_budget=30, sanitize_winner=True, fix_attempts=0)
    started = time.monotonic()
    return run_search(SAXPY, "saxpy.cu", "saxpy", config, bench, Fixed(proposals)), started


ROUND = [rewrite("verified 1.0", "same"), rewrite("verified 2.0", "win"), rewrite("verified 1.5", "smaller"),
         rewrite("wrong", "broken"), rewrite("verified 1.2", "small")]


def test_the_first_clear_win_is_confirmed_while_its_round_is_still_evaluated():
    bench = Paced(beside=True)
    outcome, started = search(bench, ROUND)
    assert outcome.status == "improved" and outcome.best.result.speedup == 2.0, outcome.message
    assert bench.times["first confirmation began"] < bench.times["round ended"] - GAP_S
    assert outcome.best.confirmed_at < bench.times["round ended"] - started
    assert bench.confirmed.count(ROUND[1].source) == 1  # confirmed once: promote finds it confirmed


def test_a_bench_that_cannot_confirm_beside_its_round_confirms_after_it():
    bench = Paced(beside=False)
    outcome, started = search(bench, ROUND)
    assert outcome.status == "improved" and outcome.best.result.speedup == 2.0, outcome.message
    assert bench.times["first confirmation began"] >= bench.times["round ended"]
    assert bench.confirmed.count(ROUND[1].source) == 1


def test_an_early_win_that_fails_its_confirmation_is_demoted_and_the_round_goes_on():
    bench = Paced(beside=True)
    round_ = [rewrite("unconfirmed 3.0", "cheat"), rewrite("verified 1.5", "honest")]
    outcome, _ = search(bench, round_)
    cheat = next(t for t in outcome.tried if "cheat" in t.proposal.source)
    assert not cheat.result.verified and "demoted" in cheat.result.message
    assert outcome.status == "improved" and outcome.best.result.speedup == 1.5, outcome.message
    assert bench.confirmed.count(round_[0].source) == 1
