"""The built-in tuner: its space, its rewrites (deterministic, well-formed, compiling with
nvcc), and its strategy against a synthetic cost model, with and without screening."""

import contextlib
import dataclasses
import math
import random
from pathlib import Path

import pytest

from fsr_lsp.evaluator import EvalOptions, prepare
from fsr_lsp.evaluator.records import EvalResult, TimingStats
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator
from fsr_lsp.search.generators.tuner import Config, render, space_of

from ..support.search_helpers import GPU, context, example

EXAMPLES = [("saxpy.cu", "saxpy"), ("transpose.cu", "transpose"), ("matmul.cu", "matmul"), ("softmax.cu", "softmax"),
            ("layernorm.cu", "layernorm"), ("stencil.cu", "stencil")]
GPU_2048 = dataclasses.replace(GPU, max_threads_per_sm=2048)


def _space(source, name):
    ctx = context(source, name)
    return ctx, space_of(ctx.kernel, ctx.spec, ctx.definition, GPU_2048)


def _render(source, name, config):
    ctx, space = _space(source, name)
    return render(config, space, ctx.kernel, ctx.spec, ctx.definition, GPU_2048)


@pytest.mark.nvcc
@pytest.mark.parametrize("file, name", EXAMPLES)
def test_every_rewrite_compiles_with_nvcc(file, name, cache_dir):
    source = example(file)
    # round 1: a structural rewrite (round 0 has it alone, where one applies) and the tuner's
    proposals = BuiltinGenerator().propose(context(source, name, round_=1), 40)
    assert len(proposals) >= 4
    for p in proposals:
        options = EvalOptions(compiler="nvcc", candidate_flags=p.flags, cache_dir=cache_dir)
        prepared = prepare(source, name, p.source, "sm_90a", options)
        assert prepared.job is not None, (p.note, prepared.result.message)


SHAPES = (Path(__file__).parent.parent / "data" / "tuning" / "shapes.cu").read_text()


@pytest.mark.nvcc
@pytest.mark.parametrize("name", ["typed_scale", "row_sums", "affine_act", "blur_rows"])
def test_every_knob_compiles_on_kernels_in_real_files_shapes(name, cache_dir):
    """typedef'd types and #define'd launch bounds, a template, #pragma unroll before an unbraced
    loop, #if in the parameter list, inline PTX and a struct in helpers: each single change and
    a few combinations is a candidate the evaluator accepts and nvcc compiles."""
    ctx, space = _space(SHAPES, name)
    configs = space.neighbours(Config()) + space.block_configs()[:2]
    rng = random.Random(7)
    configs += [space.random(rng) for _ in range(4)]
    rendered = [(c, render(c, space, ctx.kernel, ctx.spec, ctx.definition, GPU_2048)) for c in configs]
    proposals = [(c, p) for c, p in rendered if p is not None]
    assert len(proposals) >= 8 and {c.block for c, _ in proposals} - {None}
    for c, p in proposals:
        options = EvalOptions(compiler="nvcc", candidate_flags=p.flags, cache_dir=cache_dir)
        prepared = prepare(SHAPES, name, p.source, "sm_90a", options)
        assert prepared.job is not None, (c.describe(), prepared.result.message)


def test_the_space_holds_every_legal_launch_shape():
    _, space = _space(example("saxpy.cu"), "saxpy")
    shapes = [c.block for c in space.block_configs()]
    usual = [32, 64, 128, 512, 1024]
    assert shapes[:len(usual)] == [(b,) for b in usual]  # powers of two first
    assert sorted(shapes) == [(b,) for b in range(32, 1025, 32) if b != 256]
    _, space2 = _space(example("transpose.cu"), "transpose")
    shapes2 = {c.block for c in space2.block_configs()}
    assert {(8, 32), (16, 16), (64, 4), (128, 8), (8, 4)} - {space2.original_block} <= shapes2
    assert space2.original_block not in shapes2
    assert all(8 <= x <= 128 and 32 <= x * y <= 1024 for x, y in shapes2)
    assert not space.legal(Config(block=(1024,), min_blocks=4))  # 4 x 1024 threads do not fit an SM
    assert space.legal(Config(block=(512,), min_blocks=4))
    assert space.size > 1000  # too many to try one by one: the reason for a strategy


