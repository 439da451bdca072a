"""Specs drafted from launch sites, in the shapes real files have: sizes from literal
initialisers and #defines, dim3 launches, cudaMalloc / new[] / std::vector / thrust / torch
allocations through offsets and casts, typedef'd element types, wrapper functions, templates,
index arrays, accumulators zeroed by cudaMemset, launches in another file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsr_lsp.drafting import draft_specs
from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

SAMPLE = (Path(__file__).parent.parent / "data" / "drafting" / "sample.cu").read_text()


def spec_of(text: str, kernel: str):
    """The draft of `kernel`, read back through the spec parser as the quick fix would place it."""
    draft = draft_specs(text)[kernel]
    assert draft.text is not None, draft.problems
    src = SourceText(text)
    k = find_kernel(src, kernel)
    start = k.definition_span.start_byte
    placed = SourceText(src.slice(0, start) + draft.text + src.slice(start, len(src.data)))
    result = parse_spec(placed, find_kernel(placed, kernel))
    assert result.spec is not None, result.problems
    return draft, result.spec


def args(spec):
    return {a.name: (getattr(a, "direction", None), getattr(a, "length", None), getattr(a, "value", None),
                     getattr(a, "init", None)) for a in spec.args}


def test_sizes_from_literals_through_a_bytes_variable_and_a_typedef():
    draft, spec = spec_of(SAMPLE, "saxpy")
    assert spec.bench == {"N": 1 << 20} and {"N": 1} in spec.tests and {"N": 1000} in spec.tests
    assert spec.block == (256,) and spec.grid == ("((N + 256 - 1) / 256)",)
    a = args(spec)
    assert a["x"][:2] == ("in", "N") and a["y"][:2] == ("inout", "N") and a["a"][2] == 2.0 and a["n"][2] == "N"
    assert "line" in draft.text.splitlines()[1] and draft.provenance["size N"] == "N = 1 << 20"


def test_dim3_launch_and_const_sizes():
    _, spec = spec_of(SAMPLE, "transpose")
    assert spec.bench == {"W": 2048, "H": 1024} and spec.block == (32, 32)
    assert spec.grid == ("(W + 31) / 32", "(H + 31) / 32")
    a = args(spec)
    assert a["out"][:2] == ("out", "W * H") and a["in"][:2] == ("in", "W * H")


def test_an_index_array_gets_valid_indices_and_a_memset_accumulator_starts_at_zero():
    draft, spec = spec_of(SAMPLE, "histogram")
    a = args(spec)
    assert a["keys"][0] == "in" and (a["keys"][3].kind, a["keys"][3].lo, a["keys"][3].hi) == ("randint", 0, 64)
    assert a["bins"][:2] == ("inout", "64") and a["bins"][3].kind == "fill" and a["bins"][3].lo == 0
    assert "zeroed by cudaMemset" in draft.provenance["bins"]


def test_a_wrapper_with_a_ceil_div_macro_guesses_its_size_and_says_so():
    draft, spec = spec_of(SAMPLE, "relu")
    assert spec.grid == ("(((n) + (256) - 1) / (256))",) and spec.bench == {"n": 1 << 20}
    assert any("no value at the launch site for n" in p for p in draft.problems)
    assert args(spec)["out"][:2] == ("out", "n") and "guessed from the grid" in draft.provenance["out"]


def test_containers_new_arrays_offsets_and_casts():
    _, spec = spec_of(SAMPLE, "gather")
    a = args(spec)
    assert a["src"][:2] == ("in", "M")  # thrust::device_vector<float> d_src(M) via raw_pointer_cast
    # indexes src; M is in no grid or scalar (the kernel cannot see it), so it keeps its bench value
    assert a["idx"][0] == "in" and a["idx"][3].kind == "randint" and a["idx"][3].hi == 4096
    assert all(t["M"] == 4096 for t in spec.tests)
    # new float[K], passed as dst + 4: the buffer is all K of it, the kernel's pointer 4 elements in
    dst = next(x for x in spec.args if x.name == "dst")
    assert (dst.direction, dst.start, dst.stop) == ("out", "-(4)", "K - (4)")
    assert spec.smem == "128 * 4"


def test_templates_take_their_arguments_from_the_launch_with_aliases_resolved():
    _, spec = spec_of(SAMPLE, "scale")
    assert spec.template == "float, 4" and spec.block == (128,)
    assert args(spec)["v"][:2] == ("inout", "B * T * C")  # torch::empty({B, T, C})


def test_the_most_common_of_several_launches_is_taken_and_said():
    draft, spec = spec_of(SAMPLE, "fill")
    assert spec.block == (128,) and any("3 launches differ" in p and "2 of them" in p for p in draft.problems)


def test_what_cannot_be_drafted_says_why():
    drafts = draft_specs(SAMPLE)
    assert drafts["unlaunched"].text is None and drafts["unlaunched"].problems == ["no launch of unlaunched found"]
    assert drafts["computed"].text is None and "a call to compute_blocks()" in drafts["computed"].problems[0]


def test_a_launch_in_another_file_and_the_cli_json(tmp_path):
    cu = tmp_path / "kernels.cu"
    cu.write_text("#include <cuda_runtime.h>\n__global__ void add(float* out, const float* a, int rows, int cols)\n"
                  "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < rows * cols) out[i] += a[i]; }\n"
                  "__global__ void alone(float* p, int n, int m) { p[0] = n + m; }\n")
    cpp = tmp_path / "main.cpp"
    cpp.write_text("#define ROWS 512\nint main() {\n  const int cols = 300;\n  float *out, *a;\n"
                   "  cudaMalloc(&out, ROWS * cols * sizeof(float));\n  cudaMalloc(&a, ROWS * cols * sizeof(float));\n"
                   "  add<<<(ROWS * cols + 255) / 256, 256>>>(out, a, ROWS, cols);\n}\n")
    specs = {s.kernel: s for s in kernel_specs([cu, cpp])}
    assert specs["add"].origin == "drafted" and "ROWS = 512" in specs["add"].spec
    assert specs["alone"].origin == "none" and any("no launch of alone" in p for p in specs["alone"].problems)
    r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "spec", str(cu), str(cpp), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [d["kernel"] for d in data] == ["add", "alone"]
    assert set(data[0]) == {"file", "kernel", "line", "origin", "spec", "problems"} and data[0]["line"] == 2
    for d in data:  # every spec text parses back through the project's own parser
        if d["spec"]:
            text = cu.read_text()
            src = SourceText(text.replace("__global__ void add", d["spec"] + "__global__ void add", 1))
            assert parse_spec(src, find_kernel(src, d["kernel"])).spec is not None


@pytest.mark.parametrize("args, code, needle", [
    (["/nonexistent.cu"], 2, "cannot read /nonexistent.cu"),
    (["--kernel", "nope"], 2, "no kernel named nope"),
])
def test_cli_errors_are_one_line(args, code, needle):
    files = [str(Path(__file__).parent.parent / "data" / "drafting" / "sample.cu")] if args[0].startswith("--") else []
    r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "spec", *files, *args], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == code and needle in r.stderr and "Traceback" not in r.stderr


def test_a_macro_whose_parameter_shares_a_name_with_its_argument_expands_once():
    src = SourceText("#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))\n"
                     "__global__ void relu(float* out, const float* inp, int N) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
                     " if (i < N) out[i] = inp[i] > 0 ? inp[i] : 0; }\n"
                     "int main() { int B = 8, T = 1024; float *o, *x; cudaMalloc(&o, B * T * sizeof(float));"
                     " cudaMalloc(&x, B * T * sizeof(float)); const int N = B * T; const int bs = 256;"
                     " relu<<<CEIL_DIV(N, bs), bs>>>(o, x, N); }\n")
    (d,) = draft_specs(src).values()
    assert d.text is not None and 'grid = "((((B * T)) + (256) - 1) / (256))"' in d.text, d.text


def test_element_types_from_an_included_header_reach_the_draft_and_the_evaluator(tmp_path):
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.evaluator.compile.compiler import find_nvcc
    from fsr_lsp.evaluator.job.prepare import EvalOptions, prepare
    from fsr_lsp.kernels.aliases import with_included_aliases

    (tmp_path / "common.h").write_text("#pragma once\n#include \"precision.h\"\n")
    (tmp_path / "precision.h").write_text("#include <cuda_bf16.h>\ntypedef __nv_bfloat16 floatX;\n")
    cu = tmp_path / "act.cu"
    cu.write_text('#include "common.h"\n__global__ void act(floatX* out, const floatX* in, int n)\n'
                  "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = in[i]; }\n"
                  "int main() { int n = 1 << 20; floatX *o, *x; cudaMalloc(&o, n * sizeof(floatX));"
                  " cudaMalloc(&x, n * sizeof(floatX)); act<<<(n + 255) / 256, 256>>>(o, x, n); }\n")
    (s,) = kernel_specs([cu])
    assert s.origin == "drafted" and 'out = "out[n]"' in s.spec, (s.spec, s.problems)
    k = find_kernel(cu.read_text(), "act")
    assert k.params[0].dtype is None  # the file alone does not say
    assert with_included_aliases(k, cu.read_text(), [tmp_path]).params[0].dtype == "bfloat16"
    if find_nvcc() is not None:  # the evaluator reads the header too, from its include folders
        placed = place_spec(cu.read_text(), "act", s.spec).text
        prepared = prepare(placed, "act", None, "sm_90a", EvalOptions(compiler="nvcc", include_dirs=(str(tmp_path),)))
        assert prepared.job is not None, prepared.result.message
        assert prepared.job.sizes[0].args[0].dtype == "bfloat16"


def test_allocations_inside_error_check_macros_are_found(tmp_path):
    """How most real host code allocates: the cudaMalloc inside CUDA_CHECK(...) or
    checkCudaErrors(...), with or without a cast."""
    from pathlib import Path

    from fsr_lsp.drafting.resolver import kernel_specs

    text = """#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) exit(1); } while (0)
