"""A program whose launch cannot follow a rewrite's new one (its block spelled with variables, or
the launch in another file): only a rewrite under that launch can be applied, so the search
verifies the fastest such rewrite in round 0 too, not only the fastest rewrite of all. Seen on a
public transpose: both verified rewrites needed a 64x8 block its `<<<grid_size, block_size>>>`
could not be changed to, and the 32x32 tile that keeps its launch was never verified."""

from __future__ import annotations

from pathlib import Path

from fsr_lsp.kernels import find_kernel
from fsr_lsp.search.apply import launch_follows
from fsr_lsp.search.generators.tuner import BuiltinGenerator
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.search_helpers import TRANSPOSE_SPEC, context, example
from .test_builtin import ByGenerator

TRANSPOSE = TRANSPOSE_SPEC + """__global__ void transpose1(const float *A, float *B, const int N)
{
    const int nx = blockIdx.x * blockDim.x + threadIdx.x;
    const int ny = blockIdx.y * blockDim.y + threadIdx.y;
    if (nx < N && ny < N) B[nx * N + ny] = A[ny * N + nx];
}
"""
VARIABLES = "\nvoid timing(const float *a, float *b, int N) {\n    transpose1<<<grid_size, block_size>>>(a, b, N);\n}\n"
LITERALS = ("\nvoid timing(const float *a, float *b, int N) {\n"
            "    transpose1<<<dim3((N + 32 - 1) / 32, (N + 32 - 1) / 32), dim3(32, 32)>>>(a, b, N);\n}\n")
SAXPY = example("saxpy.cu")
ROWS = {"builtin:transpose-rows-write": 0.2, "builtin:transpose-rows-read": 0.25,
        "builtin:transpose-tile-write": 0.4, "builtin:transpose-tile-read": 0.45}


def spec_of(text: str):
    return parse_spec(SourceText(text), find_kernel(text, "transpose1")).spec


def test_a_launch_with_literals_follows_and_one_with_variables_or_elsewhere_does_not():
    saxpy = SAXPY + "\nvoid host(int n) {\n    saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);\n}\n"
    assert launch_follows(saxpy, "saxpy", parse_spec(SourceText(saxpy), find_kernel(saxpy, "saxpy")).spec, True)
    assert not launch_follows(TRANSPOSE + VARIABLES, "transpose1", spec_of(TRANSPOSE), launched_elsewhere=False)
    # a square block spelled with literals: which 32 is which side, launch_edits cannot tell
    assert not launch_follows(TRANSPOSE + LITERALS, "transpose1", spec_of(TRANSPOSE), launched_elsewhere=False)
    # no launch in the file: drafted or captured from another file's, it cannot follow
    assert not launch_follows(TRANSPOSE, "transpose1", spec_of(TRANSPOSE), launched_elsewhere=True)
    # nor known anywhere (a library's kernel): whoever launches it reads the block the rewrite states
    assert launch_follows(TRANSPOSE, "transpose1", spec_of(TRANSPOSE), launched_elsewhere=False)


def round_0(launch_fixed: bool) -> list[str]:
    ctx = context(TRANSPOSE, "transpose1")
    ctx.screen = ByGenerator(ROWS)
    ctx.launch_fixed = launch_fixed
    return [p.generator for p in BuiltinGenerator(budget=8, seconds=5).propose(ctx, 8)]


def test_a_fixed_launch_has_its_fastest_rewrite_under_that_launch_verified_in_round_0():
    free = round_0(launch_fixed=False)
    assert free and all("rows" in g for g in free), free  # the fastest screened only
    fixed = round_0(launch_fixed=True)
    assert fixed[:len(free)] == free and fixed[len(free):] == ["builtin:transpose-tile-write"], fixed


def test_optimize_tells_the_search_whether_the_programs_launch_is_fixed(tmp_path):
    from fsr_lsp.settings import Settings
    from fsr_lsp.workflows.optimize import KernelJob

    def run(text: str) -> KernelJob:
        return KernelJob(text, tmp_path / "k.cu", "transpose1", tmp_path, Settings())

    assert run(TRANSPOSE + VARIABLES).launch_fixed()
    assert not run(TRANSPOSE).launch_fixed()  # the user's own block, no launch known: the block is the contract


SGEMM = (Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "sgemm.cu").read_text()


def test_a_naive_product_has_a_tiling_under_its_own_square_launch_and_none_under_another():
    """`dim3 threads(16, 16)` set where fsr cannot rewrite it (public matrix products, 16x16 and
    32x32): the tiled family's every configuration needs its own block, so without this rewrite
    nothing could be applied to them at all."""
    from fsr_lsp.search.generators.structural.matmul.launch_tile import launch_tile

    ctx = context(SGEMM, "sgemm_naive")
    tiled = launch_tile(ctx.kernel, ctx.spec, ctx.definition)
    assert tiled is not None and tiled.side == 16 and "@fsr" not in tiled.definition
    assert "__shared__ float fsr_first[16][16 + 1]" in tiled.definition and tiled.definition.count("__syncthreads") == 2
    oblong = SGEMM.replace("block = [16, 16]", "block = [32, 8]").replace("cdiv(N, 16)", "cdiv(N, 32)").replace(
        "cdiv(M, 16)", "cdiv(M, 8)")
    ctx = context(oblong, "sgemm_naive")
    assert launch_tile(ctx.kernel, ctx.spec, ctx.definition) is None
    fixed = context(SGEMM, "sgemm_naive")
    fixed.screen = ByGenerator({"builtin:tiled-product": 0.2, "builtin:product-tile-same-launch": 0.5})
    fixed.launch_fixed = True
    chosen = [p.generator for p in BuiltinGenerator(budget=8, seconds=5).propose(fixed, 8)]
    assert "builtin:product-tile-same-launch" in chosen, chosen
    free = context(SGEMM, "sgemm_naive")
    free.screen = fixed.screen
    assert "builtin:product-tile-same-launch" not in [p.generator for p in BuiltinGenerator(budget=8, seconds=5).propose(free, 8)]


