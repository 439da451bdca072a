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


REDUCE = """__global__ void reduce(float* out, const float* in, unsigned int size)
{
    extern __shared__ %s s_data[];
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    s_data[threadIdx.x] = i < size ? in[i] : 0.f;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s_data[0];
}
"""


def test_a_kernel_with_dynamic_shared_memory_is_inferred_with_one_element_a_thread():
    """Launched with none, a kernel indexing an `extern __shared__` array faults: the inferred
    launch gives its array one element a thread (said as a guess; the proof checks it)."""
    r = result_for(REDUCE % "float", "reduce")
    assert r.spec is not None and r.spec.smem == 256 * 4 and r.spec.block == (256,)
    assert "smem 1024 bytes, one element of s_data a thread (a guess)" in r.problems[0].message
    assert result_for(REDUCE % "volatile double", "reduce").spec.smem == 256 * 8
    assert result_for(REDUCE.replace("extern __shared__ %s s_data[];", "__shared__ float s_data[256];"),
                      "reduce").spec.smem == 0  # static shared memory needs none
    # aligned as real code aligns it (a size expression, not only a number), and qualified
    assert result_for(REDUCE % "__align__(sizeof(double)) double", "reduce").spec.smem == 256 * 8
    assert result_for(REDUCE % "__align__(16) float4", "reduce").spec.smem == 256 * 16
    assert result_for(REDUCE % "const unsigned char", "reduce").spec.smem == 256
    r = result_for(REDUCE % "Cell", "reduce")  # a struct fsr cannot size: no spec, and why
    assert r.spec is None and "dynamic shared memory (`extern __shared__` s_data) of a type fsr cannot size" in \
        r.problems[0].message


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
