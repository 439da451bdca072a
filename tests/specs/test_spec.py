"""The @fsr spec: valid blocks, and every kind of error reported at its place in the file."""

import pytest

from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import BufferArg, Init, ScalarArg, parse_spec, render_spec

KERNEL = "__global__ void saxpy(int n, float a, const float* x, float* y) { }\n"
GOOD = """/* @fsr
bench = { n = 16777216 }                            # sizes used for timing
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]  # extra sizes
grid  = "cdiv(n, 256)"
block = 256
smem  = 0
rtol  = 1e-5
atol  = 1e-6
[args]
x = "in[n]"
y = "inout[n] normal()"
a = 2.0
n = "n"
*/
"""


def parse(text, name="saxpy"):
    src = SourceText(text)
    return src, parse_spec(src, find_kernel(src, name))


def problem(text, name="saxpy"):
    src, result = parse(text, name)
    assert result.problems, "expected a problem"
    p = result.problems[0]
    line = src.text.splitlines()[p.span.start.line]
    return p, line


def test_the_documented_example_parses():
    _, r = parse(GOOD + KERNEL)
    assert r.problems == ()
    s = r.spec
    assert s.bench == {"n": 16777216} and len(s.tests) == 3
    assert s.grid == ("cdiv(n, 256)",) and s.block == (256,) and (s.rtol, s.atol) == (1e-5, 1e-6)
    assert s.args == (ScalarArg("n", "n"), ScalarArg("a", 2.0), BufferArg("x", "in", "n", Init("normal")),
                      BufferArg("y", "inout", "n", Init("normal", 0.0, 1.0)))


@pytest.mark.parametrize("block, between, kernel", [
    (GOOD, 'extern "C"\n', KERNEL),
    (GOOD.replace("smem  = 0", 'smem  = 0\ntemplate = "float"'), "template <typename T>\n",
     "__global__ void saxpy(int n, T a, const T* x, T* y) { }\n"),
    (GOOD, "", "__global__ void __launch_bounds__(256) saxpy(int n, float a, const float* x, float* y) { }\n"),
])
def test_attributes_and_template_lines_may_sit_between_spec_and_kernel(block, between, kernel):
    """The block above `extern "C"`, a template line or inside-the-declaration attributes is the
    kernel's, parsed as it is written (the same spec as without them)."""
    _, plain = parse(GOOD + KERNEL)
    _, r = parse(block + between + kernel)
    assert r.problems == () and r.spec is not None, r.problems
    assert (r.spec.bench, r.spec.tests, r.spec.grid, r.spec.block, r.spec.args) == \
        (plain.spec.bench, plain.spec.tests, plain.spec.grid, plain.spec.block, plain.spec.args)


def test_doc_comment_stars_are_allowed():
    text = "/* @fsr\n * bench = { n = 64 }\n * grid = 1\n * block = 64\n * [args]\n * x = \"in[n]\"\n" \
           " * y = \"out[n]\"\n * a = 1.0\n * n = \"n\"\n */\n" + KERNEL
    _, r = parse(text)
    assert r.spec is not None, r.problems


def test_toml_syntax_error_points_at_the_line():
    p, line = problem(GOOD.replace("block = 256", "block = = 256") + KERNEL)
    assert p.code == "spec-syntax" and "not valid TOML" in p.message
    assert line.startswith("block = = 256")


@pytest.mark.parametrize("edit, needle, at", [
    (('a = 2.0', 'a = 2.0\nz = 1'), "'z', which is not a parameter", "z = 1"),
    (('a = 2.0\n', ''), "no entry for a", "[args]"),
    (('grid  = "cdiv(n, 256)"', 'grid = "cdiv(n, 256"'), "grid", 'grid = "cdiv(n, 256"'),
    (('grid  = "cdiv(n, 256)"', 'grid = "cdiv(m, 256)"'), "unknown size name 'm'", 'grid = "cdiv(m, 256)"'),
    (('x = "in[n]"', 'x = "in[n * q]"'), "length 'n * q' does not evaluate", 'x = "in[n * q]"'),
    (('x = "in[n]"', 'x = "in[n - 1]"'), "gives 0", 'x = "in[n - 1]"'),
    (('x = "in[n]"', 'x = 3'), "x is a pointer", "x = 3"),
    (('x = "in[n]"', 'x = "out[n]"'), "points to const data but is declared out", 'x = "out[n]"'),
    (('y = "inout[n] normal()"', 'y = "inout[n] gauss()"'), "unknown init", 'y = "inout[n] gauss()"'),
    (('y = "inout[n] normal()"', 'y = "inout[n] uniform(2, 1)"'), "lo < hi", 'y = "inout[n] uniform(2, 1)"'),
    (('block = 256', 'block = 2048'), "at most 1024", "block = 2048"),
    (('block = 256', 'block = [32, 32, 2]'), "2048 threads", "block = [32, 32, 2]"),
    (('block = 256', 'block = "n"'), "must be integers", 'block = "n"'),
    (('block = 256\n', ''), "missing block", "/* @fsr"),
    (('tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]', 'tests = [ { m = 1 } ]'), "same sizes as bench", "tests = [ { m = 1 } ]"),
    (('bench = { n = 16777216 }', 'bench = { n = -5 }'), "positive integer", "bench = { n = -5 }"),
    (('n = "n"', 'n = "n * 1000000"'), "cannot hold", 'n = "n * 1000000"'),
    (('a = 2.0', 'a = "in[n]"'), "a is a scalar", 'a = "in[n]"'),
    (('rtol  = 1e-5', 'rtol = -1'), "non-negative", "rtol = -1"),
])
def test_each_error_is_located(edit, needle, at):
    p, line = problem(GOOD.replace(*edit) + KERNEL)
    assert p.severity == "error"
    assert needle in p.message, p.message
    assert line.strip().startswith(at.split("\n")[-1] if "\n" in at else at), (line, p.message)