def test_unscreened_proposals_are_deterministic_distinct_and_cover_every_knob(without_structural_rewrites):
    source = example("saxpy.cu")
    first = BuiltinGenerator().propose(context(source, "saxpy"), 20)
    second = BuiltinGenerator().propose(context(source, "saxpy"), 20)
    assert [p.source for p in first] == [p.source for p in second]
    assert len({p.key for p in first}) == len(first)
    notes = [p.note for p in first]
    for expected in ("block 128", "__restrict__", "grid-stride over 1 wave of resident blocks",
                     "__launch_bounds__", "blockDim as a constant", "-use_fast_math"):
        assert expected in notes
    assert ("-use_fast_math",) == next(p.flags for p in first if p.note == "-use_fast_math")


def test_grid_stride_sizes_the_grid_to_resident_blocks_and_keeps_the_bounds():
    p = _render(example("saxpy.cu"), "saxpy", Config(grid_stride_waves=2))
    assert f'grid = "min(cdiv(n, 256), {132 * 8 * 2})"' in p.source  # 2048 / 256 = 8 resident blocks per SM
    assert "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)" in p.source
    p = _render(example("saxpy.cu"), "saxpy", Config(block=(1024,), grid_stride_waves=1))
    assert f'grid = "min(cdiv(n, 1024), {132 * 2})"' in p.source and "block = 1024" in p.source


KERNEL = """/* @fsr
bench = { n = 4096, m = 64 }
grid = "(n + 255) / 256"
block = 256
smem = "256 * 4"
[args]
x = "in[n]"
w = "in[m]"
y = "out[n]"
n = "n"
m = "m"
*/
__global__ void __launch_bounds__(256) k(float* x, float* w, float* y, int n, int m)
{
    extern __shared__ float s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    float acc = 0.0f;
    #pragma unroll 2
    for (int j = 0; j < m; ++j)
        acc += w[j] * s[(threadIdx.x + j) % blockDim.x];
    for (int j = 0; j < 2; ++j)
        acc *= 0.5f;
    if (i < n) y[i] = acc;
}
"""


def test_rewrites_rescale_the_launch_and_keep_the_kernel_well_formed():
    p = _render(KERNEL, "k", Config(block=(128,), restrict="const", unroll=4, static_block=True))
    assert 'grid = "(n + 127) / 128"' in p.source and 'smem = "128 * 4"' in p.source and "block = 128" in p.source
    assert "const float* __restrict__ x" in p.source and "const float* __restrict__ w" in p.source
    assert "float* __restrict__ y" in p.source and "const float* __restrict__ y" not in p.source  # y is written
    assert "__launch_bounds__(128)" in p.source and "__launch_bounds__(256)" not in p.source
    assert p.source.count("#pragma unroll") == 2  # the loop that had a pragma keeps its own, alone
    assert "#pragma unroll 2\n    for (int j = 0; j < m" in p.source
    assert "#pragma unroll 4\n    for (int j = 0; j < 2" in p.source
    body = p.source.split("*/")[-1].split("{", 1)[1]
    assert "% 128]" in body and "if (blockDim.x != 128 || blockDim.y != 1 || blockDim.z != 1) __trap();" in body
    assert body.count("blockDim") == 3  # only in the guard: another launch traps rather than computes garbage
    p = _render(KERNEL, "k", Config(min_blocks=2))
    assert "__launch_bounds__(256, 2)" in p.source and "@fsr" not in p.source  # same launch: no block


def test_no_block_change_when_the_body_hard_codes_the_block_size():
    src = """/* @fsr
bench = { n = 4096 }
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
x = "inout[n]"
*/
__global__ void k(int n, float* x)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = s[255 - threadIdx.x];
}
"""
    _, space = _space(src, "k")
    assert space.block_configs() == []
    assert space.waves == (None,)  # the guarded statement is not alone
    notes = [p.note for p in BuiltinGenerator().propose(context(src, "k"), 40)]
    assert notes and not any(n.startswith("block ") for n in notes)


# ------------------------------------------------------------ the strategy, on a cost model


