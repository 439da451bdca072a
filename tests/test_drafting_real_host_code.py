"""Static drafting on host code as public projects write it: grids from helper functions
(`cdiv`, `ceil_div`), sizes from the command line with a default or without one, chained
assignments, `#define`s and macros from a project header, and a kernel compiled for one size."""

from __future__ import annotations

from pathlib import Path

from fsr_lsp.drafting.origin import kernel_specs

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
