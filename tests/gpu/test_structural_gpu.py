"""The built-in structural rewrite (one warp per row) verified against naive row kernels on the
GPU, through the evaluator as a search calls it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator import evaluate

from ..support.search_helpers import context
from ..search.test_structural import ROW_KERNELS
from fsr_lsp.search.generators.structural import structural_proposals

from .conftest import QUICK

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).parent.parent.parent


@pytest.mark.parametrize("path, name", ROW_KERNELS)
def test_the_warp_per_row_rewrite_is_verified_and_faster(evaluator, path, name):
    text = (ROOT / path).read_text()
    ctx = context(text, name)
    proposals = structural_proposals(ctx.kernel, ctx.spec, ctx.definition)  # a softmax's online softmax too
    assert proposals[0].generator == "builtin:warp-per-row"
    for p in proposals:
        r = evaluate(evaluator, text, name, p.source, QUICK)
        print(f"\n[structural] {path} {p.generator}: {r.status}: {r.message[:200]}")
        assert r.status == "verified", (p.generator, r.message, [(c.name, c.status, c.detail) for c in r.checks])
        assert r.speedup is not None and r.speedup > 1.5


@pytest.mark.parametrize("block", [32, 256])
def test_a_warp_per_row_under_the_programs_own_launch_is_verified_and_faster(evaluator, block):
    """The row walk a fixed launch can take (rows.py's `rows_under_launch`): each block's warps take
    its own rows in turn, at a public softmax's size (100,000 rows of 784) under its 32-thread
    block and under a 256-thread one."""
    text = (ROOT / "tests/gpu/kernels/accuracy/softmax.cu").read_text() \
        .replace('"cdiv(N, 64)"', f'"cdiv(N, {block})"').replace("block = 64", f"block = {block}") \
        .replace("bench = { N = 2048, C = 1024 }", "bench = { N = 100000, C = 784 }")
    ctx = context(text, "softmax")
    (p,) = [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, launch_fixed=True)
            if q.generator == "builtin:warp-per-row-same-launch"]
    assert p.keeps_launch
    r = evaluate(evaluator, text, "softmax", p.source, QUICK)
    print(f"\n[structural] softmax, block {block}, a warp per row under its launch: {r.status}: {r.message[:160]}")
    assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
    assert (r.speedup or 0.0) > 2.0


def test_the_tiled_family_of_a_matrix_product_is_verified_on_every_form_and_fast(evaluator):
    """Round 0's configurations of the family verified on every shape and form (alpha and beta, x
    walking C's rows, a column-major B, a column-major double product, a batch); on the 1024^3
    sgemm the best is well ahead."""
    import re

    from fsr_lsp.search.generators.structural.tiles import GENERATOR

    from ..search.test_structural_tiles import FORMS, SGEMM, SHAPES, SPEC

    small = {"sgemm_xrows.cu": "{ M = 1024, N = 768, K = 512 }", "sgemm_colmajor_b.cu": "{ M = 1000, N = 3000, K = 777 }",
             "dgemm_colmajor.cu": "{ M = 512, N = 512, K = 512 }", "sgemm_batched.cu": "{ batch = 4, M = 256, N = 256, K = 128 }"}
    cases = [(SGEMM.read_text(), "sgemm_naive")] + [(SPEC + text, "gemm") for text in SHAPES.values()]
    for file, bench in small.items():
        text = re.sub(r"bench = \{[^}]*\}", f"bench = {bench}", (FORMS / file).read_text(), count=1)
        cases.append((text, re.search(r"__global__ void (\w+)", text).group(1)))
    for text, name in cases:
        ctx = context(text, name)
        best = 0.0
        for p in [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, gpu=None) if q.generator == GENERATOR]:
            r = evaluate(evaluator, text, name, p.source, QUICK)
            print(f"\n[structural] {name} {p.note[22:90]}: {r.status}: {r.message[:160]}")
            assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
            best = max(best, r.speedup or 0.0)
        if name == "sgemm_naive":
            assert best > 3.0


def test_the_product_tiled_under_its_own_launch_is_verified_on_every_form_and_faster(evaluator):
    """The tiling a fixed launch can take (matmul/launch_tile.py): verified on every square-block
    form, and faster than the naive 1024^3 sgemm."""
    import re

    from ..search.test_structural_tiles import FORMS, SGEMM, SHAPES, SPEC

    cases = [(SGEMM.read_text(), "sgemm_naive")] + [(SPEC + text, "gemm") for text in SHAPES.values()]
    for file in ("sgemm_xrows.cu", "sgemm_colmajor_b.cu", "dgemm_colmajor.cu", "sgemm_batched.cu"):
        text = (FORMS / file).read_text()
        cases.append((text, re.search(r"__global__ void (\w+)", text).group(1)))
    tried = 0
    for text, name in cases:
        ctx = context(text, name)
        for p in [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, launch_fixed=True)
                  if q.generator == "builtin:product-tile-same-launch"]:
            tried += 1
            r = evaluate(evaluator, text, name, p.source, QUICK)
            print(f"\n[structural] {name} tiled under its launch: {r.status}: {r.message[:160]}")
            assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
            if name == "sgemm_naive":
                assert (r.speedup or 0.0) > 1.1  # 1.17x on an H200: the naive one already reads through L1
    assert tried >= 6


def test_a_tile_that_drops_the_last_k_is_caught(evaluator):
    """The defence behind the rewrite: a tiling that loads one k short is wrong."""
    from fsr_lsp.search.generators.structural.tiles import GENERATOR

    from ..search.test_structural_tiles import SGEMM

    text = SGEMM.read_text()
    ctx = context(text, "sgemm_naive")
    p = [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition) if q.generator == GENERATOR][0]
    broken = p.source.replace("k < (K);", "k < (K) - 1;")
    assert broken != p.source
    r = evaluate(evaluator, text, "sgemm_naive", broken, QUICK)
    assert r.status == "wrong", r.message


def test_the_transpose_of_several_elements_a_thread_is_verified_and_faster_than_the_one_element_tile(evaluator):
    """At 4096^2: the 32x32 and 64x64 tiles of four and eight elements a thread verified, and the
    faster of them ahead of the one-element tile fsr had."""
    import re

    from fsr_lsp.search.generators.structural.transpose_tile import transpose_tile

    text = re.sub(r"bench = \{[^}]*\}", "bench = { rows = 4096, cols = 4096 }",
                  (ROOT / "bench" / "naive_kernels" / "transpose.cu").read_text(), count=1)
    ctx = context(text, "transpose_naive")
    speed = {}
    for t in transpose_tile(ctx.kernel, ctx.spec, ctx.definition):
        r = evaluate(evaluator, text, "transpose_naive", t.launch + t.definition, QUICK)
        print(f"\n[structural] transpose {t.note[:80]}: {r.status}: {r.message[:160]}")
        assert r.status == "verified", r.message
        speed[t.note] = r.speedup or 0.0
    several = max(s for note, s in speed.items() if "elements a thread" in note)
    one = max(s for note, s in speed.items() if "elements a thread" not in note)
    assert several > one * 1.1, speed


def test_the_block_sum_rewrite_is_verified_and_faster(evaluator):
    """The naive reduction (interleaved tree, one atomic a block) and both textbook trees with a
    partial sum a block: the shuffle rewrite verified, faster on the naive one."""
    from ..search.test_structural_block_sum import HEAD, NAIVE, SPEC, TAIL, TREES

    cases = [(NAIVE.read_text(), "reduce_sum")] + [(SPEC + HEAD + tree + TAIL, "block_sums") for tree in TREES.values()]
    for text, name in cases:
        ctx = context(text, name)
        (p,) = [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition) if q.generator == "builtin:block-sum"]
        r = evaluate(evaluator, text, name, p.source, QUICK)
        print(f"\n[structural] {name} block sum: {r.status}: {r.message[:160]}")
        assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
        if name == "reduce_sum":
            assert r.speedup is not None and r.speedup > 1.2


def test_the_atomic_sum_rewrites_are_verified_faster_and_a_dropped_lane_is_caught(evaluator):
    """Every thread's atomicAdd into one address (8 M of them): the block and warp rewrites
    verified on a float sum (within the spec's tolerance: atomics round in any order) and an
    integer count (exact); the block one at least twice as fast. A warp sum whose shuffles
    start at 8 (lanes 16-31 never added) is wrong. The inputs are drawn in [0, 1): a sum of 8 M
    normal draws now and then lands near zero, where the spec's rtol of that total is less than
    float atomics' rounding (seen once: -15.56, 0.029 off), a tolerance of the test's own making."""
    from ..search.test_structural_atomic_sum import SPEC as NORMAL, SUMS

    SPEC = NORMAL.replace('x = "in[n]"', 'x = "in[n] uniform(0, 1)"')
    assert SPEC != NORMAL
    count = SPEC.replace("float* total", "int* total") + SUMS["guarded"].replace(
        "float* total", "int* total").replace("x[i]);", "x[i] > 0.5f ? 1 : 0);")
    gpu = evaluator.start()
    for label, text in (("float sum", SPEC + SUMS["guarded"]), ("int count", count)):
        ctx = context(text, "atomic_total")
        proposals = [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, gpu=gpu)
                     if q.generator.startswith("builtin:atomic-")]
        assert len(proposals) == 3  # over a grid-stride loop, a block's, a warp's
        speedups = {}
        for p in proposals:
            r = evaluate(evaluator, text, "atomic_total", p.source, QUICK)
            print(f"\n[structural] {label} {p.generator}: {r.status}: {r.message[:300]}")
            assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
            speedups[p.generator] = r.speedup
            if p.generator == "builtin:atomic-block-sum":
                assert r.speedup is not None and r.speedup > 2
        if label == "float sum":  # one wave of blocks: 32,768 atomics on one address become about a thousand
            assert speedups["builtin:atomic-grid-sum"] > speedups["builtin:atomic-block-sum"], speedups
        if label == "float sum":
            warp = next(q for q in proposals if q.generator == "builtin:atomic-warp-sum")
            broken = warp.source.replace("fsr_offset = 16;", "fsr_offset = 8;")
            assert broken != warp.source
            r = evaluate(evaluator, text, "atomic_total", broken, QUICK)
            assert r.status == "wrong", r.message


def test_the_transpose_tile_rewrites_are_verified_one_faster_and_a_wrong_tile_read_is_caught(evaluator):
    """The book's transpose (32x32 blocks, a row-major read), a column-major one through a macro
    (its read walks columns), and the naive set's (16x16): both variants verified on each, and
    the one that exchanges the strided access faster; reading the tile back at the thread's own
    place (no exchange) writes every element to the wrong place: wrong."""
    from ..search.test_structural_transpose import KERNELS, NAIVE, SPEC

    cases = [(SPEC + KERNELS["the book's"], "tr", "write"),
             (SPEC + KERNELS["a macro index, column-major, a return at the end"], "tr", "read"),
             (NAIVE.read_text(), "transpose_naive", "write")]
    for text, name, faster in cases:
        ctx = context(text, name)
        variants = {q.generator.rsplit("-", 1)[1]: q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
                    if q.generator.startswith("builtin:transpose-tile")}
        for exchanged, p in variants.items():
            r = evaluate(evaluator, text, name, p.source, QUICK)
            print(f"\n[structural] {name} transpose tile, {exchanged} exchanged: {r.status}: {r.message[:160]}")
            assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
            if exchanged == faster:
                assert r.speedup is not None and r.speedup > 1.2
    p = variants["write"]
    broken = p.source.replace("= fsr_tile[threadIdx.x][threadIdx.y];", "= fsr_tile[threadIdx.y][threadIdx.x];")
    assert broken != p.source
    r = evaluate(evaluator, cases[-1][0], "transpose_naive", broken, QUICK)
    assert r.status == "wrong", r.message


def test_an_atomic_original_with_no_tolerance_is_held_to_its_own_error_and_the_block_sum_verified(evaluator):
    """The same float sum with no rtol/atol in its spec: 8 M atomics land elsewhere each run; the
    double-precision run judges both runs of the original and the block rewrite (far more
    accurate, and itself atomic) is verified against that, not refused as 'different'."""
    from ..search.test_structural_atomic_sum import SPEC, SUMS

    text = SPEC.replace("rtol = 1e-3\natol = 1e-5\n", "") + SUMS["guarded"]
    assert "rtol" not in text
    ctx = context(text, "atomic_total")
    (block,) = [q for q in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
                if q.generator == "builtin:atomic-block-sum"]
    r = evaluate(evaluator, text, "atomic_total", block.source, QUICK)
    print(f"\n[structural] atomic float sum, no tolerance: {r.status}: {r.message[:160]}; {r.warnings}")
    assert r.status == "verified", (r.message, [(c.name, c.status, c.detail) for c in r.checks])