class CostModel:
    """Screening stand-in: a time from the notes of a candidate, the best launch shape a
    (64,) block; restrict, unroll 8 and two resident-block waves each help on top of it;
    fast math breaks the outputs."""

    def __init__(self, cancel_after: int | None = None):
        self.screened = []
        self.cancel_after = cancel_after

    def __call__(self, proposals):
        results = []
        for p in proposals:
            if self.cancel_after is not None and len(self.screened) >= self.cancel_after:
                results.append(EvalResult(kernel="k", status="cancelled", message="search cancelled", screened=True))
                continue
            self.screened.append(p.note)
            ms = self.time(p.note)
            status = "wrong" if "fast_math" in p.note else "verified"
            t = TimingStats(ms, ms, ms, ms, ms, 5)
            results.append(EvalResult(kernel="k", status=status, message="", screened=True, candidate_time=t,
                                      original_time=TimingStats(1.0, 1.0, 1.0, 1.0, 1.0, 5)))
        return results

    @staticmethod
    def time(note):
        block = 256
        for part in note.split(", "):
            if part.startswith("block "):
                block = int(part.split()[1])
        ms = 1.0 * (1 + abs(math.log2(block / 64)) * 0.3)
        ms *= 0.9 if "__restrict__" in note else 1.0
        ms *= 0.8 if "#pragma unroll 8" in note else 1.0
        ms *= 0.85 if "grid-stride over 2 waves" in note else 1.0
        return ms


def test_the_tuner_sweeps_every_shape_then_anneals_to_a_combination_no_sweep_finds(without_structural_rewrites):
    source = example("saxpy.cu")
    model = CostModel()
    ctx = context(source, "saxpy")
    ctx.screen = model
    gen = BuiltinGenerator(budget=96, seconds=60)
    proposals = gen.propose(ctx, 4)
    swept = {n for n in model.screened if n.startswith("block ") and "," not in n}
    assert len(swept) == 31  # every other 1D shape, once
    assert len(model.screened) == len(set(model.screened))  # nothing screened twice
    best = proposals[0].note
    assert "block 64" in best and "__restrict__" in best and "grid-stride over 2 waves" in best
    assert proposals[1].note == "block 64"  # the fastest plain shape is always verified too
    assert CostModel.time(best) < 0.9 * CostModel.time("block 64")  # beyond what a block sweep reaches


def test_a_later_round_anneals_on_from_the_verified_leader_without_repeating_itself(without_structural_rewrites):
    from fsr_lsp.search.proposal import Tried

    source = example("saxpy.cu")
    model = CostModel()
    gen = BuiltinGenerator(budget=16, seconds=60)
    ctx = context(source, "saxpy")
    ctx.screen = model
    first = gen.propose(ctx, 3)
    leader = Tried(first[0], EvalResult(kernel="k", status="verified", message="", speedup=2.0,
                                        candidate_time=TimingStats(0.5, 0.5, 0.5, 0.5, 0.5, 50)))
    ctx2 = context(source, "saxpy", round_=1, history=[leader], seeds=[leader])
    ctx2.screen = model
    before = len(model.screened)
    second = gen.propose(ctx2, 3)
    assert 0 < len(model.screened) - before <= 17  # no second sweep: the budget, plus the greedy guess
    assert not {p.key for p in second} & {leader.proposal.key}
    assert len(model.screened) == len(set(model.screened))


def test_cancelled_screening_stops_the_tuner(without_structural_rewrites):
    model = CostModel(cancel_after=20)
    ctx = context(example("saxpy.cu"), "saxpy")
    ctx.screen = model
    gen = BuiltinGenerator(budget=96, seconds=60)
    gen.propose(ctx, 4)
    assert len(model.screened) == 20
    assert gen._tuners and all(t.stopped for _, t in gen._tuners.values())


def test_screened_results_never_reach_the_history(monkeypatch, without_structural_rewrites):
    from fsr_lsp.search import SearchConfig, run_search

    from ..support.scripted_bench import ScriptedBench

    class TuningBench(ScriptedBench):
        screens = True

        def __init__(self):
            super().__init__()
            self.model = CostModel()

        def screen(self, proposals):
            return self.model(proposals)

        def _verdict(self, source):
            self.evaluated.append(source)
            return EvalResult(kernel="k", status="verified", message="", gpu=GPU, speedup=1.5,
                              original_time=TimingStats(2.0, 2, 2, 2, 2, 50),
                              candidate_time=TimingStats(1.33, 1.33, 1.33, 1.33, 1.33, 50), speedup_ci=(1.45, 1.55))

    bench = TuningBench()
    config = SearchConfig(rounds=1, candidates=3, sanitize_winner=False, fix_attempts=0)
    outcome = run_search(example("saxpy.cu"), "examples/saxpy.cu", "saxpy", config, bench,
                         BuiltinGenerator(budget=16, seconds=60))
    assert len(bench.model.screened) > 40  # the sweep and the annealing
    from fsr_lsp.search.generators.tuner.generator import FIRST_ROUND_PROPOSALS

    # only the top few were fully evaluated (the first round is short: a first win shows early)
    assert len(outcome.tried) == FIRST_ROUND_PROPOSALS and len(bench.evaluated) == FIRST_ROUND_PROPOSALS
    assert all(not t.result.screened for t in outcome.tried)
    assert outcome.status == "improved"


