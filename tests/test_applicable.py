"""Which verified rewrite goes into the file (search/applicable.py): the fastest, unless the file's
own launches cannot be changed to the launch it needs; then the fastest win that runs under them,
and a note that names the faster one. A rewrite applied under a launch it was never verified
under would make the program compute something else."""

from __future__ import annotations

from fsr_lsp.evaluator.records import EvalResult
from fsr_lsp.search.applicable import applicable
from fsr_lsp.search.outcome import SearchOutcome
from fsr_lsp.search.proposal import Proposal, Tried

from .search_helpers import example

SAXPY = example("saxpy.cu")
BODY = """__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}
"""
SAME_LAUNCH = BODY.replace("a * x[i] + y[i]", "fmaf(a, x[i], y[i])")
VARIABLES = "\nvoid host(int n) {\n    saxpy<<<blocks, threads>>>(n, 2.0f, x, y);\n}\n"
LITERALS = "\nvoid host(int n) {\n    saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);\n}\n"


def relaunched(block: int) -> str:
    spec = SAXPY[SAXPY.index("/* @fsr"):SAXPY.index("*/") + 2]
    return spec.replace('grid  = "cdiv(n, 256)"', f'grid  = "cdiv(n, {block})"').replace(
        "block = 256", f"block = {block}") + "\n" + BODY


def tried(source: str, speedup: float, confirmed: bool = True) -> Tried:
    return Tried(Proposal(source, "test"), EvalResult("saxpy", "verified", "", speedup=speedup,
                                                      speedup_ci=(speedup * 0.97, speedup * 1.03), confirmed=confirmed))


def outcome(*candidates: Tried) -> SearchOutcome:
    return SearchOutcome("improved", "", best=candidates[0], tried=list(candidates))


def test_the_fastest_is_applied_where_the_files_launches_follow_it():
    text = SAXPY + LITERALS
    fast, slow = tried(relaunched(512), 1.6), tried(SAME_LAUNCH, 1.2)
    chosen = applicable(text, text, "saxpy", None, outcome(fast, slow))
    assert chosen.tried is fast and not chosen.instead
    assert "saxpy<<<(n + 511) / 512, 512>>>" in chosen.rewrite.text


def test_a_launch_the_file_spells_with_variables_takes_the_fastest_that_keeps_it():
    text = SAXPY + VARIABLES
    fast, slow = tried(relaunched(512), 1.6), tried(SAME_LAUNCH, 1.2)
    chosen = applicable(text, text, "saxpy", None, outcome(fast, slow))
    assert chosen.tried is slow and not chosen.rewrite.notes
    assert "fmaf(a, x[i], y[i])" in chosen.rewrite.text and "saxpy<<<blocks, threads>>>" in chosen.rewrite.text
    assert "1.60x" in chosen.instead and "1.20x" in chosen.instead and "grid cdiv(n, 512), block 512" in chosen.instead


def test_no_win_under_the_files_launches_applies_the_fastest_with_what_to_change():
    text = SAXPY + VARIABLES
    fast = tried(relaunched(512), 1.6)
    not_a_win = tried(SAME_LAUNCH, 1.01)  # inside its own interval: no win
    unsanitized = tried(BODY.replace("y[i] = a", "y[i] = 1.0f * a"), 1.3, confirmed=False)
    chosen = applicable(text, text, "saxpy", None, outcome(fast, not_a_win, unsanitized))
    assert chosen.tried is fast and not chosen.instead
    assert chosen.rewrite.notes and "grid cdiv(n, 512), block 512" in chosen.rewrite.notes[0]


def test_the_searchs_minimum_gain_holds_for_what_is_applied_instead():
    text = SAXPY + VARIABLES
    fast, slow = tried(relaunched(512), 1.6), tried(SAME_LAUNCH, 1.2)
    assert applicable(text, text, "saxpy", None, outcome(fast, slow), min_gain=0.25).tried is fast
