"""Static drafting on host code as public projects write it: grids from helper functions
(`cdiv`, `ceil_div`), sizes from the command line with a default or without one, chained
assignments, `#define`s and macros from a project header, and a kernel compiled for one size."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.drafting.resolver import kernel_specs

KERNEL = """__global__ void add(float* c, const float* a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + 1.f; }
"""


def spec(tmp_path: Path, main: str, extra: dict[str, str] | None = None, include_dirs=()):
    (tmp_path / "k.cu").write_text(KERNEL + main)
    for name, text in (extra or {}).items():
        (tmp_path / name).write_text(text)
    (found,) = [s for s in kernel_specs([tmp_path / "k.cu"], include_dirs=tuple(include_dirs)) if s.kernel == "add"]
    return found


def test_grids_from_one_return_helper_functions(tmp_path: Path):
    s = spec(tmp_path, """
__host__ __device__ inline int cdiv(int a, int b) { return (a + b - 1) / b; }
template <typename T> constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }
int main() {
    int n = 5000;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<ceil_div(cdiv(n, 2), 128), 256>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert 'grid = "(((((n + 2 - 1) / 2)) + 128 - 1) / 128)"' in s.spec and "bench = { n = 5000 }" in s.spec


def test_a_size_from_the_command_line_is_guessed_and_says_so(tmp_path: Path):
    s = spec(tmp_path, """
#include <cstdlib>
int main(int argc, char** argv) {
    int n = atoi(argv[1]);
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<(n + 255) / 256, 256>>>(c, a, n);
}
""")
    assert s.origin == "drafted" and "bench = { n = 1048576 }" in s.spec
    assert any(p.startswith("sizes from the command line: n") and "fsr capture" in p for p in s.problems)


def test_the_default_a_program_runs_with_when_given_no_argument(tmp_path: Path):
    s = spec(tmp_path, """
int main(int argc, char** argv) {
    int blocksize = 64;
    int n = argc > 2 ? atoi(argv[2]) : 3000;
    if (argc > 1) blocksize = atoi(argv[1]);
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<(n + blocksize - 1) / blocksize, blocksize>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert "bench = { n = 3000 }" in s.spec and "block = 64" in s.spec and not s.problems


def test_chained_assignments_give_every_name_its_value(tmp_path: Path):
    s = spec(tmp_path, """
int main() {
    int N, M;
    N = M = 2048;
    float *a, *c;
    cudaMalloc(&a, N * M * sizeof(float)); cudaMalloc(&c, N * M * sizeof(float));
    add<<<N * M / 256, 256>>>(c, a, N * M);
}
""")
    assert s.origin == "drafted", s.problems
    assert "N = 2048" in s.spec and "M = 2048" in s.spec


def test_defines_and_macros_from_a_project_header(tmp_path: Path):
    common = tmp_path / "include"
    common.mkdir()
    (common / "common.h").write_text("#pragma once\n#define ROWS 300\n#define COLS 40\n"
                                     "#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))\n")
    main = """
#include "common.h"
int main() {
    float *a, *c;
    cudaMalloc(&a, ROWS * COLS * sizeof(float)); cudaMalloc(&c, ROWS * COLS * sizeof(float));
    add<<<CEIL_DIV(ROWS * COLS, 128), 128>>>(c, a, ROWS * COLS);
}
"""
    s = spec(tmp_path, main, include_dirs=[common])
    assert s.origin == "drafted", s.problems
    assert "ROWS = 300" in s.spec and "COLS = 40" in s.spec and "(128) - 1) / (128)" in s.spec
    assert spec(tmp_path, main).origin != "drafted"  # without the include path the header is not found


def test_a_kernel_compiled_for_one_size_is_checked_at_that_size(tmp_path: Path):
    (tmp_path / "t.cu").write_text("""#define N 512
__global__ void tr(float* out, const float* in)
{ int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y; out[x * N + y] = in[y * N + x]; }
int main() {
    float *a, *b;
    cudaMalloc(&a, N * N * sizeof(float)); cudaMalloc(&b, N * N * sizeof(float));
    dim3 block(16, 16), grid(N / 16, N / 16);
    tr<<<grid, block>>>(b, a);
}
""")
    (s,) = kernel_specs([tmp_path / "t.cu"])
    assert s.origin == "drafted" and "bench = { fixed = 1 }" in s.spec and "tests" not in s.spec
    assert 'out = "out[512 * 512]"' in s.spec
    assert s.problems == ["every value at the launch site is a constant the kernel is compiled for: checked at that size only"]


ROWS = """
__global__ void rowsq(float* out, const float* inp, int N, int C)
{ int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < N) { float s = 0.f; for (int i = 0; i < C; i++) s += inp[r * C + i] * inp[r * C + i]; out[r] = s; } }
void rowsq1(float* out, const float* inp, int B, int T, int C, const int block_size) {
    const int N = B * T;
    rowsq<<<(N + block_size - 1) / block_size, block_size>>>(out, inp, N, C);
}
void rowsq_dispatch(int version, float* out, const float* inp, int B, int T, int C, int block_size) {
    switch (version) { case 1: rowsq1(out, inp, B, T, C, block_size); break; default: exit(1); }
}
"""


def test_sizes_set_in_main_reach_a_launch_two_calls_down(tmp_path: Path):
    """main -> a dispatcher over kernel versions -> the launcher: sizes and buffers come from main,
    the block size from the list main loops over (the item nearest 256)."""
    (tmp_path / "r.cu").write_text(ROWS + """
int main(int argc, char** argv) {
    int B = 4; int T = 512; int C = 768;
    float *d_out, *d_inp;
    cudaMalloc(&d_out, B * T * sizeof(float));
    cudaMalloc(&d_inp, B * T * C * sizeof(float));
    int block_sizes[] = {32, 64, 128, 512, 1024};
    for (int j = 0; j < 5; j++) {
        int block_size = block_sizes[j];
        rowsq_dispatch(1, d_out, d_inp, B, T, C, block_size);
    }
}
""")
    (s,) = kernel_specs([tmp_path / "r.cu"])
    assert s.origin == "drafted", s.problems
    assert "bench = { B = 4, T = 512, C = 768 }" in s.spec
    assert "block = 128" in s.spec  # 128 and 512 are as near 256: the first listed
    assert 'out = "out[B * T]"' in s.spec and 'inp = "in[B * T * C]"' in s.spec
    assert "called at line 10 (from line 21)" in s.spec


def test_a_call_chain_that_loops_back_on_itself_ends(tmp_path: Path):
    (tmp_path / "r.cu").write_text(KERNEL + """
void ping(float* c, const float* a, int n);
void pong(float* c, const float* a, int n) { ping(c, a, n); }
void ping(float* c, const float* a, int n) { add<<<(n + 255) / 256, 256>>>(c, a, n); pong(c, a, n); }
""")
    (s,) = kernel_specs([tmp_path / "r.cu"])
    assert s.spec is None or "no value at the launch site for n" in " ".join(s.problems)


def test_a_launcher_template_takes_its_arguments_from_the_call(tmp_path: Path):
    (tmp_path / "t.cu").write_text("""
template <typename T, int BLOCK>
__global__ void scale_t(T* out, const T* in, T a, int n)
{ int i = blockIdx.x * BLOCK + threadIdx.x; if (i < n) out[i] = a * in[i]; }
template <typename T, int BLOCK>
void launch_scale(T* out, const T* in, T a, int n) {
    scale_t<T, BLOCK><<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(out, in, a, n);
}
int main() {
    const int n = 1 << 20;
    double *x, *y;
    cudaMalloc(&x, n * sizeof(double)); cudaMalloc(&y, n * sizeof(double));
    launch_scale<double, 64>(y, x, 3.0, n);
}
""")
    (s,) = kernel_specs([tmp_path / "t.cu"])
    assert s.origin == "drafted", s.problems
    assert 'template = "double, 64"' in s.spec and "block = 64" in s.spec


def test_a_launch_that_cannot_be_read_gives_way_to_one_that_can(tmp_path: Path):
    s = spec(tmp_path, """
void twice(float* c, const float* a, int n, int bs) { add<<<(n + bs - 1) / bs, bs>>>(c, a, n); }
void other(float* c, const float* a, int n, int bs) { add<<<(n + bs - 1) / bs, bs>>>(c, a, n + 0); }
int main() {
    int n = 4096; float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<(n + 127) / 128, 128>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert "block = 128" in s.spec
    assert any("drafted from the first that could be drafted" in p for p in s.problems)


def test_a_guessed_size_that_is_squared_keeps_the_buffers_small(tmp_path: Path):
    """`N` from the command line sizes `in[N * N]`: the guess is cut until the largest buffer
    is near 2^20 elements, never 2^40."""
    (tmp_path / "m.cu").write_text("""
__global__ void copy(const float* A, float* B, int N)
{ int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y; if (x < N && y < N) B[y * N + x] = A[y * N + x]; }
int main(int argc, char** argv) {
    int N = atoi(argv[1]);
    float *A, *B; cudaMalloc(&A, N * N * sizeof(float)); cudaMalloc(&B, N * N * sizeof(float));
    dim3 block(32, 32), grid((N + 31) / 32, (N + 31) / 32);
    copy<<<grid, block>>>(A, B, N);
}
""")
    (s,) = kernel_specs([tmp_path / "m.cu"])
    assert s.origin == "drafted", s.problems
    assert "bench = { N = 2048 }" in s.spec
    assert any("bench value 2048 guessed" in p for p in s.problems), s.problems


def test_a_file_constant_the_kernel_takes_as_a_parameter_is_a_size_and_shared_memory_from_the_block_is_not(tmp_path):
    """The book's atomic reduction: `const int N = 100000000;` at file scope, passed to a kernel
    whose own parameter is `N` (inside the kernel N is the parameter: it may vary), and
    `smem = sizeof(real) * BLOCK_SIZE` (it follows the compiled-in block: a number, never a size
    shrunk to 1 at a test size). `cudaMalloc(&d_y, sizeof(real))` is one element."""
    (tmp_path / "r.cu").write_text("""typedef float real;
const int N = 100000000;
const int BLOCK_SIZE = 128;
void __global__ reduce(const real *d_x, real *d_y, const int N)
{
    extern __shared__ real s_y[];
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    s_y[threadIdx.x] = (n < N) ? d_x[n] : 0.0;
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(d_y, s_y[0]);
}
void run(const real *d_x)
{
    const int grid_size = (N + BLOCK_SIZE - 1) / BLOCK_SIZE;
    const int smem = sizeof(real) * BLOCK_SIZE;
    real *d_y;
    cudaMalloc(&d_y, sizeof(real));
    reduce<<<grid_size, BLOCK_SIZE, smem>>>(d_x, d_y, N);
}
int main() { real *d_x; cudaMalloc(&d_x, sizeof(real) * N); run(d_x); }
""")
    (s,) = kernel_specs([tmp_path / "r.cu"])
    assert s.origin == "drafted", s.problems
    assert "bench = { N = 100000000 }" in s.spec and 'd_x = "in[N]"' in s.spec, s.spec
    assert 'smem = "512"' in s.spec or "smem = 512" in s.spec, s.spec
    assert 'd_y = "inout[1]' in s.spec and "grid_size" not in s.spec, s.spec


def test_a_define_with_a_trailing_comment_is_its_value(tmp_path: Path):
    s = spec(tmp_path, """
#define N 5000  // elements, as the course's samples comment them
#define BLOCK 256 /* threads */
int main() { float *a, *c; cudaMalloc(&a, N * sizeof(float)); cudaMalloc(&c, N * sizeof(float));
    add<<<(N + BLOCK - 1) / BLOCK, BLOCK>>>(c, a, N); }
""")
    assert s.origin == "drafted", s.problems
    assert "bench = { N = 5000 }" in s.spec and "block = 256" in s.spec, s.spec


def test_a_pointer_the_launch_passes_as_null_is_null_in_the_draft(tmp_path: Path):
    (tmp_path / "k.cu").write_text(
        "__global__ void biased(const float* x, const float* bias, float* y, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] + (bias ? bias[i] : 0.f); }\n"
        "int main() { int n = 4096; float *x, *y; cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));\n"
        "  biased<<<(n + 255) / 256, 256>>>(x, nullptr, y, n); }\n")
    (s,) = kernel_specs([tmp_path / "k.cu"])
    assert s.origin == "drafted" and 'bias = "null"' in s.spec and 'y = "out[n]"' in s.spec, (s.spec, s.problems)


def test_a_pointer_into_its_allocation_gives_the_buffer_from_its_start(tmp_path: Path):
    """The training series' stencil: `d_in + RADIUS` of an allocation of N + 2 * RADIUS ints."""
    (tmp_path / "s.cu").write_text("""#define N 4096
#define RADIUS 3
#define BLOCK_SIZE 16
__global__ void stencil_1d(int *in, int *out) {
    int g = threadIdx.x + blockIdx.x * blockDim.x;
    out[g] = in[g - RADIUS] + in[g + RADIUS];
}
int main() {
    int *d_in, *d_out;
    int size = (N + 2 * RADIUS) * sizeof(int);
    cudaMalloc((void **)&d_in, size);
    cudaMalloc((void **)&d_out, size);
    stencil_1d<<<N / BLOCK_SIZE, BLOCK_SIZE>>>(d_in + RADIUS, d_out + RADIUS);
}
""")
    (s,) = kernel_specs([tmp_path / "s.cu"])
    assert s.origin == "drafted", s.problems
    assert 'in = "in[-(3) : (N + 2 * 3) - (3)]"' in s.spec, s.spec


@pytest.mark.parametrize("grid, expected", [
    ("ceil(n / 256)", 'grid = "(n / 256)"'),  # integers: C truncates first, ceil() has nothing to round
    ("ceil((float)n / 256)", 'grid = "cdiv(n, 256)"'),
    ("(int)ceil(n / 256.0)", 'grid = "cdiv(n, 256.0)"'),
    ("ceilf(n / (float)threads)", 'grid = "cdiv(n, 256)"'),
    ("std::ceil(double(n) / threads)", 'grid = "cdiv(n, 256)"'),
    ("floor(n / 256)", 'grid = "(n / 256)"'),
    ("ceil(nf / 256)", 'grid = "cdiv((n), 256)"'),  # a float variable: a float quotient
    ("ceil((int)nf / 256)", 'grid = "((n) / 256)"'),  # cast back to an integer first
    ("floor((n + 255.0) / 256)", None),  # a float floored: not read
])
def test_grids_rounded_by_ceil_or_floor_divide_as_c_does(tmp_path: Path, grid, expected):
    s = spec(tmp_path, """
int main() {
    int n = 5000; const int threads = 256; float nf = n;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<GRID, threads>>>(c, a, n);
}
""".replace("GRID", grid))
    if expected is None:
        assert s.origin != "drafted" and any("rounded by floor()" in p for p in s.problems), s.problems
        return
    assert s.origin == "drafted", s.problems
    assert expected in s.spec, s.spec


def test_static_and_functional_casts_are_casts(tmp_path: Path):
    s = spec(tmp_path, """
int main() {
    int n = 5000;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<static_cast<int>(std::ceil(static_cast<float>(n) / 128)), 128>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert 'grid = "cdiv(n, 128)"' in s.spec


def test_a_dim3_whose_members_are_set_after_it_is_declared(tmp_path: Path):
    """`dim3 threads; threads.x = THREADS; threads.y = 1;` (Rodinia's and its heirs' style), and a
    grid counted up where the division leaves a remainder (`blocks = blocks + 1`: the new value in
    terms of the old, never a definition of itself)."""
    s = spec(tmp_path, """
#define THREADS 512
int main() {
    int n = 1 << 20;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    dim3 threads;
    threads.x = THREADS;
    threads.y = 1;
    int blocks_x;
    blocks_x = n / threads.x;
    if (n % threads.x != 0) blocks_x = blocks_x + 1;
    dim3 blocks;
    blocks.x = blocks_x;
    add<<<blocks, threads>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert "block = 512" in s.spec and 'grid = "((n / (512)) + 1)"' in s.spec, s.spec


def test_a_dim3_member_updated_in_place_is_not_guessed(tmp_path: Path):
    s = spec(tmp_path, """
int main() {
    int n = 4096;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    dim3 threads;
    threads.x = 128;
    threads.x *= 2;
    add<<<(n + 255) / 256, threads>>>(c, a, n);
}
""")
    assert s.origin != "drafted" or "block = 128" not in s.spec


def test_a_dim3_passed_to_a_launcher_keeps_its_components(tmp_path: Path):
    s = spec(tmp_path, """
void run_add(float* c, const float* a, int n, const dim3 num_blocks, const dim3 num_threads) {
    add<<<num_blocks, num_threads>>>(c, a, n);
}
int main() {
    int n = 1 << 16;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    dim3 threads(128);
    dim3 blocks((n + 127) / 128);
    run_add(c, a, n, blocks, threads);
}
""")
    assert s.origin == "drafted", s.problems
    assert "block = 128" in s.spec and "grid = \"(n + 127) / 128\"" in s.spec, s.spec


def test_a_header_written_to_follow_another_sees_its_constants(tmp_path: Path):
    """`main.cu` includes `consts.h` then `launch.h`; `launch.h` launches with `consts.h`'s
    constants without including it (it relies on its includer's order): drafted, both from the
    files given and from the workspace's launch index, as the editor finds it."""
    from fsr_lsp.drafting.resolver import workspace_spec
    from fsr_lsp.drafting.workspace import LaunchIndex
    from fsr_lsp.kernels import find_kernel

    (tmp_path / "consts.h").write_text("const int BLOCK_X = 128;\n#define N_ITEMS 4096\n")
    (tmp_path / "k.cuh").write_text(KERNEL)
    (tmp_path / "launch.h").write_text("""
void run(float* c, const float* a) {
    dim3 threads(BLOCK_X);
    dim3 blocks;
    blocks.x = (N_ITEMS + BLOCK_X - 1) / BLOCK_X;
    add<<<blocks, threads>>>(c, a, N_ITEMS);
}
""")
    (tmp_path / "main.cu").write_text('#include "consts.h"\n#include "k.cuh"\n#include "launch.h"\n'
                                      "int main() { float *a, *c; cudaMalloc(&a, N_ITEMS * sizeof(float));\n"
                                      "cudaMalloc(&c, N_ITEMS * sizeof(float)); run(c, a); }\n")
    files = [tmp_path / n for n in ("consts.h", "k.cuh", "launch.h", "main.cu")]
    (found,) = [s for s in kernel_specs(files) if s.kernel == "add"]
    assert found.origin == "drafted", found.problems
    assert "block = 128" in found.spec, found.spec
    (tmp_path / ".git").mkdir()
    text = (tmp_path / "k.cuh").read_text()
    edited = workspace_spec(LaunchIndex(tmp_path, first_wait=None), tmp_path / "k.cuh", text, find_kernel(text, "add"))
    assert edited.origin == "drafted" and "block = 128" in edited.spec, edited.problems


def test_a_remainder_counted_as_one_block_more(tmp_path: Path):
    """`n / B + (n % B > 0)`: the bool is 0 or 1, the grid rounds up."""
    s = spec(tmp_path, """
#define BLOCK_SIZE 256
int main() {
    int n = 5000;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<(n / BLOCK_SIZE) + (n % BLOCK_SIZE > 0), BLOCK_SIZE>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert 'grid = "(n / 256) + (min(n % 256, 1))"' in s.spec, s.spec
    from fsr_lsp.specs.expr import evaluate

    for n, blocks in ((5000, 20), (5120, 20), (1, 1), (256, 1), (257, 2)):
        assert evaluate("(n / 256) + (min(n % 256, 1))", {"n": n}) == blocks


def test_a_dim3_member_and_a_name_reassigned_from_each_other(tmp_path: Path):
    """`blocks.x = blocks_x; ... blocks_x = blocks.x / 2;` (a reduction's next pass): the member
    holds the value it was given then, not a name defined from it again (a cycle before)."""
    s = spec(tmp_path, """
int main() {
    int n = 1 << 16;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    int blocks_x;
    blocks_x = n / 256;
    dim3 blocks;
    blocks.x = blocks_x;
    blocks_x = blocks.x / 2;
    blocks.x = blocks_x;
    add<<<blocks, 256>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert 'grid = "(((n / 256)) / 2)"' in s.spec, s.spec


@pytest.mark.parametrize(("grid", "expected"), [
    ("n < 4096 ? n : 4096", "min(n, 4096)"),
    ("( n <= 4096 ) ? ( n ) : 4096", "min(n, 4096)"),
    ("n > 4096 ? 4096 : n", "min(n, 4096)"),
    ("n >= 64 ? n : 64", "max(n, 64)"),
    ("n < 64 ? 64 : n", "max(n, 64)"),
    ("n / 256 + ((n % 256 == 0) ? 0 : 1)", "n / 256 + (min(n % 256, 1))"),
    ("n / 256 + (n % 256 != 0 ? 1 : 0)", "n / 256 + (min(n % 256, 1))"),
    ("n / 256 + 1 - (n % 256 ? 0 : 1)", "n / 256 + 1 - ((1 - min(n % 256, 1)))"),
    ("n > 100000 ? n / 512 : n / 256", None),
])
def test_a_ternary_that_takes_the_smaller_or_larger_side_or_counts_a_remainder_reads_as_a_size(tmp_path: Path, grid,
                                                                                              expected):
    """`None`: a condition on a size that is neither: no spec of it (it has no branches)."""
    s = spec(tmp_path, f"""
int main() {{
    int n = 5000;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<{grid}, 256>>>(c, a, n);
}}
""")
    if expected is None:
        assert s.origin != "drafted" and any("conditional expression on sizes" in p for p in s.problems)
        return
    assert s.origin == "drafted", s.problems
    assert f'grid = "{expected}"' in s.spec and "bench = { n = 5000 }" in s.spec


def test_a_ternary_on_constants_alone_is_the_branch_it_picks(tmp_path: Path):
    """The block is a number the kernel is launched with: its condition is decided here, at
    the launch's constants; a condition on a size is not (the spec has no branches)."""
    s = spec(tmp_path, """
#define ORDER 300
int main() {
    int n = 5000;
    const int threads = ORDER > 256 && !(ORDER % 2) ? 256 : 128;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<(n + threads - 1) / threads, threads>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert "block = 256" in s.spec and "bench = { n = 5000 }" in s.spec
    on_sizes = spec(tmp_path, """
int main() {
    int n = 5000;
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<n % 256 ? n / 256 + 1 : n / 256, 256>>>(c, a, n);
}
""")
    assert on_sizes.spec is None or on_sizes.origin != "drafted"
    assert any("conditional expression on sizes" in p for p in on_sizes.problems), on_sizes.problems


def test_a_launcher_s_block_parameter_with_no_value_is_guessed_the_same_everywhere_and_said(tmp_path: Path):
    """`dim3 threads(nthreads)` in a launcher nobody in reach calls: the block is a number, so
    nthreads is guessed (not a size), and the shared memory it sizes follows the same guess."""
    s = spec(tmp_path, """
void launch_add(float* c, const float* a, int n, int nthreads) {
    dim3 threads(nthreads, 1, 1);
    add<<<(n + nthreads - 1) / nthreads, threads, nthreads * sizeof(float)>>>(c, a, n);
}
""")
    assert s.origin == "drafted", s.problems
    assert "block = [256, 1, 1]" in s.spec and 'grid = "(n + 256 - 1) / 256"' in s.spec and 'smem = "256 * 4"' in s.spec
    assert any("the block's nthreads (a parameter of launch_add): nthreads = 256 guessed" in p for p in s.problems), \
        s.problems
    two = spec(tmp_path, """
void launch_add(float* c, const float* a, int n, int bx, int by) {
    add<<<(n + 255) / 256, dim3(bx, by)>>>(c, a, n);
}
""")
    assert two.origin != "drafted" and any("bx, by have no value at the launch site" in p for p in two.problems)
    argv = spec(tmp_path, """
int main(int argc, char** argv) {
    int n = 4096;
    int threads = atoi(argv[1]);
    float *a, *c;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
    add<<<(n + threads - 1) / threads, threads>>>(c, a, n);
}
""")
    assert argv.origin == "drafted" and "block = 256" in argv.spec and "bench = { n = 4096 }" in argv.spec
    assert any("the block's threads (from the command line): threads = 256 guessed" in p for p in argv.problems)
