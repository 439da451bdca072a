"""What the search's GPU bench asks of its backend: a round's candidates are timed only as far
as the search decides (a win's interval clears 1 + min_gain; a loser's answer comes sooner),
while its confirmations and the baseline are timed to the full precision."""

from __future__ import annotations

from fsr_lsp.evaluator import EvalOptions
from fsr_lsp.evaluator.records import EvalResult
from fsr_lsp.search.gpu_bench import GpuBench
from fsr_lsp.search.proposal import Proposal


class Recording:
    def __init__(self) -> None:
        self.requests: list = []

    def evaluate(self, requests, cancel=None, on_result=None):
        self.requests.extend(requests)
        return [EvalResult(kernel=r.kernel, status="verified", message="") for r in requests]

    def compile_ahead(self, requests):
        self.requests.extend(requests)


def test_round_checks_stop_at_the_search_s_line_and_confirmations_at_the_precision():
    backend = Recording()
    bench = GpuBench(backend, "// original", "k", EvalOptions(), min_gain=0.05)  # type: ignore[arg-type]
    proposal = Proposal("__global__ void k() {}", "test")
    bench.compile_ahead([proposal])
    bench.evaluate([proposal])
    bench.confirm(proposal)
    bench.baseline()
    lines = [(r.action, r.candidate is None, r.options.timing.win_above) for r in backend.requests]
    assert lines[:2] == [("evaluate", False, 1.05), ("evaluate", False, 1.05)]
    assert lines[2:] == [("confirm", False, 0.0), ("evaluate", True, 0.0)]
    assert {r.options.timing.precision for r in backend.requests} == {EvalOptions().timing.precision}


def test_without_a_min_gain_every_candidate_is_timed_to_the_precision():
    backend = Recording()
    GpuBench(backend, "// original", "k").evaluate([Proposal("__global__ void k() {}", "test")])  # type: ignore[arg-type]
    assert backend.requests[0].options.timing.win_above == 0.0


def test_a_rounds_leaders_are_asked_to_be_confirmed_in_one_batch():
    backend = Recording()
    bench = GpuBench(backend, "// original", "k", EvalOptions())  # type: ignore[arg-type]
    results = bench.confirm_many([Proposal(f"__global__ void k() {{ /* {i} */ }}", "test") for i in range(3)])
    assert len(results) == 3 and [r.action for r in backend.requests] == ["confirm"] * 3
    assert len({r.candidate for r in backend.requests}) == 3


def test_a_rounds_candidates_share_their_input_sets_and_a_confirmation_draws_fresh_ones():
    """Rounds: one base seed from the kernel's text for every candidate (the worker runs the
    original on each input set once), the same in a later search of the same code. The baseline
    and the confirmations: fresh seeds every job, so no leader is confirmed on the inputs it was
    screened on."""
    proposals = [Proposal(f"__global__ void k() {{ /* {i} */ }}", "test") for i in range(2)]
    seeds = []
    for _ in range(2):
        backend = Recording()
        bench = GpuBench(backend, "// original", "k", EvalOptions(), min_gain=0.05)  # type: ignore[arg-type]
        bench.evaluate(proposals)
        bench.confirm_many(proposals)
        bench.baseline()
        rounds = [r.options.base_seed for r in backend.requests if r.action == "evaluate" and r.candidate]
        assert len(set(rounds)) == 1 and rounds[0] is not None
        seeds.append(rounds[0])
        assert [r.options.base_seed for r in backend.requests if r.action == "confirm" or r.candidate is None] == \
            [None, None, None]
    assert seeds[0] == seeds[1]
    other = Recording()
    GpuBench(other, "// another original", "k").evaluate(proposals[:1])  # type: ignore[arg-type]
    assert other.requests[0].options.base_seed != seeds[0]


def test_a_seed_the_caller_chose_is_kept_for_the_rounds():
    backend = Recording()
    GpuBench(backend, "// original", "k", EvalOptions(base_seed=42)).evaluate(  # type: ignore[arg-type]
        [Proposal("__global__ void k() {}", "test")])
    assert backend.requests[0].options.base_seed == 42
