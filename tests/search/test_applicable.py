"""Which verified rewrite goes into the file (search/applicable.py): the fastest, unless the file's
own launches cannot be changed to the launch it needs; then the fastest win that runs under them,
and a note that names the faster one; where none does, nothing. A rewrite applied under a launch it
was never verified under would make the program compute something else (a public matrix product,
so applied, failed its own check; another ran 2.5x slower and wrong)."""

from __future__ import annotations

import pytest

from fsr_lsp.evaluator.records import EvalResult
from fsr_lsp.search.apply import ApplyError
from fsr_lsp.search.applicable import applicable
from fsr_lsp.search.outcome import SearchOutcome
from fsr_lsp.search.proposal import Proposal, Tried

from ..support.search_helpers import TRANSPOSE_SPEC, example

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


def test_no_win_under_the_files_launches_applies_nothing_and_says_what_to_change():
    text = SAXPY + VARIABLES
    fast = tried(relaunched(512), 1.6)
    not_a_win = tried(SAME_LAUNCH, 1.01)  # inside its own interval: no win
    unsanitized = tried(BODY.replace("y[i] = a", "y[i] = 1.0f * a"), 1.3, confirmed=False)
    with pytest.raises(ApplyError) as refused:
        applicable(text, text, "saxpy", None, outcome(fast, not_a_win, unsanitized))
    said = str(refused.value)
    assert "left as it is" in said and "grid cdiv(n, 512), block 512" in said and "1.60x" in said
    assert "fsr history FILE -k saxpy --source" in said


def test_the_searchs_minimum_gain_holds_for_what_is_applied_instead():
    text = SAXPY + VARIABLES
    fast, slow = tried(relaunched(512), 1.6), tried(SAME_LAUNCH, 1.2)
    assert applicable(text, text, "saxpy", None, outcome(fast, slow), min_gain=0.1).tried is slow
    with pytest.raises(ApplyError):  # 1.2x does not clear a 25% minimum gain: nothing goes in
        applicable(text, text, "saxpy", None, outcome(fast, slow), min_gain=0.25)


DRAFT = """/* @fsr
bench = { n = 1048576 }
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
a = 2.0
x = "in[n]"
y = "inout[n]"
*/
"""
UNSPECCED = BODY + "\nvoid host(int n) {\n    saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);\n}\n"


def test_a_kernel_launched_from_another_file_keeps_its_launch():
    """Its spec drafted from a launch in main.cu: a rewrite needing another block would run under
    main.cu's launch, which fsr does not edit."""
    text = BODY
    searched = DRAFT + BODY
    fast = tried('/* @fsr\ngrid = "cdiv(n, 512)"\nblock = 512\n*/\n' + BODY, 1.6)
    slow = tried(SAME_LAUNCH, 1.2)
    chosen = applicable(text, searched, "saxpy", DRAFT, outcome(fast, slow), launched_from="main.cu:40")
    assert chosen.tried is slow and "main.cu:40" in chosen.instead
    with pytest.raises(ApplyError, match="main.cu:40"):
        applicable(text, searched, "saxpy", DRAFT, outcome(fast), launched_from="main.cu:40")
    # the same draft from a launch in this very file, spelled with literals: the launch follows the rewrite
    placed = UNSPECCED
    chosen = applicable(placed, DRAFT + placed, "saxpy", DRAFT, outcome(fast, slow), launched_from="this.cu:5")
    assert chosen.tried is fast and "saxpy<<<(n + 511) / 512, 512>>>" in chosen.rewrite.text


TYPEDEF = """#ifdef USE_DP
    typedef double real;
#else
    typedef float real;
#endif

__global__ void transpose1(const real *A, real *B, const int N)
{
    const int nx = blockIdx.x * blockDim.x + threadIdx.x;
    const int ny = blockIdx.y * blockDim.y + threadIdx.y;
    if (nx < N && ny < N) B[nx * N + ny] = A[ny * N + nx];
}

void timing(const real *d_A, real *d_B, const int N)
{
    const int grid_size_x = (N + 32 - 1) / 32;
    const dim3 block_size(32, 32);
    const dim3 grid_size(grid_size_x, grid_size_x);
    transpose1<<<grid_size, block_size>>>(d_A, d_B, N);
}
"""
TRANSPOSE_DRAFT = TRANSPOSE_SPEC


def test_a_rewrite_of_a_kernel_typed_through_a_typedef_is_read_as_the_file_types_it():
    """A public transpose (`real` a typedef of the file): its rows rewrite's own @fsr block was
    refused as not parsing, so a verified 6.2x win could not be applied at all."""
    definition = TYPEDEF[TYPEDEF.index("__global__"):TYPEDEF.index("void timing")]
    rows = tried('/* @fsr\ngrid = ["cdiv(N, 64)", "cdiv(N, 64)"]\nblock = [64, 8]\n*/\n' + definition, 6.2)
    tile = tried(definition.replace("B[nx * N + ny] = A[ny * N + nx];", "B[nx * N + ny] = A[ny * N + nx] * 1;"), 3.1)
    placed = TYPEDEF.replace("__global__", TRANSPOSE_DRAFT + "__global__", 1)
    chosen = applicable(TYPEDEF, placed, "transpose1", TRANSPOSE_DRAFT, outcome(rows, tile), launched_from="x.cu:18")
    assert chosen.tried is tile and "block 64 x 8" in chosen.instead and "line " in chosen.instead
