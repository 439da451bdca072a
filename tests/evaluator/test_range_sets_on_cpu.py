"""'Verified' beyond the inputs of one run (issue 43), on the CPU test double: rewrites that drop
a numerically necessary step are right on the spec's narrow noise and wrong where callers pass
more (a softmax or log-sum-exp without its max, a variance as E[x^2] - mean^2, tanh and sigmoid
built from exp(x), a long sum kept in half precision). The sets that probe the range
(evaluator/gpu/input_sets.py) refuse each, and the verdict names the set; their correct
counterparts (an online softmax, Welford, an exp that cannot overflow, float partial sums) are
verified. The kernels are in tests/gpu/kernels/ranges/, where tests/gpu/test_range_sets_gpu.py
runs the same cases on a GPU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("torch")

from ..support.cuda_on_cpu import cxx, evaluate_on_cpu  # noqa: E402

pytestmark = pytest.mark.skipif(cxx() is None and os.environ.get("FSR_REQUIRE_NVCC") != "1",
                                reason="no C++ compiler (g++) to build kernels for the CPU")

HERE = Path(__file__).parent.parent / "gpu" / "kernels" / "ranges"
# the naive softmax is the accuracy suite's (its max subtracted; inputs normal(0, 2), no edges)
ACCURACY_SOFTMAX = HERE.parent / "accuracy" / "softmax.cu"


def original(kernel: str) -> str:
    """The original each folder of rewrites is judged against."""
    return (ACCURACY_SOFTMAX if kernel == "softmax" else HERE / f"{kernel}.cu").read_text()

CASES = sorted((p.parent.name, p.name) for p in HERE.glob("*/*.cu"))
# the set each broken rewrite is refused on (the first that tells it apart), and what decided
REFUSED_ON = {
    ("softmax", "bad_no_max.cu"): ("inputs scaled x", "NaN where the original is finite"),
    ("logsumexp", "bad_no_max.cu"): ("inputs scaled x100", "inf where the original is finite"),
    ("variance", "bad_one_pass.cu"): ("inputs with a large common offset", "of its scale from the original run in double"),
    ("tanh_map", "bad_from_exp.cu"): ("inputs scaled x", "NaN where the original is finite"),
    ("sigmoid_map", "bad_exp_over_one_plus_exp.cu"): ("inputs scaled x100", "NaN where the original is finite"),
    ("rowsum_half", "bad_half_accumulator.cu"): ("", ""),  # wrong on any long sum: the spec's own inputs see it
}


def test_every_broken_rewrite_has_its_expected_set():
    assert {c for c in CASES if c[1].startswith("bad_")} == set(REFUSED_ON)


@pytest.mark.parametrize("kernel, candidate", CASES)
def test_numerically_broken_rewrites_are_refused_for_their_range_set_and_correct_ones_verified(kernel, candidate):
    source = original(kernel)
    r = evaluate_on_cpu(source, kernel, (HERE / kernel / candidate).read_text())
    checks = {c.name: (c.status, c.detail) for c in r.checks}
    if candidate.startswith("good_"):
        assert r.status == "verified", (r.message, checks)
        assert checks["input range"][0] == "pass" and "judged" in checks["input range"][1], checks
        assert r.range_sets and "x100" in r.range_sets, r.range_sets
        return
    assert r.status == "wrong", (r.message, checks)
    where, what = REFUSED_ON[(kernel, candidate)]
    if where:
        assert checks["input range"][0] == "fail", checks
        assert r.message.startswith(f"wrong on {where}") and what in r.message, r.message
        assert r.mismatch is not None and r.mismatch.inputs.startswith(where)


def test_without_the_range_sets_the_broken_rewrites_pass_as_they_did():
    """What the sets add: on the spec's own inputs these are 'verified' (the hole they close)."""
    for kernel, candidate in [("softmax", "bad_no_max.cu"), ("variance", "bad_one_pass.cu"),
                              ("sigmoid_map", "bad_exp_over_one_plus_exp.cu")]:
        source = original(kernel)
        r = evaluate_on_cpu(source, kernel, (HERE / kernel / candidate).read_text(), ranges=False)
        assert r.status == "verified", (kernel, r.message)


def _short_rows(source: str) -> str:
    return source.replace("{ N = 4, C = 50257 }, ", "")


def test_a_declared_uniform_is_a_contract_its_edges_stressed_never_passed():
    """uniform(-20, 20) declared: logits never pass 20, so the softmax without its max is right
    for every caller the spec admits; the sets stay inside (x100 is all edges there). On rows
    of 1,000 at most: over 50,257 equal logits of 15 its sum of exp(15)s is 1.5e-4 off (8,000
    times the original's error), which the constant set rightly refuses."""
    source = _short_rows(original("softmax")).replace('inp = "in[N * C] normal(0, 2)"',
                                                      'inp = "in[N * C] uniform(-20, 20)"')
    r = evaluate_on_cpu(source, "softmax", (HERE / "softmax" / "bad_no_max.cu").read_text())
    assert r.status == "verified", r.message
    assert "x100" in r.range_sets and "x10^4" not in r.range_sets, r.range_sets


def test_a_declared_domain_narrows_what_is_probed_and_what_is_drawn():
    source = _short_rows(original("softmax")).replace('inp = "in[N * C] normal(0, 2)"',
                                                      'inp = "in[N * C] normal() domain(-30, 30)"')
    r = evaluate_on_cpu(source, "softmax", (HERE / "softmax" / "bad_no_max.cu").read_text())
    assert r.status == "verified", r.message
    wider = source.replace("domain(-30, 30)", "domain(-100, 100)")
    r = evaluate_on_cpu(wider, "softmax", (HERE / "softmax" / "bad_no_max.cu").read_text())
    assert r.status == "wrong" and "NaN where the original is finite" in r.message, r.message


def test_a_set_the_original_leaves_its_domain_on_is_left_out_and_said():
    """A kernel whose own output goes to inf on large inputs (exp(x) itself) takes those sets out,
    the ladder's later rungs with them, and says so."""
    source = (HERE / "tanh_map.cu").read_text().replace("tanhf(x[i])", "expf(x[i])")
    candidate = "__global__ void tanh_map(float* out, const float* x, int n)\n{\n" \
                "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = exp2f(x[i] * 1.44269504f);\n}\n"
    r = evaluate_on_cpu(source, "tanh_map", candidate)
    detail = next(c.detail for c in r.checks if c.name == "input range")
    assert "left out, outside the original's domain" in detail and "x100 (the original gives" in detail, detail
    assert "x10^4 (past x100)" in detail, detail
