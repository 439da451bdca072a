"""The search on a real GPU, with the scripted local endpoint serving known-good and
known-bad rewrites: the fastest verified one must win and every bad one must be rejected."""

from __future__ import annotations

import pytest

from fsr_lsp.search import LLMConfig, SearchConfig, run_search
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator
from fsr_lsp.search.generators.llm import LLMGenerator
from fsr_lsp.search.gpu_bench import GpuBench

from ..support.fake_llm import FakeLLM, answer
from .conftest import QUICK, kernel_text

pytestmark = pytest.mark.gpu
VADD = kernel_text("vadd.cu")
GOOD = ["good_restrict.cu", "good_launch.cu"]
BAD = ["wrong_math.cu", "skip_tail.cu", "reads_output.cu", "modifies_input.cu", "counts_launches.cu", "faults.cu"]


def fenced(name: str) -> object:
    return answer(f"```cuda\n{kernel_text(name)}\n```\nChange: {name}")


def test_scripted_endpoint_fastest_verified_wins_and_bad_ones_are_rejected(evaluator, monkeypatch):
    monkeypatch.setenv("FSR_GPU_TEST_KEY", "unused")
    steps = [fenced(n) for n in BAD[:3] + GOOD[:1] + BAD[3:] + GOOD[1:]]
    with FakeLLM(steps) as llm:
        config = SearchConfig(rounds=1, candidates=len(steps), fix_attempts=0, sanitize_winner=False,
                              llm=LLMConfig(base_url=llm.base_url, model="scripted", api_key_env="FSR_GPU_TEST_KEY"))
        generator = LLMGenerator(config.llm, parallel=1)
        outcome = run_search(VADD, "vadd.cu", "vadd", config, GpuBench(evaluator, VADD, "vadd", QUICK), generator)
    by_name = {t.proposal.note.split()[-1]: t for t in outcome.tried}
    for name in BAD:
        assert not by_name[name].verified, (name, by_name[name].result.message)
    assert by_name["faults.cu"].result.status == "crashed"
    verified = [t for t in outcome.tried if t.verified]
    assert {t.proposal.note.split()[-1] for t in verified} == set(GOOD)
    fastest = max(verified, key=lambda t: t.result.speedup)
    assert outcome.best_tried is fastest
    if outcome.best is not None:
        assert outcome.best is fastest and outcome.status == "improved"


def test_builtin_search_on_the_gpu_returns_only_verified_wins(evaluator):
    source = kernel_text("vadd.cu")
    config = SearchConfig(rounds=2, candidates=4, fix_attempts=0, sanitize_winner=True, time_budget=120)
    outcome = run_search(source, "vadd.cu", "vadd", config, GpuBench(evaluator, source, "vadd", QUICK),
                         BuiltinGenerator())
    assert outcome.status in ("improved", "no_win"), outcome.message
    assert len(outcome.tried) >= 4
    if outcome.best:
        assert outcome.best.verified and outcome.best.result.speedup > 1.0
        assert {c.name: c.status for c in outcome.best.result.checks}.get("sanitizer memcheck") == "pass"


@pytest.mark.skipif(__import__("fsr_lsp.evaluator.sanitize.sanitizer", fromlist=["x"]).find_sanitizer() is None,
                    reason="compute-sanitizer not installed")
def test_a_leader_that_memcheck_rejects_never_seeds_the_next_round(evaluator, monkeypatch):
    monkeypatch.setenv("FSR_GPU_TEST_KEY", "unused")
    steps = [fenced("oob_read_mid.cu"), fenced("good_restrict.cu")]
    with FakeLLM(steps, default=fenced("good_launch.cu")) as llm:
        # a structural rewrite may take round 1 (vadd is an element-wise map): the model's pair
        # then leads round 2, and round 3's prompt is the one that must not show the demoted leader
        config = SearchConfig(rounds=3, candidates=2, fix_attempts=0, sanitize_winner=True,
                              llm=LLMConfig(base_url=llm.base_url, model="scripted", api_key_env="FSR_GPU_TEST_KEY"))
        outcome = run_search(VADD, "vadd.cu", "vadd", config, GpuBench(evaluator, VADD, "vadd", QUICK),
                             LLMGenerator(config.llm, parallel=1))
        prompts = llm.prompts()
    print(f"\n[search] memcheck leader: {outcome.status}: {outcome.message[:200]}; {len(prompts)} prompts; "
          + "; ".join(f"{t.proposal.note or t.proposal.generator}: {t.result.status}: {t.result.message[:120]}"
                      for t in outcome.tried))
    bad = next(t for t in outcome.tried if "oob_read_mid" in t.proposal.note)
    assert bad.result.status == "wrong" and "demoted as round" in bad.result.message, bad.result.message
    round2 = prompts[2]  # the first prompt after the round it led
    assert "past the end of `a` at n=65537" in bad.result.message
    fastest = round2.split("Fastest so far")[1] if "Fastest so far" in round2 else ""
    assert "volatile const float* pa" not in fastest
    assert outcome.best is None or "oob_read_mid" not in outcome.best.proposal.note
