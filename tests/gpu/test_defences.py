"""Each defence against a wrong-but-passing rewrite, shown failing a deliberately broken kernel."""

from __future__ import annotations

import dataclasses

import pytest

from fsr_lsp.evaluator import JobControl, evaluate
from fsr_lsp.evaluator.records import Defences
from fsr_lsp.evaluator.sanitize.sanitizer import find_sanitizer

from .conftest import QUICK, kernel_text

pytestmark = pytest.mark.gpu
VADD = kernel_text("vadd.cu")


def run(evaluator, candidate: str | None, **kwargs):
    return evaluate(evaluator, VADD, "vadd", kernel_text(candidate) if candidate else None, QUICK, **kwargs)


def failed_check(result):
    return next((c.name for c in result.checks if c.status == "fail"), None)


def details(result):
    return [(c.name, c.status, c.detail) for c in result.checks]


def test_original_alone_is_a_valid_oracle_and_is_timed(evaluator):
    r = run(evaluator, None)
    assert r.status == "verified", r.message
    assert r.original_time is not None and r.original_time.median_ms > 0
    assert r.sizes_checked == ["n=1", "n=1000", "n=65537", "n=4194304"]
    states = {c.name: c.status for c in r.checks}
    assert states["guard bands"] == "pass" and states["unmapped pages"] == "pass", r.checks
    assert states["shared memory poisoned"] == "pass", r.checks
    assert len(r.seeds) == 10 and len(set(r.seeds)) == 10  # 3 per test size, 1 at the bench size


@pytest.mark.parametrize("name", ["good_restrict.cu", "good_launch.cu"])
def test_correct_rewrites_are_verified_and_timed(evaluator, name):
    r = run(evaluator, name)
    assert r.status == "verified", r.message
    assert r.speedup is not None and r.speedup > 0.2
    assert {c.name for c in r.checks if c.status == "pass"} >= {
        "matches original", "every output written", "inputs unchanged", "repeatable", "timed runs verified",
        "chained launches", "guard bands", "shared memory poisoned", "unmapped pages"}
    assert r.speedup_ci is not None and r.speedup_ci[0] <= r.speedup <= r.speedup_ci[1]
    if name == "good_launch.cu":
        assert any("launch configuration" in w for w in r.warnings)


@pytest.mark.parametrize("name, check", [
    ("wrong_math.cu", "matches original"),
    ("skip_tail.cu", "every output written"),
    ("reads_output.cu", "matches original"),  # NaN from its NaN-poisoned output: written, but read first
    ("modifies_input.cu", "inputs unchanged"),
    ("counts_launches.cu", "timed runs verified"),
])
def test_broken_rewrites_fail_the_right_check(evaluator, name, check):
    r = run(evaluator, name)
    assert r.status == "wrong", f"{name}: {r.status}: {r.message}"
    assert failed_check(r) == check, r.checks


def test_a_kernel_that_replays_cached_outputs_is_caught(evaluator):
    r = run(evaluator, "caches_by_address.cu")
    assert r.status == "wrong", r.message
    assert failed_check(r) in ("matches original", "every output written", "timed runs verified")


def test_a_context_corrupting_fault_costs_only_the_worker(evaluator):
    r = run(evaluator, "faults.cu")
    assert r.status == "crashed", r.message
    assert "candidate" in r.message
    after = run(evaluator, "good_restrict.cu")
    assert after.status == "verified", after.message


def test_a_hang_is_killed_and_the_next_job_runs(evaluator):
    r = run(evaluator, "hangs.cu", control=JobControl(timeout=15))
    assert r.status == "timeout", r.message
    after = run(evaluator, "good_restrict.cu")
    assert after.status == "verified", after.message


@pytest.mark.skipif(find_sanitizer() is None, reason="compute-sanitizer not installed")
def test_an_out_of_bounds_read_the_values_miss_is_caught_by_two_layers(evaluator):
    r = run(evaluator, "oob_read.cu", sanitize_winner=True)
    assert r.status == "wrong", (r.message, details(r))
    assert failed_check(r) == "unmapped pages", details(r)  # where the length keeps the alignment: n=4194304
    assert "`a` ending at unmapped memory at n=4194304" in r.message
    no_pages = dataclasses.replace(QUICK, defences=Defences(unmapped_pages=False))
    r = evaluate(evaluator, VADD, "vadd", kernel_text("oob_read.cu"), no_pages, sanitize_winner=True)
    assert failed_check(r) == "sanitizer memcheck", details(r)
    detail = next(c.detail for c in r.checks if c.status == "fail")
    assert "reads up to 4 bytes past the end of `a` at n=1" in detail, detail


@pytest.mark.skipif(find_sanitizer() is None, reason="compute-sanitizer not installed")
def test_racecheck_catches_a_shared_memory_race(evaluator):
    r = run(evaluator, "shared_race.cu", sanitize_winner=True)
    assert r.status == "wrong", r.message
    assert failed_check(r) in ("sanitizer racecheck", "repeatable", "matches original", "chained launches"), details(r)


@pytest.mark.skipif(find_sanitizer() is None, reason="compute-sanitizer not installed")
def test_sanitizers_pass_a_clean_kernel(evaluator):
    r = run(evaluator, "good_restrict.cu", sanitize_winner=True)
    assert r.status == "verified", r.message
    states = {c.name: c for c in r.checks}
    assert states["sanitizer memcheck"].status == "pass", details(r)
    # No shared memory, nothing for racecheck to look at: it is not run, and says why.
    racecheck = states["sanitizer racecheck"]
    assert racecheck.status == "skip" and "uses no shared memory" in racecheck.detail, details(r)


def test_an_original_that_leaves_outputs_unwritten_is_a_spec_error(evaluator):
    half = VADD.replace("if (i < n) c[i]", "if (i < n / 2) c[i]")
    r = evaluate(evaluator, half, "vadd", None, QUICK)
    assert r.status == "spec_error", r.message
    assert "does not write every element of c" in r.message


def test_ref_is_a_second_oracle_and_a_baseline(evaluator):
    # TOML: a [ref] table after [args].
    with_ref = VADD.replace('c = "out[n]"', 'c = "out[n]"\n[ref]\nc = "a + b"')
    r = evaluate(evaluator, with_ref, "vadd", kernel_text("good_restrict.cu"), QUICK)
    assert r.status == "verified", r.message
    assert {c.name: c.status for c in r.checks}["candidate matches ref"] == "pass"
    assert r.ref_time is not None and r.speedup_vs_ref is not None
    wrong_ref = with_ref.replace('c = "a + b"', 'c = "a - b"')
    r = evaluate(evaluator, wrong_ref, "vadd", kernel_text("good_restrict.cu"), QUICK)
    assert r.status == "verified"
    assert any("disagrees with ref.c" in w for w in r.warnings)