def test_unknown_key_is_a_warning_and_the_spec_still_works():
    src, r = parse(GOOD.replace("smem  = 0", "smem = 0\nblocks = 128") + KERNEL)
    assert r.spec is not None
    (p,) = r.problems
    assert p.severity == "warning" and "unknown key 'blocks'" in p.message
    assert src.text.splitlines()[p.span.start.line] == "blocks = 128"


def test_missing_tests_warns():
    start = GOOD.index("tests")
    text = GOOD[:start] + GOOD[GOOD.index("\n", start) + 1:]
    _, r = parse(text + KERNEL)
    assert r.spec is not None and r.problems[0].code == "spec-no-tests"


def test_a_length_may_be_omitted_with_one_size_name():
    _, r = parse(GOOD.replace('x = "in[n]"', 'x = "in"') + KERNEL)
    assert r.spec.arg("x").length == "n"


def test_templates_need_their_arguments_and_get_their_types_from_them():
    kernel = "template <typename T, int B>\n__global__ void k(int n, const T* x, T* y) {}\n"
    spec = '/* @fsr\nbench = { n = 64 }\ngrid = 1\nblock = 64\n[args]\nn = "n"\nx = "in[n]"\ny = "out[n]"\n*/\n'
    _, r = parse(spec + kernel, "k")
    assert any("is a template" in p.message for p in r.problems)
    _, r = parse(spec.replace("block = 64", 'block = 64\ntemplate = "double, 64"') + kernel, "k")
    assert r.spec is not None and r.spec.template == "double, 64"


def test_ref_is_checked_for_names_and_safety():
    base = GOOD.replace("*/", '[ref]\ny = "a * x + y"\n*/')
    _, r = parse(base + KERNEL)
    assert r.spec.ref == {"y": "a * x + y"}
    _, r = parse(base.replace('y = "a * x + y"', 'x = "a"') + KERNEL)
    assert "not an out or inout buffer" in r.problems[0].message
    _, r = parse(base.replace('"a * x + y"', '"x.__class__"') + KERNEL)
    assert "not allowed" in r.problems[0].message


def test_render_round_trips():
    src, r = parse(GOOD + KERNEL)
    text = render_spec(r.spec) + KERNEL
    _, again = parse(text)
    assert again.spec == r.spec


HIST = "__global__ void hist(int n, const int* keys, unsigned int* bins, float* total) { }\n"
HIST_SPEC = """/* @fsr
bench = {{ n = 1048576 }}
tests = [ {{ n = 1 }}, {{ n = 1000 }} ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
keys = "in[n] randint(0, 64)"
bins = "inout[64] {bins}"
total = "inout[1] {total}"
*/
"""


def test_zeros_and_fill_state_an_accumulators_start():
    _, r = parse(HIST_SPEC.format(bins="zeros()", total="fill(2.5)") + HIST, "hist")
    assert r.problems == ()
    args = {a.name: a for a in r.spec.args}
    assert args["bins"].init == Init("fill", 0.0, 0.0) and args["total"].init == Init("fill", 2.5, 2.5)
    again = parse(render_spec(r.spec) + HIST, "hist")[1]
    assert again.spec == r.spec and "zeros()" in render_spec(r.spec) and "fill(2.5)" in render_spec(r.spec)


