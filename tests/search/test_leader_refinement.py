"""Later rounds refine the leader (issue 57): a tiled product's configuration climbs from the
verified leader by screening its neighbours, only what screens faster than the leader is fully
verified, and once a rewrite of the work is 2x ahead no round goes back to tuning the original's
block shape. Judged against a synthetic cost model standing in for the GPU."""

from __future__ import annotations

import math
import re
from pathlib import Path

from fsr_lsp.evaluator.gpu.timing import MIN_SLOW_REPS, least_reps
from fsr_lsp.evaluator.records import EvalResult, TimingConfig, TimingStats
from fsr_lsp.search.config import SearchConfig
from fsr_lsp.search.outcome import Bench
from fsr_lsp.search.generators.screening import screened_ms
from fsr_lsp.search.generators.structural.matmul.tile_space import TileConfig
from fsr_lsp.search.generators.structural.tiles import GENERATOR
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator
from fsr_lsp.search.loop import run_search

from ..support.search_helpers import GPU, context

SGEMM = Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "sgemm.cu"
BASE_MS = 100.0
BEST = TileConfig(128, 128, 8, 8, 8)


def tile_of(note: str) -> TileConfig | None:
    m = re.search(r"(\d+)x(\d+) outputs a block, (\d+)x(\d+) a thread \(\d+ threads\), (\d+) of k", note)
    if m is None:
        return None
    bm, bn, tm, tn, bk = map(int, m.groups())
    return TileConfig(bm, bn, bk, tm, tn, 2 if "double-buffered" in note else 1, "128-bit" in note,
                      4 if "padded" in note else 0, 2 if "capped" in note else 0)


def modelled_speedup(p) -> float:
    """Tiles: 40x at BEST, less the further each knob is from it; anything else (the original's
    shapes, other rewrites) 1.3x."""
    c = tile_of(p.note or "") if p.generator == GENERATOR else None
    if c is None:
        return 1.3
    distance = sum(abs(math.log2(getattr(c, f) / getattr(BEST, f))) for f in ("bm", "bn", "bk", "tm", "tn"))
    distance += (c.buffers != BEST.buffers) + (c.vector != BEST.vector) + 0.1 * (c.pad != BEST.pad)
    return 40.0 / (1.0 + distance)


def stats(ms: float) -> TimingStats:
    return TimingStats(ms, ms, ms, ms, ms, 10)


class ModelBench(Bench):
    """The GPU as the cost model says: every candidate verifies at its modelled speedup; a
    screen gives the same times, timed beside the original."""

    flags: tuple[str, ...] = ()  # type: ignore[assignment]
    screens = True
    gpu = GPU  # type: ignore[assignment]

    def __init__(self) -> None:
        self.evaluated: list = []
        self.screened: list = []

    def baseline(self) -> EvalResult:
        return EvalResult(kernel="k", status="verified", message="original", gpu=GPU, original_time=stats(BASE_MS))

    def evaluate(self, proposals, on_result=None):
        self.evaluated += proposals
        return [self._result(p, screened=False) for p in proposals]

    def screen(self, proposals):
        self.screened += proposals
        return [self._result(p, screened=True) for p in proposals]

    def confirm(self, proposal):
        return self._result(proposal, screened=False)

    def _result(self, p, screened: bool) -> EvalResult:
        s = modelled_speedup(p)
        return EvalResult(kernel="k", status="verified", message=f"{s:.2f}x", gpu=GPU, original_time=stats(BASE_MS),
                          candidate_time=stats(BASE_MS / s), speedup=s, speedup_ci=(s * 0.99, s * 1.01),
                          sizes_checked=["a", "b"], seeds=[1, 2, 3], screened=screened)


def search(rounds: int = 4):
    bench = ModelBench()
    outcome = run_search(SGEMM.read_text(), str(SGEMM), "sgemm_naive",
                         SearchConfig(rounds=rounds, candidates=4, time_budget=600, sanitize_winner=True),
                         bench, BuiltinGenerator(budget=16, seconds=5))
    return outcome, bench


def test_once_a_structural_leader_is_2x_ahead_no_later_round_verifies_a_configuration_of_the_original():
    outcome, bench = search()
    first_ahead = next(t.proposal.round for t in outcome.tried if t.verified and (t.result.speedup or 0) >= 2)
    assert first_ahead == 0
    later = [t for t in outcome.tried if t.proposal.round > first_ahead]
    assert later, "no later round ran"
    assert all(t.proposal.generator == GENERATOR for t in later), [t.proposal.note for t in later]
    assert not any(p.generator.startswith("builtin:block") for p in bench.evaluated)


