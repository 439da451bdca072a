"""Screening, profiling and the tuner on a real GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator.profile.profile import find_ncu
from fsr_lsp.search import SearchConfig, run_search
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator
from fsr_lsp.search.gpu_bench import GpuBench
from fsr_lsp.search.proposal import Proposal

from .conftest import QUICK, kernel_text

pytestmark = pytest.mark.gpu
VADD = kernel_text("vadd.cu")
TRANSPOSE = (Path(__file__).parents[2] / "bench" / "naive_kernels" / "transpose.cu").read_text()


def test_screening_checks_the_bench_size_only_and_is_never_a_verdict(evaluator):
    bench = GpuBench(evaluator, VADD, "vadd", QUICK)
    good, wrong = kernel_text("good_restrict.cu"), kernel_text("wrong_math.cu")
    screened = bench.screen([Proposal(good, "t"), Proposal(wrong, "t")])
    assert screened[0].passed_screen and not screened[0].verified and screened[0].screened
    assert len(screened[0].sizes_checked) == 1 and screened[0].candidate_time is not None
    assert screened[1].status == "wrong"  # outputs are still checked at that size
    full = bench.evaluate([Proposal(good, "t")])[0]
    assert full.verified and len(full.sizes_checked) > 1


@pytest.mark.skipif(find_ncu() is None, reason="Nsight Compute (ncu) not installed")
def test_ncu_profiles_a_candidate_at_the_bench_size(evaluator):
    bench = GpuBench(evaluator, VADD, "vadd", QUICK)
    profiled = bench.profile(Proposal(kernel_text("good_restrict.cu"), "t"))
    assert profiled.facts is not None, profiled.note
    facts = profiled.facts
    print(f"\n[profile] vadd candidate: {'; '.join(facts.describe())}")
    assert facts.bound == "memory" and facts.dram_pct > 30 and facts.kernel_ms > 0
    original = bench.profile(None)
    assert original.facts is not None and original.facts.who == "original"


def test_the_tuner_finds_a_verified_win_on_a_naive_transpose_within_a_minute(evaluator):
    bench = GpuBench(evaluator, TRANSPOSE, "transpose_naive", QUICK)
    generator = BuiltinGenerator(seconds=30)
    config = SearchConfig(rounds=1, candidates=3, time_budget=60, fix_attempts=0)
    outcome = run_search(TRANSPOSE, "transpose.cu", "transpose_naive", config, bench, generator)
    print(f"\n[tuner] transpose: {outcome.message}; {generator.screened} screened; "
          f"win at {outcome.best.found_at if outcome.best else '-'} s")
    assert outcome.status == "improved" and outcome.best.result.confirmed
    assert outcome.best.found_at < 60
    # the tuner screens its variants unless a structural rewrite (round 0) already won: a tile
    # transpose, of one element a thread or of several (the rows variants, near it in speed)
    assert generator.screened >= 20 or outcome.best.proposal.generator.startswith(
        ("builtin:transpose-tile", "builtin:transpose-rows")), \
        (generator.screened, outcome.best.proposal.generator)
