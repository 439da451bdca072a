"""A pointer into another parameter's buffer: just past it (`end = "end(begin)"`: a range's end,
an elementwise launcher's tail after its packs) or at its start (`y = "same(x)"`: a program that
passes one pointer twice, in place). Parsed and written back, and passed at every size as that
address (CPU test double); drafted from captures in tests/capture/test_capture.py."""

from __future__ import annotations

import pytest

from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import AtArg, parse_spec, render_spec

RANGE = """/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
begin = "in[n]"
end = "end(begin)"
out = "out[n]"
*/
__global__ void copy_range(const float* begin, const float* end, float* out) { }
"""


def parsed(text: str):
    src = SourceText(text)
    return parse_spec(src, find_kernel(src, "copy_range"))


def test_end_of_a_buffer_is_parsed_and_written_back():
    spec = parsed(RANGE).spec
    assert spec is not None and spec.args[1] == AtArg("end", "begin")
    assert 'end = "end(begin)"' in render_spec(spec)


@pytest.mark.parametrize("value, message", [
    ('"end(nothing)"', "nothing is no buffer parameter of copy_range (buffers: begin, out)"),
    ('"end(end)"', "end is no buffer parameter of copy_range"),
])
def test_end_of_what_is_no_buffer_is_refused_at_its_key(value, message):
    result = parsed(RANGE.replace('end = "end(begin)"', f"end = {value}"))
    assert result.spec is None
    assert any(message in p.message for p in result.problems), result.problems


pytest.importorskip("torch")

from ..support.cpu_jobs import run as verified  # noqa: E402  (the CPU test double's job, as its tests run it)


def run(candidate: str):
    return verified(RANGE, "copy_range", "copy_range", candidate)


def test_the_end_pointer_is_just_past_its_buffer_at_every_size():
    """The original copies what lies between `begin` and `end`: every output is written only if
    `end` is `begin`'s end at each size (n = 1, 1000, 4096)."""
    r = run("copy_range_fast")
    assert r.status == "verified", r.message


def test_a_rewrite_taking_the_end_for_null_is_wrong():
    r = run("copy_range_end_as_null")
    assert r.status == "wrong", r.message


def test_a_rewrite_reading_past_the_end_is_caught():
    """What lies at `end` is the canary after `begin`'s buffer, not data."""
    r = run("copy_range_one_more")
    assert r.status == "wrong", r.message
    assert "NaN canaries" in r.message, r.message


TWICE = """/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
x = "inout[n]"
y = "same(x)"
n = "n"
*/
__global__ void twice(const float* x, float* y, int n) { }
"""


def run_twice(spec: str, candidate: str):
    return verified(spec, "twice", "twice", candidate)


def test_a_const_buffer_another_parameter_aliases_may_be_inout():
    spec = parse_spec(SourceText(TWICE), find_kernel(SourceText(TWICE), "twice")).spec
    assert spec is not None and spec.args[1] == AtArg("y", "x", "start")
    assert 'y = "same(x)"' in render_spec(spec)
    alone = TWICE.replace('y = "same(x)"', 'y = "out[n]"')
    result = parse_spec(SourceText(alone), find_kernel(SourceText(alone), "twice"))
    assert result.spec is None and any("points to const data" in p.message for p in result.problems)


def test_in_place_a_rewrite_right_only_for_buffers_apart_is_wrong():
    """Cleared before it is read: with x and y apart the rewrite is right (verified), with y the
    same pointer as x, as the program calls it, it writes zeros (wrong)."""
    apart = TWICE.replace('x = "inout[n]"', 'x = "in[n]"').replace('y = "same(x)"', 'y = "out[n]"') \
        .replace("const float* x", "float* x")
    assert run_twice(apart, "twice_clears_first").status == "verified"
    r = run_twice(TWICE, "twice_clears_first")
    assert r.status == "wrong", r.message
    assert "x:" in r.message, r.message


def test_a_pointer_into_another_buffer_and_a_variables_buffer_cross_to_the_worker():
    """Jobs reach the worker process (and Ray) as JSON: `at` and `symbol` come back as they left."""
    from fsr_lsp.evaluator.records import ArgPlan
    from fsr_lsp.evaluator.worker.serde import from_json, to_json

    for plan in (ArgPlan(name="end", kind="scalar", dtype="uint64", value=0, at=("begin", "end")),
                 ArgPlan(name="dResult", kind="buffer", dtype="float32", length=1, direction="inout", hidden=True,
                         symbol="__fsr_dv_dResult")):
        assert from_json(ArgPlan, to_json(plan)) == plan