__global__ void scale(float* y, const float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }
int main() {
    int n = 1 << 20;
    size_t bytes = n * sizeof(float);
    float *d_x, *d_y;
    CUDA_CHECK(cudaMalloc((void**)&d_x, bytes));
    checkCudaErrors(cudaMalloc(&d_y, 2 * bytes));
    scale<<<(n + 255) / 256, 256>>>(d_y, d_x, n);
}
"""
    path = Path(tmp_path) / "wrapped.cu"
    path.write_text(text)
    (spec,) = kernel_specs([path])
    assert spec.origin == "drafted"
    assert spec.provenance["x"] == "cudaMalloc of `d_x`" and spec.provenance["y"] == "cudaMalloc of `d_y`"
    assert 'y = "out[(2 * (n * 4)) / 4]"' in spec.spec and 'x = "in[n]"' in spec.spec, spec.spec


def test_a_comment_inside_the_launch_configuration_is_no_part_of_it(tmp_path):
    from pathlib import Path

    from fsr_lsp.drafting.resolver import kernel_specs

    text = """__global__ void scale(float* y, const float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
int main() {
    int n = 4096;
    float *d_x, *d_y;
    cudaMalloc(&d_x, n * sizeof(float));
    cudaMalloc(&d_y, n * sizeof(float));
    scale<<</*480, 128*/ (n + 127) / 128, /* threads */ 128>>>(d_y, /* in */ d_x, n);
}
"""
    path = Path(tmp_path) / "commented.cu"
    path.write_text(text)
    (spec,) = kernel_specs([path])
    assert spec.origin == "drafted", spec.problems
    assert 'grid = "(n + 127) / 128"' in spec.spec and "block = 128" in spec.spec and 'x = "in[n]"' in spec.spec


def test_a_kernel_that_reads_the_clock_gets_no_spec_and_says_why(tmp_path):
    """A latency microbenchmark stores clock64() differences: its result differs every run, so
    fsr names the clock read instead of drafting a spec whose proof would fail as
    'nondeterministic'. A clock() in a comment, or a kernel with its own spec, is not refused."""
    from fsr_lsp.drafting.resolver import kernel_specs

    (tmp_path / "k.cu").write_text(
        "__global__ void latency(const int* p, int* out, long long* clk)\n{\n  long long t0 = clock64();\n"
        "  int v = p[threadIdx.x];\n  clk[threadIdx.x] = clock64() - t0; out[threadIdx.x] = v;\n}\n"
        "__global__ void ptx(unsigned* clk, const int* x)\n{\n  unsigned t;\n"
        "  asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(t));\n  clk[threadIdx.x] = t + x[0];\n}\n"
        "__global__ void plain(const float* x, float* y, int n)\n{\n  // clock64() was here\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i];\n}\n"
        "int main() { float *x, *y; int n = 1000; cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4);\n"
        "  plain<<<(n + 255) / 256, 256>>>(x, y, n); }\n")
    specs = {s.kernel: s for s in kernel_specs([tmp_path / "k.cu"])}
    assert specs["latency"].spec is None and "reads the GPU clock (clock64() at line 3)" in specs["latency"].problems[0]
    assert specs["ptx"].spec is None and "%clock (inline PTX) at line 10" in specs["ptx"].problems[0]
    assert specs["plain"].spec is not None, specs["plain"].problems
    (tmp_path / "own.cu").write_text('/* @fsr\nbench = { n = 32 }\ngrid = 1\nblock = 32\n[args]\np = "in[n]"\n'
                                     'out = "out[n]"\nclk = "out[n]"\n*/\n' + (tmp_path / "k.cu").read_text())
    own = {s.kernel: s for s in kernel_specs([tmp_path / "own.cu"])}
    assert own["latency"].origin == "attached" and own["latency"].spec, own["latency"].problems


MACRO_BODY = """
#define MOP20 s = s * v + v;
__global__ void unrolled(float* data, const float* keep, int iters, float v)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    float s = data[gid] + keep[gid];
    for (int j = 0; j < iters; ++j) {
        /* twenty operations a macro */
        MOP20 MOP20 MOP20 MOP20 MOP20 MOP20
        MOP20 MOP20 MOP20 MOP20 MOP20 MOP20
    }
    data[gid] = s;
}

int main()
{
    int n = 1 << 20;
    float *data, *keep;
    cudaMalloc(&data, n * sizeof(float));
    cudaMalloc(&keep, n * sizeof(float));
    unrolled<<<n / 256, 256>>>(data, keep, 100, 1.5f);
}
"""


def test_a_store_hidden_behind_macros_the_parser_cannot_see_through_is_not_drafted_in():
    """`MOP20 MOP20 ...` (no semicolons between: they are in the macro) swallows the parse of
    what follows, `data[gid] = s` among it: a draft taking `data` as `in` failed its proof (the
    original wrote it). A pointer the signature lets the kernel write is then `inout`; a const one
    stays `in`."""
    (spec,) = draft_specs(MACRO_BODY).values()
    assert spec.text is not None, spec.problems
    assert 'data = "inout[' in spec.text and 'keep = "in[' in spec.text
