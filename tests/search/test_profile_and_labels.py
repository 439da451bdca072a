"""Profiler facts (parsed from a real `ncu --csv --page raw` of an H100) reach the model's prompt
from round 2 on, never in round 1; candidates get one-line labels."""

from pathlib import Path

import pytest

from fsr_lsp.evaluator.profile.profile import ProfileFacts, Profiled, Stall, parse_ncu_csv, profile
from fsr_lsp.search.labels import code_label, model_label

from ..support.fake_llm import FakeLLM, answer
from ..support.scripted_bench import ScriptedBench
from ..support.search_helpers import context, example
from ..support.scripted_search import kernel, search

NCU_CSV = (Path(__file__).parent.parent / "data" / "ncu" / "elementwise_h100.csv").read_text()
FACTS = ProfileFacts(kernel_ms=0.5, dram_pct=91.0, l2_pct=60.0, sm_pct=20.0, occupancy_pct=45.0,
                     stalls=[Stall("long_scoreboard", 12.5), Stall("barrier", 3.0)], bank_conflicts=4096,
                     local_sectors=0)


def test_ncu_csv_gives_the_facts_with_the_roofline_position():
    facts = parse_ncu_csv(NCU_CSV)
    assert facts is not None
    assert (facts.dram_pct, facts.l2_pct, facts.sm_pct, facts.occupancy_pct) == (81.30, 81.98, 6.15, 80.89)
    assert facts.kernel_ms == pytest.approx(0.04176)  # "41,760" ns: thousands separators
    assert [s.reason for s in facts.stalls] == ["long_scoreboard", "drain", "short_scoreboard"]
    assert facts.bound == "memory" and round(facts.bound_pct) == 82
    assert (facts.bank_conflicts, facts.local_sectors) == (0, 0)
    text = "\n".join(facts.describe())
    assert "memory-bound, at 82% of that bound" in text and "long scoreboard (166.5)" in text


def test_ncu_output_without_metrics_gives_no_facts():
    assert parse_ncu_csv("==PROF== Connected\n==ERROR== ERR_NVGPUCTRPERM - no permission\n") is None
    assert parse_ncu_csv("") is None


def test_without_ncu_the_profile_says_so(monkeypatch):
    monkeypatch.setattr("fsr_lsp.evaluator.profile.profile.find_ncu", lambda: None)
    result = profile(job=None)  # the job is never looked at
    assert result.facts is None and "ncu" in result.note and "not on PATH" in result.note


class ProfilingBench(ScriptedBench):
    profiles = True

    def __init__(self, facts=FACTS, note=""):
        super().__init__()
        self.facts, self.note = facts, note
        self.profiled = []

    def profile(self, proposal):
        self.profiled.append(proposal.source if proposal else None)
        return Profiled(self.facts, self.note)


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("FSR_LOOP_KEY", "sk-profile-test")


def test_round_one_prompt_has_no_profile_and_round_two_has_the_leaders(env, without_structural_rewrites):
    steps = [kernel("verified 1.4", "first"), kernel("verified 1.2", "second")]
    bench = ProfilingBench()
    with FakeLLM(steps, default=kernel("verified 1.1", "more")) as llm:
        outcome, _ = search(llm, bench, rounds=2, candidates=2, fix_attempts=0)
    prompts = llm.prompts()
    round1, round2 = prompts[:2], prompts[2:4]
    assert all("Nsight Compute" not in p for p in round1)
    for p in round2:
        assert "Nsight Compute on the fastest version so far" in p
        assert "roofline: memory-bound, at 91% of that bound" in p
        assert "DRAM throughput 91% of peak, L2 60%, SM 20%" in p and "achieved occupancy 45%" in p
        assert "long scoreboard (12.5), barrier (3.0)" in p and "bank conflicts: 4096" in p
    assert len(bench.profiled) == 1 and "// first" in bench.profiled[0]  # round 1's leader, profiled once
    assert outcome.notes == []


def test_no_profiler_is_a_note_for_the_user_and_the_prompt_goes_without(env):
    bench = ProfilingBench(facts=None, note="Nsight Compute (ncu) is not on PATH: no profiler facts")
    with FakeLLM(default=kernel("verified 1.2")) as llm:
        outcome, _ = search(llm, bench, rounds=3, candidates=1, fix_attempts=0)
    assert all("Nsight Compute on" not in p for p in llm.prompts())
    assert outcome.notes == ["Nsight Compute (ncu) is not on PATH: no profiler facts"]


def test_the_builtin_tuner_is_not_profiled():
    from fsr_lsp.search import SearchConfig, run_search
    from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator

    bench = ProfilingBench()
    run_search(example("saxpy.cu"), "saxpy.cu", "saxpy", SearchConfig(rounds=2, candidates=2, sanitize_winner=False),
               bench, BuiltinGenerator())
    assert bench.profiled == []


def test_the_models_change_line_is_the_label(env):
    reply = answer("""```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: verified 1.3
}
```
Change: read-only loads through __restrict__

Here is an optimized version of the kernel. It should be faster.""")
    with FakeLLM([reply]) as llm:
        outcome, _ = search(llm, rounds=1, candidates=1)
    assert outcome.tried[0].proposal.note == "read-only loads through __restrict__"
    from fsr_lsp.search.prompting import system_prompt

    assert "Change: <what you changed" in system_prompt()


@pytest.mark.parametrize("text, label", [
    ("```cuda\nx\n```\n**Change:** `warp-per-row softmax with shuffles`\nMore prose.", "warp-per-row softmax with shuffles"),
    ("Change - 2D tile 32x8\n```cuda\nChange: not this one\n```", "2D tile 32x8"),
    ("Here is an optimized version of the kernel.\n```cuda\nx\n```", ""),
])
def test_change_lines_are_parsed_outside_the_code(text, label):
    assert model_label(text) == label


def test_without_a_change_line_the_label_is_read_off_the_code():
    ctx = context(example("transpose.cu"), "transpose")
    spec = ctx.spec_text.replace("block = [32, 8]", "block = [32, 32]")
    assert spec != ctx.spec_text
    candidate = spec + """
__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[32][33];
    int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
    #pragma unroll
    for (int k = 0; k < 1; ++k) tile[threadIdx.y][threadIdx.x] = in[r * cols + c];
}
"""
    label = code_label(ctx.definition, ctx.spec, "transpose", candidate)
    assert label.startswith("block (32, 8) -> (32, 32); shared tile")
    assert "unrolled loops" in label
    assert code_label(ctx.definition, ctx.spec, "transpose", ctx.definition) == "code rewritten (no named change found)"