HISTOGRAM = """/* @fsr
bench = { n = 1000000 }
grid  = "cdiv(n, 256)"
block = 256
[args]
data = "in[n] randint(0, 63)"
bins = "inout[64] fill(0)"
n = "n"
*/
__global__ void hist(const unsigned char* data, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i]], 1u);
}
"""


def test_atomics_into_a_small_buffer_are_privatised_in_shared_memory():
    p = _render(HISTOGRAM, "hist", Config(privatize=True, grid_stride_waves=1))
    body = p.source.split("{", 2)[-1]
    assert "__shared__ unsigned int fsr_private_bins[64];" in p.source
    assert "atomicAdd(&fsr_private_bins[data[i]], 1u)" in p.source
    assert "atomicAdd(&bins[fsr_j], fsr_private_bins[fsr_j])" in p.source
    assert p.source.count("__syncthreads()") == 2 and "i += blockDim.x * gridDim.x" in body
    assert p.note == "grid-stride over 1 wave of resident blocks, atomics privatised in shared memory"


@pytest.mark.parametrize("body", [
    "int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n    atomicAdd(&bins[data[i]], 1u);",
    "int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicAdd(&bins[data[i]], bins[0]);",
])
def test_no_privatising_when_the_kernel_returns_early_or_reads_the_buffer(body):
    src = HISTOGRAM.split("{\n")[0] + "{\n    " + body + "\n}\n"
    _, space = _space(src, "hist")
    assert space.privatize == (False,) and space.private is None


class PrivatisingModel(CostModel):
    """A histogram's costs: privatising alone is slower (every block flushes every bin), a grid
    stride alone changes nothing, the two together are twenty times faster. Only the first
    `answered` configurations are screened (a short first round); the rest are cancelled."""

    def __init__(self, answered: int):
        super().__init__(cancel_after=answered)

    @staticmethod
    def time(note):
        private, strided = "privatised" in note, "grid-stride" in note
        return 0.05 if private and strided else 1.3 if private else 1.0


def test_round_0_screens_privatised_atomics_over_a_grid_stride_in_its_first_batch(without_structural_rewrites):
    """The split that wins tens of times is among the first configurations screened, so a short
    first round verifies it (it had waited for annealing to step onto both knobs together)."""
    ctx = context(HISTOGRAM, "hist")
    _, space = _space(HISTOGRAM, "hist")
    first_batch = 1 + len(space.restructured()) + len([c for c in space.block_configs() if space.shape_class(c) == "usual"])
    ctx.screen = PrivatisingModel(answered=first_batch)
    proposals = BuiltinGenerator(budget=96, seconds=60).propose(ctx, 2)
    assert proposals[0].note.startswith("grid-stride over") and "atomics privatised" in proposals[0].note
    assert sum("privatised" in n for n in ctx.screen.screened) == 3  # each wave count, in the first batch


def test_privatising_as_a_neighbour_brings_its_grid_stride():
    _, space = _space(HISTOGRAM, "hist")
    private = [n for n in space.neighbours(Config()) if n.privatize]
    assert private == [Config(privatize=True, grid_stride_waves=space.waves[1])]
    assert Config(privatize=True, grid_stride_waves=4) in space.neighbours(Config(grid_stride_waves=4))
    _, plain = _space(example("saxpy.cu"), "saxpy")
    assert plain.restructured() == []  # nothing to privatise: the sweep is as before


