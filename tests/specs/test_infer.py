from fsr_lsp.kernels import discover_kernels, find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import BufferArg, parse_spec, spec_template

from ..conftest import read


def result_for(text, name):
    src = SourceText(text)
    return parse_spec(src, find_kernel(src, name))


def test_pointers_plus_one_int_size_is_inferred_and_said():
    r = result_for("__global__ void saxpy(int n, float a, const float* x, float* y) {}", "saxpy")
    assert r.spec is not None and r.spec.inferred
    (p,) = r.problems
    assert p.severity == "info" and "inferred" in p.message and "x in (const)" in p.message
    assert r.spec.arg("x") == BufferArg("x", "in", "n", r.spec.arg("x").init)
    assert r.spec.arg("y").direction == "inout"
    assert r.spec.grid == ("cdiv(n, 256)",)


def test_launch_bounds_cap_the_inferred_block():
    r = result_for("__global__ void __launch_bounds__(128) k(int n, float* x) {}", "k")
    assert r.spec.block == (128,)


def test_ambiguous_signatures_say_what_is_missing():
    r = result_for("__global__ void mm(int M, int N, const float* A, float* C) {}", "mm")
    assert r.spec is None
    (p,) = r.problems
    assert p.severity == "warning" and "exactly one integer size parameter" in p.message and "M, N" in p.message
    r = result_for("__global__ void nothing(float* x) {}", "nothing")
    assert "found: none" in r.problems[0].message
    r = result_for("template <typename T> __global__ void t(int n, T* x) {}", "t")
    assert "template" in r.problems[0].message


def test_templates_parse_for_every_kernel_in_the_corpus():
    """Inserting the generated spec above a kernel gives a block that at least parses as TOML."""
    for name in ("several.cu", "midedit.cu", "macros.cu"):
        text = read(name)
        for kernel in discover_kernels(text):
            block = spec_template(kernel)
            start = kernel.definition_span.start_byte
            data = text.encode()
            edited = (data[:start] + block.encode() + data[start:]).decode()
            src = SourceText(edited)
            again = next(k for k in discover_kernels(src) if k.name == kernel.name)
            assert again.spec is not None, (name, kernel.name)
            r = parse_spec(src, again)
            assert not any(p.code == "spec-syntax" for p in r.problems), (kernel.name, r.problems)


def test_template_for_an_inferable_kernel_is_the_inferred_spec():
    text = "__global__ void saxpy(int n, float a, const float* x, float* y) {}\n"
    kernel = find_kernel(text, "saxpy")
    edited = spec_template(kernel) + text
    r = result_for(edited, "saxpy")
    assert r.problems == () and r.spec.bench == {"n": 1 << 24}