def test_later_rounds_climb_from_the_leader_to_a_faster_configuration_each_from_its_parent():
    outcome, _ = search()
    round0 = max(t.result.speedup for t in outcome.tried if t.proposal.round == 0 and t.verified)
    assert outcome.best is not None and outcome.best.result.speedup > round0
    assert outcome.best.result.speedup == 40.0, outcome.best.proposal.note  # the model's optimum, found
    keys = {t.proposal.key for t in outcome.tried}
    for t in outcome.tried:
        if t.proposal.round > 0:
            assert t.proposal.parent in keys  # refines a candidate of this search: the table shows which


def test_only_what_screens_faster_than_the_leader_is_fully_verified():
    outcome, _ = search()
    by_round: dict[int, float] = {}
    for t in sorted(outcome.tried, key=lambda t: t.proposal.round):
        r = t.proposal.round
        if r > 0:
            parent = next(x for x in outcome.tried if x.proposal.key == t.proposal.parent)
            assert t.result.speedup > parent.result.speedup, (t.proposal.note, parent.proposal.note)
        by_round[r] = max(by_round.get(r, 0.0), t.result.speedup or 0.0)


def test_a_leader_at_its_best_gets_no_neighbours_verified():
    """Every neighbour of the model's optimum screens slower: the climb proposes nothing."""
    from fsr_lsp.search.generators.tuner.climb import Family, climb
    from fsr_lsp.search.generators.structural.tiles import bench_sizes, matrix_product, tile_proposal
    from fsr_lsp.search.proposal import Tried

    ctx = context(SGEMM.read_text(), "sgemm_naive", round_=1)
    product = matrix_product(ctx.kernel, ctx.spec, ctx.definition)
    family = Family(product, bench_sizes(product, ctx.spec), 132)
    best = tile_proposal(product, BEST)
    family.register(BEST, best)
    bench = ModelBench()
    ctx.screen = bench.screen
    leader = Tried(best, bench.confirm(best))
    assert climb(ctx, family, leader, {best.key}, 4) == []
    assert len(bench.screened) > 5  # its neighbours were looked at


def test_a_screen_that_timed_the_candidate_alone_ranks_it_by_its_own_time():
    alone = EvalResult(kernel="k", status="timed", message="", screened=True, candidate_time=stats(3.0))
    beside = EvalResult(kernel="k", status="verified", message="", screened=True, candidate_time=stats(3.0),
                        original_time=stats(6.0))
    failed = EvalResult(kernel="k", status="wrong", message="", screened=True)
    full = EvalResult(kernel="k", status="timed", message="", candidate_time=stats(3.0))  # no screen's
    assert screened_ms(alone, 100.0) == 3.0
    assert screened_ms(beside, 100.0) == 50.0
    assert screened_ms(failed, 100.0) is None and screened_ms(full, 100.0) is None


def test_a_slow_kernel_is_timed_fewer_times_a_fast_one_as_configured():
    cfg = TimingConfig()
    assert least_reps(cfg, 0.05) == cfg.min_reps
    assert least_reps(cfg, 99.0) == cfg.min_reps  # 20 runs of 99 ms: under two seconds
    assert least_reps(cfg, 275.0) == 7
    assert least_reps(cfg, 5000.0) == MIN_SLOW_REPS


def test_a_models_later_round_starts_from_the_verified_tiled_leader_and_its_configuration(monkeypatch):
    """Issue 57 item 5: with a model configured, round 0 is fsr's own tiled products; the model's
    next round is shown the verified leader as the best so far: its code and the note that names
    its configuration."""
    from fsr_lsp.search.config import LLMConfig
    from fsr_lsp.search.generators.llm import LLMGenerator
    from fsr_lsp.search.proposal import Tried

    from ..support.fake_llm import FakeLLM, answer

    monkeypatch.setenv("FSR_TEST_KEY", "unused-0123456789")
    source = SGEMM.read_text()
    code = source[source.index("__global__"):]
    with FakeLLM([answer(f"```cuda\n{code}```")] * 4) as llm:
        gen = LLMGenerator(LLMConfig(base_url=llm.base_url, model="m", api_key_env="FSR_TEST_KEY", timeout=5))
        bench = ModelBench()
        ctx = context(source, "sgemm_naive")
        ctx.screen = bench.screen
        first = gen.propose(ctx, 4)
        assert first and all(p.generator == GENERATOR for p in first) and not llm.requests
        leader = max(first, key=modelled_speedup)
        verified = [Tried(leader, bench.confirm(leader))]  # as the loop gives them: the history, its fastest the seeds
        later = context(source, "sgemm_naive", round_=1, history=verified, seeds=verified)
        gen.propose(later, 1)
        prompt = str(llm.requests[-1])
        assert "fsr_sum" in prompt and leader.note in prompt, prompt[-3000:]
