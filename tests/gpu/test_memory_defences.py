"""The defences of the verification and out-of-bounds issues on the GPU, each shown failing a
deliberately broken kernel with the argument and size named, and correct rewrites (float4 and
int4, with an alignment check or relying on cudaMalloc's) passing every layer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fsr_lsp.evaluator import evaluate
from fsr_lsp.evaluator.records import Defences
from fsr_lsp.evaluator.sanitize.sanitizer import find_sanitizer

from .conftest import QUICK, kernel_text

pytestmark = pytest.mark.gpu
VADD = kernel_text("vadd.cu")
REWRITES = Path(__file__).parent.parent / "data" / "rewrites"
EXAMPLES = Path(__file__).parent.parent.parent / "examples"
needs_sanitizer = pytest.mark.skipif(find_sanitizer() is None, reason="compute-sanitizer not installed")


def states(r):
    return {c.name: c.status for c in r.checks}


def failed(r):
    return next((c for c in r.checks if c.status == "fail"), None)


def show(r):
    return [(c.name, c.status, c.detail) for c in r.checks]


# ------------------------------------------------------------------ issue 9: hacks that still passed


def test_stale_output_reuse_fails_the_chained_launches(evaluator):
    saxpy = (EXAMPLES / "saxpy.cu").read_text()
    r = evaluate(evaluator, saxpy, "saxpy", kernel_text("saxpy_stale_reuse.cu"), QUICK)
    assert r.status == "wrong", (r.message, show(r))
    assert failed(r).name == "chained launches", show(r)
    assert "after launch 2 of 3" in r.message
    single = dataclasses.replace(QUICK, defences=Defences(chained_launches=1))
    control = evaluate(evaluator, saxpy, "saxpy", kernel_text("saxpy_stale_reuse.cu"), single)
    # Informational: the single-launch checks see it only when an input happens to equal what a
    # thread wrote on an earlier timed run (float coincidences over millions of elements).
    print(f"\n[control] one launch per check: {control.status}: {control.message}")


def test_stale_shared_memory_fails_once_shared_memory_is_poisoned(evaluator):
    source = (REWRITES / "block_sum.cu").read_text()
    r = evaluate(evaluator, source, "block_sum", kernel_text("block_sum_stale_shared.cu"), QUICK)
    assert r.status == "wrong", (r.message, show(r))
    assert failed(r).name == "matches original" and "got nan" in r.message and "shared memory" in r.message, show(r)
    control = evaluate(evaluator, source, "block_sum", kernel_text("block_sum_stale_shared.cu"),
                       dataclasses.replace(QUICK, defences=Defences(poison_shared=False)))
    print(f"\n[control] shared memory not poisoned: {control.status}: {control.message}")


def test_the_original_as_its_own_candidate_is_unchanged_or_no_win(evaluator):
    definition = VADD[VADD.index("__global__"):]
    r = evaluate(evaluator, VADD, "vadd", "// same\n" + definition, QUICK)
    assert r.status == "unchanged", r.message
    timed = evaluate(evaluator, VADD, "vadd", definition, dataclasses.replace(QUICK, skip_unchanged=False))
    assert timed.status == "verified", timed.message
    low, high = timed.speedup_ci
    print(f"\n[self] {timed.speedup:.4f}x, interval {low:.4f}-{high:.4f}")
    assert low <= timed.speedup <= high
    assert not timed.is_win(0.02)


def test_an_accumulator_declared_zeros_is_verified_across_chained_launches(evaluator):
    source = (REWRITES / "histogram.cu").read_text()
    r = evaluate(evaluator, source, "histogram", (REWRITES / "histogram" / "shared_privatised.cu").read_text(), QUICK)
    assert r.status == "verified", (r.message, show(r))
    assert states(r)["chained launches"] == "pass"


# ------------------------------------------------------------------ issue 15: out of bounds at every size


@needs_sanitizer
def test_an_over_read_only_at_mid_sizes_is_caught_by_memcheck_at_that_size(evaluator):
    r = evaluate(evaluator, VADD, "vadd", kernel_text("oob_read_mid.cu"), QUICK, sanitize_winner=True)
    assert r.status == "wrong", (r.message, show(r))
    check = failed(r)
    assert check.name == "sanitizer memcheck", show(r)
    assert "reads up to 4 bytes past the end of `a` at n=65537" in check.detail, check.detail


def test_a_write_into_allocator_padding_hits_the_guard_band(evaluator):
    r = evaluate(evaluator, VADD, "vadd", kernel_text("overwrite_padding.cu"), QUICK)
    assert r.status == "wrong", (r.message, show(r))
    assert failed(r).name == "guard bands", show(r)
    assert "writes up to 4 bytes past the end of `c` at n=1" in r.message


def test_a_read_before_the_start_faults_against_unmapped_pages_and_names_the_buffer(evaluator):
    r = evaluate(evaluator, VADD, "vadd", kernel_text("read_before_start.cu"), QUICK)
    assert r.status == "wrong", (r.message, show(r))
    assert failed(r).name == "unmapped pages", show(r)
    assert "`a` starting at unmapped memory at n=1" in r.message and "before the start of `a`" in r.message
    after = evaluate(evaluator, VADD, "vadd", kernel_text("good_restrict.cu"), QUICK)
    assert after.status == "verified", after.message  # the worker came back


def test_a_2d_pitch_over_read_on_non_multiple_widths_is_caught_with_the_size(evaluator):
    source = kernel_text("rowsum.cu")
    r = evaluate(evaluator, source, "rowsum", kernel_text("rowsum_pitch_overread.cu"), QUICK)
    assert r.status == "wrong", (r.message, show(r))
    assert failed(r).name == "unmapped pages", show(r)
    assert "past the end of `in`" in r.message and "W=1001, H=64" in r.message


@needs_sanitizer
def test_the_pitch_over_read_is_named_by_memcheck_too(evaluator):
    source = kernel_text("rowsum.cu")
    no_pages = dataclasses.replace(QUICK, defences=Defences(unmapped_pages=False))
    r = evaluate(evaluator, source, "rowsum", kernel_text("rowsum_pitch_overread.cu"), no_pages, sanitize_winner=True)
    assert r.status == "wrong", (r.message, show(r))
    # memcheck stops the kernel at its first bad access: the first size that over-reads is named
    # (the pitch of 128 for W=100 reads 28 floats past the end of the last row).
    assert failed(r).detail == "reads up to 112 bytes past the end of `in` at W=100,H=5", failed(r).detail


def test_an_original_whose_spec_length_is_too_short_is_a_spec_problem_on_that_argument(evaluator):
    short = VADD.replace('c = "out[n]"', 'c = "out[n - 1]"').replace("tests = [ { n = 1 }, ", "tests = [ ")
    r = evaluate(evaluator, short, "vadd", None, QUICK)
    assert r.status == "spec_error", r.message
    assert "past the end of `c`" in r.message and "the spec's length for `c` is too small" in r.message


CORRECT = [("vadd", "float4_aligned_helper.cu"), ("vadd", "float4_checked_pragma.cu"), ("bxor", "int4_aligned.cu")]


@pytest.mark.parametrize("original, rewrite", CORRECT)
def test_correct_vectorised_rewrites_pass_every_layer(evaluator, original, rewrite):
    source = (REWRITES / f"{original}.cu").read_text()
    r = evaluate(evaluator, source, original, (REWRITES / original / rewrite).read_text(), QUICK,
                 sanitize_winner=find_sanitizer() is not None)
    assert r.status == "verified", (r.message, show(r))
    s = states(r)
    assert s["guard bands"] == "pass" and s["unmapped pages"] == "pass" and s["chained launches"] == "pass", show(r)
    if find_sanitizer() is not None:
        assert s["sanitizer memcheck"] == "pass", show(r)