@pytest.mark.parametrize("bins, total, needle", [
    ("uniform(0, 0)", "zeros()", "holds no value; for a constant start (an accumulator, histogram bins) use fill(0) or zeros()"),
    ("zeros()", "uniform(3, 3)", "use fill(3)"),
    ("fill(1.5)", "zeros()", "fill(1.5) is not an integer"),
    ("fill(-1)", "zeros()", "does not fit uint32"),
    ("zeros(1)", "zeros()", "zeros() takes no arguments"),
    ("fill()", "zeros()", "fill(v) takes one number"),
    ("ones()", "zeros()", "zeros(), fill(v) or captured()"),
])
def test_constant_initialisers_are_checked(bins, total, needle):
    p, line = problem(HIST_SPEC.format(bins=bins, total=total) + HIST, "hist")
    assert needle in p.message, p.message
    assert line.startswith(("bins", "total"))


def test_shared_memory_beyond_any_gpu_and_endless_test_lists_are_refused_before_the_gpu():
    from fsr_lsp.kernels import find_kernel
    from fsr_lsp.source import SourceText
    from fsr_lsp.specs import parse_spec

    from ..conftest import EXAMPLES

    saxpy = (EXAMPLES / "saxpy.cu").read_text()
    huge = saxpy.replace("block = 256", 'block = 256\nsmem = "1 << 40"')
    src = SourceText(huge)
    result = parse_spec(src, find_kernel(src, "saxpy"))
    assert any("smem" in p.message and "at most 232448" in p.message for p in result.problems)
    many = saxpy.replace("tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]",
                         "tests = [ " + ", ".join(f"{{ n = {i + 1} }}" for i in range(20001)) + " ]")
    assert many != saxpy
    src = SourceText(many)
    result = parse_spec(src, find_kernel(src, "saxpy"))
    assert any("20001 test sizes; at most 64" in p.message for p in result.problems)


def test_a_pointer_may_be_null_and_renders_back_as_null():
    """An optional buffer the program passes as nullptr (a bias left out): `bias = "null"` gives
    the kernel a null pointer; the plan passes eight zero bytes; anything else for a pointer is
    still refused with "null" among the forms it names."""
    from fsr_lsp.evaluator.job.plan import build_plans
    from fsr_lsp.specs import NullArg

    text = ('/* @fsr\nbench = { n = 1000 }\ngrid = "cdiv(n, 256)"\nblock = 256\n[args]\nx = "in[n]"\n'
            'bias = "null"\ny = "out[n]"\nn = "n"\n*/\n'
            "__global__ void k(const float* x, const float* bias, float* y, int n)\n"
            "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] + (bias ? bias[i] : 0.f); }\n")
    src = SourceText(text)
    kernel = find_kernel(src, "k")
    result = parse_spec(src, kernel)
    assert result.spec is not None, result.problems
    assert result.spec.args[1] == NullArg("bias")
    assert 'bias = "null"' in render_spec(result.spec)
    (plan,) = [p for p in build_plans(kernel, result.spec) if p.role == "bench"]
    bias = plan.args[1]
    assert (bias.kind, bias.dtype, bias.value) == ("scalar", "uint64", 0)
    worse = SourceText(text.replace('bias = "null"', "bias = 0"))
    bad = parse_spec(worse, find_kernel(worse, "k"))
    assert bad.spec is None and any('or "null"' in p.message for p in bad.problems)


def test_a_buffer_may_start_before_the_kernels_pointer():
    """`in[-3 : n + 3]`: the program passes `d_in + 3` of a buffer with a halo of 3 on each side;
    the buffer is n + 6 long and the kernel's pointer 3 elements in. It renders back as written;
    a start after the pointer is refused."""
    from fsr_lsp.evaluator.job.plan import build_plans

    text = ('/* @fsr\nbench = { n = 1024 }\ntests = [ { n = 64 } ]\ngrid = "n / 64"\nblock = 64\n[args]\n'
            'x = "in[-3 : n + 3]"\ny = "out[n]"\nn = "n"\n*/\n'
            "__global__ void st(const float* x, float* y, int n)\n"
            "{ int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i - 3] + x[i] + x[i + 3]; }\n")
    src = SourceText(text)
    kernel = find_kernel(src, "st")
    result = parse_spec(src, kernel)
    assert result.spec is not None, result.problems
    x = result.spec.args[0]
    assert (x.start, x.stop) == ("-3", "n + 3")
    assert 'x = "in[-3 : n + 3] ' in render_spec(result.spec)
    plans = {p.role: p for p in build_plans(kernel, result.spec)}
    assert (plans["bench"].args[0].length, plans["bench"].args[0].offset) == (1030, 3)
    assert (plans["test"].args[0].length, plans["test"].args[0].offset) == (70, 3)
    late = SourceText(text.replace("in[-3 : n + 3]", "in[2 : n]"))
    bad = parse_spec(late, find_kernel(late, "st"))
    assert bad.spec is None and any("starts at or before its pointer" in p.message for p in bad.problems)