@pytest.mark.nvcc
def test_a_privatised_histogram_compiles(cache_dir):
    p = _render(HISTOGRAM, "hist", Config(privatize=True, grid_stride_waves=2, static_block=True, block=(512,)))
    assert "__shared__" in p.source  # privatised: the block's own bins in shared memory
    prepared = prepare(HISTOGRAM, "hist", p.source, "sm_90a", EvalOptions(compiler="nvcc", cache_dir=cache_dir))
    assert prepared.job is not None, prepared.result.message
    candidate = prepared.job.candidate
    assert candidate is not None and candidate.cubin and b"hist" in candidate.cubin  # the kernel, compiled


def test_screening_leaves_time_for_the_full_verification(without_structural_rewrites):
    import time as clock

    model = CostModel()
    ctx = context(example("saxpy.cu"), "saxpy")
    ctx.screen = model
    ctx.deadline = clock.monotonic() - 1  # the search's time is already up
    BuiltinGenerator(budget=96, seconds=60).propose(ctx, 4)
    assert model.screened == []


def test_screening_leaves_the_rounds_measured_reserve_for_checks_and_a_confirmation(without_structural_rewrites):
    """Ten seconds left, and this search's rounds need more after their proposals (their checks and a
    leader's confirmation, as measured): nothing is screened, though a share of 60% would be."""
    import time as clock

    model = CostModel()
    ctx = context(example("saxpy.cu"), "saxpy", round_=1)
    ctx.screen = model
    ctx.deadline, ctx.reserve = clock.monotonic() + 10, 10.5
    BuiltinGenerator(budget=96, seconds=60).propose(ctx, 4)
    assert model.screened == []


def test_shapes_that_are_not_powers_of_two_are_dropped_once_two_fail_and_none_passed(without_structural_rewrites):
    class TreeReduction(CostModel):
        """Every shape that is not a power of two fails, as a halving tree over the block does."""

        @staticmethod
        def time(note):
            for part in note.split(", "):
                if part.startswith("block ") and int(part.split()[1]) & (int(part.split()[1]) - 1):
                    return None
            return CostModel.time(note)

        def __call__(self, proposals):
            results = super().__call__(proposals)
            for p, r in zip(proposals, results):
                if self.time(p.note) is None:
                    r.status, r.candidate_time = "crashed", None
            return results

    model = TreeReduction()
    ctx = context(example("saxpy.cu"), "saxpy")
    ctx.screen = model
    BuiltinGenerator(budget=64, seconds=60).propose(ctx, 4)
    odd = [n for n in model.screened if TreeReduction.time(n) is None]
    assert len(odd) == 2  # the probe; then no more
    assert len(model.screened) > 40  # the budget went to the shapes that work


def test_screening_reports_its_progress(without_structural_rewrites):
    model = CostModel()
    ctx = context(example("saxpy.cu"), "saxpy")
    ctx.screen = model
    lines = []
    ctx.note = lines.append
    BuiltinGenerator(budget=16, seconds=60).propose(ctx, 4)
    assert lines and lines[-1].startswith(f"tuning: {len(model.screened)} configurations screened")


# ------------------------------------------------------------ round 0's structural rewrites, ranked by the screen

SOFTMAX = Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "softmax.cu"


class ByGenerator:
    """Screening stand-in: each structural rewrite's time relative to the original (1.0) by its
    generator; None fails the screen's check; anything else (a tuned shape) 0.95."""

    def __init__(self, ratios: dict[str, float | None]):
        self.ratios, self.screened = ratios, []

    def __call__(self, proposals):
        out = []
        for p in proposals:
            self.screened.append(p.generator)
            ratio = self.ratios.get(p.generator, 0.95)
            status = "wrong" if ratio is None else "verified"
            t = TimingStats(*([ratio or 1.0] * 5), 5)
            out.append(EvalResult(kernel="k", status=status, message="", screened=True, candidate_time=t,
                                  original_time=TimingStats(1.0, 1.0, 1.0, 1.0, 1.0, 5)))
        return out


def structural_of(ctx) -> set[str]:
    from fsr_lsp.search.generators.structural import structural_proposals

    return {p.generator for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, ctx.round)}


def test_round_0s_structural_rewrites_go_fastest_first_and_one_that_loses_is_dropped_for_the_search():
    ctx = context(SOFTMAX.read_text(), "softmax_forward")
    assert structural_of(ctx) == {"builtin:warp-per-row", "builtin:online-softmax"}
    ctx.screen = ByGenerator({"builtin:warp-per-row": 1.4, "builtin:online-softmax": 0.2})
    notes = []
    ctx.note = notes.append
    gen = BuiltinGenerator(budget=8, seconds=5)
    first = gen.propose(ctx, 4)
    assert [p.generator for p in first] == ["builtin:online-softmax"]  # the loser holds no slot
    assert any("1 slower than the original dropped" in n and "5.00x" in n for n in notes), notes
    later = context(SOFTMAX.read_text(), "softmax_forward", round_=1)
    later.screen = ctx.screen
    assert "builtin:warp-per-row" not in {p.generator for p in gen.propose(later, 8)}  # nor later


