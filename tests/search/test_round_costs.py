"""A round near the deadline plans for its leader's confirmation (search/costs.py): it checks only
as many of its proposals (best first) as leave time to confirm the best of them. A search whose
last round screened and checked until its deadline had found a 154x rewrite that it could no
longer confirm (seen on an H200): the user got round 1's 3.8x."""

from __future__ import annotations

import threading
import time

from fsr_lsp.evaluator.records import EvalResult
from fsr_lsp.search import SearchConfig, run_search
from fsr_lsp.search.costs import RoundCosts
from fsr_lsp.search.proposal import Proposal

from ..support.scripted_bench import ScriptedBench
from ..support.search_helpers import example

SAXPY = example("saxpy.cu")
CHECK_S, CONFIRM_S = 0.3, 0.5


def kernel(verdict: str, tag: str) -> str:
    return (f"__global__ void saxpy(int n, float a, const float* x, float* y)\n{{\n"
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {tag}\n"
            f"    if (i < n) y[i] = a * x[i] + y[i];  // verdict: {verdict}\n}}\n")


class Rounds:
    """Six proposals a round, best first: round 1's best 2x, round 2's 10x."""

    def propose(self, ctx, n):
        best = 2.0 if ctx.round == 0 else 10.0
        return [Proposal(kernel(f"verified {best - i * 0.1 if i else best}", f"r{ctx.round} c{i}"), "test")
                for i in range(6)]

    def fix(self, ctx, failed):
        return None


class TimedBench(ScriptedBench):
    """Each candidate's checks take CHECK_S, a confirmation CONFIRM_S; the deadline's interrupt
    cuts either short (cancelled), as the GPU's would."""

    def __init__(self) -> None:
        super().__init__()
        self.stop = threading.Event()

    def interrupt(self) -> None:
        self.stop.set()

    def evaluate(self, proposals, on_result=None):
        results = []
        for i, p in enumerate(proposals):
            r = EvalResult(kernel="k", status="cancelled", message="cut") if self.stop.wait(CHECK_S) else self._verdict(p.source)
            results.append(r)
            if on_result is not None:
                on_result(i, r)
        return results

    def confirm(self, proposal):
        if self.stop.wait(CONFIRM_S):
            return EvalResult(kernel="k", status="cancelled", message="cut")
        return super().confirm(proposal)


def test_the_last_round_checks_what_leaves_time_to_confirm_its_best():
    bench = TimedBench()
    started = time.monotonic()
    # round 1: 6 x 0.3 s of checks and 0.5 s of confirmation (2.3 s); round 2 then has 2.2 s: its six
    # proposals' checks (1.8 s) would leave its 10x unconfirmed at the deadline; it plans for a
    # confirmation of up to 1 s (twice the longest so far) and checks four
    outcome = run_search(SAXPY, "saxpy.cu", "saxpy", SearchConfig(rounds=2, candidates=6, seeds=1, time_budget=4.5,
                                                                   fix_attempts=0), bench, Rounds())
    assert time.monotonic() - started < 5.5
    assert outcome.best is not None and outcome.best.result.speedup == 10.0 and outcome.best.result.confirmed
    assert sum("r1 c" in s for s in bench.evaluated) < 6  # round 2 checked only what fit


def test_the_costs_fit_the_best_proposals_and_none_when_nothing_was_measured():
    costs = RoundCosts()
    assert costs.fitting([1, 2, 3], remaining=0.1) == [1, 2, 3]  # the first round: nothing to go by
    costs.evaluated(4, 1.2)
    costs.confirmed(0.25)
    costs.confirmed(0.2)
    assert costs.reserve(2) == 0.3 * 2 + 2 * 0.25  # twice the longest confirmation
    assert costs.reserve(8) == costs.reserve(2)  # screening plans for the best two; the batch is cut to fit after
    assert costs.fitting([1, 2, 3, 4, 5], remaining=1.2) == [1, 2]
    assert costs.fitting([1, 2, 3], remaining=0.2) == [1]  # at least one
