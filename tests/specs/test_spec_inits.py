"""A buffer's init in the spec (specs/inits.py): a declared `uniform` is a contract, fsr's own
draws (`normal()`, `observed(lo, hi)`) are not, `domain(lo, hi)` bounds every value drawn; each
renders back as written, and each mistake is said at the argument."""

from __future__ import annotations

import pytest

from fsr_lsp.specs import Init, render_spec

from .test_spec import GOOD, KERNEL, parse, problem


def init_of(y: str) -> Init:
    _, r = parse(GOOD.replace('y = "inout[n] normal()"', f'y = "{y}"') + KERNEL)
    assert r.spec is not None, r.problems
    return r.spec.arg("y").init


@pytest.mark.parametrize("text, init, bounds", [
    ("inout[n] normal()", Init("normal", 0.0, 1.0), None),
    ("inout[n]", Init("normal", 0.0, 1.0), None),
    ("inout[n] normal(0, 3)", Init("normal", 0.0, 3.0, declared=True), None),
    ("inout[n] uniform(-1, 2)", Init("uniform", -1.0, 2.0, declared=True), (-1.0, 2.0)),
    ("inout[n] observed(0.5, 2.75)", Init("uniform", 0.5, 2.75), None),
    ("inout[n] normal() domain(-30, 30)", Init("normal", 0.0, 1.0, domain=(-30.0, 30.0)), (-30.0, 30.0)),
    ("inout[n] domain(0, 1e4)", Init("normal", 0.0, 1.0, domain=(0.0, 1e4)), (0.0, 1e4)),
    ("inout[n] observed(-17.5, 19) domain(-20, 20)", Init("uniform", -17.5, 19.0, domain=(-20.0, 20.0)), (-20.0, 20.0)),
    ("inout[n] uniform(-1, 1) domain(-1, 0.5)", Init("uniform", -1.0, 1.0, True, (-1.0, 0.5)), None),
])
def test_inits_parse_to_what_they_promise_and_render_back(text, init, bounds):
    if bounds is None and init.domain is not None:  # a uniform wider than its domain: an error (below)
        return
    got = init_of(text)
    assert got == init and got.bounds == bounds
    _, r = parse(GOOD.replace('y = "inout[n] normal()"', f'y = "{text}"') + KERNEL)
    again = render_spec(r.spec) + KERNEL
    _, r2 = parse(again)
    assert r2.spec == r.spec, again


@pytest.mark.parametrize("text, words", [
    ("inout[n] normal() domain(1, -1)", "domain(lo, hi) needs two numbers with lo < hi"),
    ("inout[n] normal() domain(1)", "domain(lo, hi) needs two numbers with lo < hi"),
    ("inout[n] normal() domain(a, 1)", "domain(lo, hi) needs numbers"),
    ("inout[n] uniform(-1, 1) domain(-1, 0.5)", "draws values outside domain(-1, 0.5)"),
    ("inout[n] zeros() domain(-1, 1)", "zeros inputs are not drawn"),
    ("inout[n] observed(2, 1)", "observed(lo, hi) needs two numbers with lo < hi"),
    ("inout[n] bogus()", "domain(lo,hi) after it"),
])
def test_a_bad_init_or_domain_is_said_at_its_argument(text, words):
    p, line = problem(GOOD.replace('y = "inout[n] normal()"', f'y = "{text}"') + KERNEL)
    assert words.replace("zeros inputs", "fill inputs") in p.message or words in p.message, p.message
    assert line.startswith("y = "), line


def test_a_domain_on_an_integer_is_refused():
    text = GOOD.replace('y = "inout[n] normal()"', 'y = "inout[n] domain(0, 9)"').replace("float* y", "int* y")
    p, line = problem(text + KERNEL.replace("float* y", "int* y"))
    assert "domain(...) is for float inputs" in p.message and line.startswith("y = ")


def test_a_captured_runs_float_range_is_observed_not_a_contract():
    from fsr_lsp.drafting.captured_ranges import init_from_values

    init, why = init_from_values([0.5, 1.25, 2.75], "float32", "in")
    assert init == Init("uniform", 0.5, 2.75) and init.bounds is None and "[0.5, 2.75]" in why