def test_a_structural_rewrite_the_screen_cannot_time_goes_after_those_it_can():
    ctx = context(SOFTMAX.read_text(), "softmax_forward")
    ctx.screen = ByGenerator({"builtin:online-softmax": None, "builtin:warp-per-row": 0.6})
    assert [p.generator for p in BuiltinGenerator(budget=8, seconds=5).propose(ctx, 4)] == \
        ["builtin:warp-per-row", "builtin:online-softmax"]


def test_when_every_structural_rewrite_loses_round_0_tunes_instead():
    ctx = context(SOFTMAX.read_text(), "softmax_forward")
    ctx.screen = ByGenerator({"builtin:online-softmax": 1.3, "builtin:warp-per-row": 1.2})
    first = BuiltinGenerator(budget=8, seconds=5).propose(ctx, 4)
    assert first and not {p.generator for p in first} & structural_of(ctx), [p.generator for p in first]
    assert all(p.generator.startswith("builtin:block ") for p in first)  # tuned launch shapes


def test_without_a_screen_round_0_keeps_the_structural_rewrites_as_they_come():
    ctx = context(SOFTMAX.read_text(), "softmax_forward")
    assert {p.generator for p in BuiltinGenerator().propose(ctx, 4)} == structural_of(ctx)


@contextlib.contextmanager
def model_on_softmax(monkeypatch):
    """The model's generator against a stand-in endpoint that answers with the naive softmax."""
    from fsr_lsp.search.config import LLMConfig
    from fsr_lsp.search.generators.llm import LLMGenerator

    from ..support.fake_llm import FakeLLM, answer

    monkeypatch.setenv("FSR_TEST_KEY", "unused-0123456789")
    source = SOFTMAX.read_text()
    code = source[source.index("__global__"):]
    with FakeLLM([answer(f"```cuda\n{code}```")]) as llm:
        yield LLMGenerator(LLMConfig(base_url=llm.base_url, model="m", api_key_env="FSR_TEST_KEY", timeout=5)), llm


def test_the_models_first_round_takes_fsrs_structural_rewrites_as_the_screen_ranks_them(monkeypatch):
    """With a model, round 0 is fsr's own rewrites, ranked and weeded as the tuner's are; when
    every one loses on this GPU the model is asked at once."""
    source = SOFTMAX.read_text()
    with model_on_softmax(monkeypatch) as (gen, llm):
        ctx = context(source, "softmax_forward")
        ctx.screen = ByGenerator({"builtin:warp-per-row": 1.4, "builtin:online-softmax": 0.3})
        assert [p.generator for p in gen.propose(ctx, 4)] == ["builtin:online-softmax"] and not llm.requests
        ctx = context(source, "softmax_forward")
        ctx.screen = ByGenerator({"builtin:warp-per-row": 1.4, "builtin:online-softmax": 1.2})
        asked = gen.propose(ctx, 1)
        assert [p.generator for p in asked] == ["llm:m"] and len(llm.requests) == 1


def test_the_model_is_told_which_of_fsrs_rewrites_lost_at_their_screening(monkeypatch):
    """Issue 45 item 4: the model's later rounds see what was already tried, fsr's rewrites that
    screened slower than the original (never verified, so in no history) included."""
    source = SOFTMAX.read_text()
    with model_on_softmax(monkeypatch) as (gen, llm):
        ctx = context(source, "softmax_forward")
        ctx.screen = ByGenerator({"builtin:warp-per-row": 1.4, "builtin:online-softmax": 0.3})
        gen.propose(ctx, 4)
        later = context(source, "softmax_forward", round_=1)
        gen.propose(later, 1)
        prompt = str(llm.requests[-1])
        assert "one warp per row" in prompt and "screened slower than the original on this GPU" in prompt, prompt[-3000:]
        assert "online softmax" not in prompt.split("## Candidates so far")[1].split("screened slower")[0]
