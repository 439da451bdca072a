"""Drafted specs proven on real CUDA kernels: each way a draft can be wrong fails its proof,
naming the check and the argument; right drafts (from the launch site) are proven with
memcheck and initcheck clean; float atomics get an explicit tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.drafting.placement import place_spec
from fsr_lsp.drafting.proof import prove
from fsr_lsp.evaluator.sanitize.sanitizer import find_sanitizer

from .conftest import QUICK

pytestmark = pytest.mark.gpu
needs_sanitizer = pytest.mark.skipif(find_sanitizer() is None, reason="compute-sanitizer not installed")
SAMPLE = Path(__file__).parent.parent / "data" / "drafting" / "sample.cu"

FILE = """
__global__ void axpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scale(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

__global__ void pairs(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * (x[i] + x[i + 1]);   // reads one past n: x needs n + 1
}

__global__ void total(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(y, a * x[i]);
}
"""


def draft(y: str, x: str = "in[n]", n: int = 1 << 20) -> str:
    return f"""/* @fsr
# drafted for a test
bench = {{ n = {n} }}
tests = [ {{ n = 1 }}, {{ n = 17 }}, {{ n = 1000 }} ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
a = 1.5
x = "{x}"
y = "{y}"
*/"""


@needs_sanitizer
def drafted_and_proven(evaluator, tmp_path: Path, source: str, kernel: str):
    """The file's one spec as fsr works it out with no run, and its proof."""
    (tmp_path / "k.cu").write_text(source)
    (s,) = kernel_specs([tmp_path / "k.cu"])
    return s, prove(evaluator, source, kernel, s.spec, QUICK)


def test_a_right_draft_is_proven_with_memcheck_and_initcheck_clean(evaluator):
    p = prove(evaluator, FILE, "scale", draft("out[n]"), QUICK)
    assert p.proven, p.message
    names = {c.name: c.status for c in p.checks}
    assert names["sanitizer memcheck"] == "pass" and names["sanitizer initcheck"] == "pass", p.checks
    print(f"\n[proof] scale: {p.message}")


@needs_sanitizer
def test_a_drafted_out_buffer_the_original_reads_is_given_up_for_inout(evaluator):
    p = prove(evaluator, FILE, "axpy", draft("out[n]"), QUICK)  # axpy reads y: it is inout
    assert p.proven and 'y = "inout[n]"' in p.spec and "checked as inout" in p.message, p.message
    users_own = prove(evaluator, place_spec(FILE, "axpy", draft("out[n]")).text, "axpy", None, QUICK)
    assert users_own.status == "failed" and users_own.check.startswith("outputs not read before written"), \
        users_own.message  # the user's own block is never changed


@needs_sanitizer
@pytest.mark.parametrize("kernel, spec, check, argument", [
    ("scale", draft("out[n - 1]"), "in bounds", "y"),  # writes past a length one short
    ("pairs", draft("out[n]"), "in bounds", "x"),  # reads one past the end of x: memcheck names it
])
def test_each_wrong_draft_fails_naming_check_and_argument(evaluator, kernel, spec, check, argument):
    p = prove(evaluator, FILE, kernel, spec.replace("{ n = 1 }, ", "") if "n - 1" in spec else spec, QUICK)
    assert p.status == "failed", p.message
    assert p.check.startswith(check) and p.argument == argument, (p.check, p.argument, p.message)
    print(f"\n[proof] {kernel}: {p.message}")


@needs_sanitizer
def test_float_atomics_get_an_explicit_tolerance_or_are_flagged(evaluator):
    p = prove(evaluator, FILE, "total", draft("inout[1] zeros()", n=1 << 22), QUICK)
    print(f"\n[proof] total: {p.status}: {p.message}")
    assert p.proven or p.nondeterministic == ["y"], p.message
    if p.proven and p.tolerance:
        assert "rtol" in p.spec


@needs_sanitizer
def test_the_sample_file_drafts_are_proven(evaluator):
    text = SAMPLE.read_text()
    results = {}
    for s in kernel_specs([SAMPLE]):
        if s.origin == "drafted":
            results[s.kernel] = prove(evaluator, text, s.kernel, s.spec, QUICK)
    for name, p in results.items():
        print(f"\n[proof] sample {name}: {p.status}: {p.message}")
    assert results and all(p.proven for p in results.values()), {k: p.message for k, p in results.items()}


def test_a_draft_with_a_null_pointer_is_proven_and_the_kernel_gets_null(evaluator, tmp_path):
    """`biased<<<...>>>(x, nullptr, y, n)`: the draft passes null, as the program does, and
    the proof runs the kernel with it (its `if (bias)` branch not taken: y = x exactly);
    memcheck is clean, so nothing read through the null pointer."""
    source = ("__global__ void biased(const float* x, const float* bias, float* y, int n)\n"
              "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] + (bias ? bias[i] : 0.f); }\n"
              "int main() { int n = 4096; float *x, *y; cudaMalloc(&x, n * sizeof(float));\n"
              "  cudaMalloc(&y, n * sizeof(float)); biased<<<(n + 255) / 256, 256>>>(x, nullptr, y, n); }\n")
    s, proof = drafted_and_proven(evaluator, tmp_path, source, "biased")
    assert 'bias = "null"' in s.spec
    assert proof.proven, proof.message


def test_a_buffer_that_starts_before_the_pointer_is_proven_and_a_read_past_its_start_caught(evaluator, tmp_path):
    """The training series' stencil, passed `d_in + RADIUS`: its draft gives the buffer from 3
    before the pointer and the proof passes (the halo is the program's); a kernel that reads
    one element further back (in[g - 4]) reads before the buffer: the proof fails on `in`."""
    source = ("#define N 4096\n#define RADIUS 3\n#define BLOCK_SIZE 16\n"
              "__global__ void stencil_1d(int *in, int *out) {\n    int g = threadIdx.x + blockIdx.x * blockDim.x;\n"
              "    out[g] = in[g - RADIUS] + in[g + RADIUS];\n}\n"
              "int main() {\n    int *d_in, *d_out;\n    int size = (N + 2 * RADIUS) * sizeof(int);\n"
              "    cudaMalloc((void **)&d_in, size);\n    cudaMalloc((void **)&d_out, size);\n"
              "    stencil_1d<<<N / BLOCK_SIZE, BLOCK_SIZE>>>(d_in + RADIUS, d_out + RADIUS);\n}\n")
    s, proof = drafted_and_proven(evaluator, tmp_path, source, "stencil_1d")
    assert proof.proven, proof.message
    further = source.replace("in[g - RADIUS]", "in[g - RADIUS - 1]")
    failed = prove(evaluator, further, "stencil_1d", s.spec, QUICK)
    assert not failed.proven and failed.argument == "in", failed.message


def test_an_inferred_block_reduction_gets_its_dynamic_shared_memory_and_is_proven(evaluator, tmp_path):
    """A kernel indexing an `extern __shared__` array, no launch in reach: the inferred spec
    gives it one float a thread and is proven; the same spec without it faults in the
    original's runs (what inferred specs did before)."""
    source = ("__global__ void block_sums(float* out, const float* in, unsigned int size)\n{\n"
              "    extern __shared__ float s_data[];\n"
              "    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    s_data[threadIdx.x] = i < size ? in[i] : 0.f;\n    __syncthreads();\n"
              "    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
              "        if (threadIdx.x < s) s_data[threadIdx.x] += s_data[threadIdx.x + s];\n        __syncthreads();\n    }\n"
              "    if (threadIdx.x == 0) out[i / blockDim.x] = s_data[0];\n}\n")
    s, proof = drafted_and_proven(evaluator, tmp_path, source, "block_sums")
    assert s.origin == "inferred" and "smem = 1024" in s.spec
    assert proof.proven, proof.message
    without = prove(evaluator, source, "block_sums", s.spec.replace("smem = 1024\n", ""), QUICK)
    assert not without.proven and without.check == "original runs", without.message