def test_under_a_fixed_launch_a_rewrite_that_keeps_it_is_never_screened_out():
    """A screen is a few runs: under a fixed launch the one rewrite that can be applied is
    verified even where it screened slower than the original, and its full timing decides."""
    ctx = context(SGEMM, "sgemm_naive")
    ctx.screen = ByGenerator({"builtin:tiled-product": 0.2, "builtin:product-tile-same-launch": 1.3})
    assert "builtin:product-tile-same-launch" not in [p.generator for p in BuiltinGenerator(budget=8, seconds=5).propose(ctx, 8)]
    fixed = context(SGEMM, "sgemm_naive")
    fixed.screen = ctx.screen
    fixed.launch_fixed = True
    assert "builtin:product-tile-same-launch" in [p.generator for p in BuiltinGenerator(budget=8, seconds=5).propose(fixed, 8)]


def test_a_row_walk_under_a_fixed_launch_gets_a_warp_per_row_that_keeps_the_launch_and_applies_as_is():
    """HeCBench's softmax: one thread per row, launched `<<<grids, blocks>>>` with a 32-thread block.
    Every warp-per-row win needed a new grid the program's launch could not take, so nothing was
    applied; under its own launch each block's warps take the block's rows in turn."""
    from fsr_lsp.search.apply import rewrite_file

    text = (Path(__file__).parent.parent / "gpu/kernels/accuracy/softmax.cu").read_text() \
        .replace('"cdiv(N, 64)"', '"cdiv(N, 32)"').replace("block = 64", "block = 32") \
        + "\nvoid run(float* out, const float* in, int N, int C) {\n" \
          "    dim3 grids((N + 31) / 32), blocks(32);\n    softmax<<<grids, blocks>>>(out, in, N, C);\n}\n"
    spec = parse_spec(SourceText(text), find_kernel(text, "softmax")).spec
    assert not launch_follows(text, "softmax", spec, launched_elsewhere=False)
    ctx = context(text, "softmax")
    ctx.screen = ByGenerator({"builtin:warp-per-row": 0.1, "builtin:online-softmax": 0.12,
                              "builtin:warp-per-row-same-launch": 0.2})
    ctx.launch_fixed = True
    chosen = {p.generator: p for p in BuiltinGenerator(budget=8, seconds=5).propose(ctx, 8)}
    assert "builtin:warp-per-row-same-launch" in chosen, list(chosen)
    rewrite = rewrite_file(text, "softmax", chosen["builtin:warp-per-row-same-launch"].source)
    assert not rewrite.notes and not rewrite.launch_changed
    assert "softmax<<<grids, blocks>>>" in rewrite.text and "threadIdx.x / 32" in rewrite.text
    ctx.launch_fixed = False  # a launch that can follow: the faster rewrite with its own launch, not the variant
    assert "builtin:warp-per-row-same-launch" not in [p.generator for p in BuiltinGenerator(budget=8, seconds=5).propose(ctx, 8)]


def test_no_warp_per_row_under_a_launch_whose_block_is_not_whole_warps():
    from fsr_lsp.search.generators.structural.rows import rows_under_launch

    text = (Path(__file__).parent.parent / "gpu/kernels/accuracy/softmax.cu").read_text()
    ctx = context(text, "softmax")
    assert rows_under_launch(ctx.kernel, ctx.spec, ctx.definition) is not None  # 64 threads: two warps
    odd = context(text.replace('"cdiv(N, 64)"', '"cdiv(N, 48)"').replace("block = 64", "block = 48"), "softmax")
    assert rows_under_launch(odd.kernel, odd.spec, odd.definition) is None  # a warp would straddle two blocks' rows


def test_no_warp_per_row_under_a_launch_where_the_row_index_declares_more():
    """`int i = ..., k = C;` in a loop's header would leave `k` undeclared past it."""
    from fsr_lsp.search.generators.structural.rows import rows_under_launch

    text = (Path(__file__).parent.parent / "gpu/kernels/accuracy/softmax.cu").read_text() \
        .replace("int i = blockIdx.x * blockDim.x + threadIdx.x;", "int i = blockIdx.x * blockDim.x + threadIdx.x, k = C;") \
        .replace("j < C;", "j < k;")
    ctx = context(text, "softmax")
    assert "k = C" in ctx.definition
    assert rows_under_launch(ctx.kernel, ctx.spec, ctx.definition) is None
