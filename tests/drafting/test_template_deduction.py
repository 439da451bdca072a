"""Template kernels launched without template arguments (issue 60 item 4): instantiated as the
compiler deduces them, from the declared types of the pointers the launch passes, through
typedefs and a template launcher's own deduced or explicit arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.drafting.resolver import kernel_specs

KERNEL = """template <typename T>
__global__ void scale(T* y, const T* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }
"""


def spec_of(tmp_path: Path, host: str, kernel: str = KERNEL):
    path = tmp_path / "k.cu"
    path.write_text(kernel + host)
    (spec,) = [s for s in kernel_specs([path]) if s.kernel == "scale"]
    return spec


@pytest.mark.parametrize("host, expected", [
    ("int main() { const int n = 4096; float *d_y, *d_x; cudaMalloc(&d_y, n * sizeof(float));\n"
     "  cudaMalloc(&d_x, n * sizeof(float)); scale<<<n / 256, 256>>>(d_y, d_x, n); }\n", "float"),
    ("typedef double real;\nint main() { const int n = 4096; real* d_y; real* d_x; cudaMalloc(&d_y, n * sizeof(real));\n"
     "  cudaMalloc(&d_x, n * sizeof(real)); scale<<<n / 256, 256>>>(d_y, d_x, n); }\n", "double"),
    ("template <typename T> void run(T* d_y, const T* d_x, int n) { scale<<<n / 256, 256>>>(d_y, d_x, n); }\n"
     "int main() { const int n = 4096; int *d_y, *d_x; cudaMalloc(&d_y, n * sizeof(int));\n"
     "  cudaMalloc(&d_x, n * sizeof(int)); run(d_y, d_x, n); }\n", "int"),
])
def test_a_template_launched_without_arguments_is_drafted_for_the_types_it_is_passed(tmp_path, host, expected):
    spec = spec_of(tmp_path, host)
    assert spec.origin == "drafted", spec.problems
    assert f'template = "{expected}"' in (spec.spec or "")
    assert "deduced from the types of the arguments" in spec.provenance["template"]


def test_an_explicit_launcher_argument_wins_over_what_its_arguments_would_give(tmp_path):
    host = ("template <typename T> void run(T* d_y, const T* d_x, int n) { scale<<<n / 256, 256>>>(d_y, d_x, n); }\n"
            "int main() { const int n = 4096; double *d_y, *d_x; cudaMalloc(&d_y, n * sizeof(double));\n"
            "  cudaMalloc(&d_x, n * sizeof(double)); run<double>(d_y, d_x, n); }\n")
    assert 'template = "double"' in (spec_of(tmp_path, host).spec or "")


@pytest.mark.parametrize("kernel, host", [
    # a value parameter the arguments cannot give
    (KERNEL.replace("template <typename T>", "template <typename T, int B>"),
     "int main() { const int n = 4096; float *d_y, *d_x; cudaMalloc(&d_y, n * 4); cudaMalloc(&d_x, n * 4);\n"
     "  scale<<<n / 256, 256>>>(d_y, d_x, n); }\n"),
    # a cast names the type itself, and a void* says none
    (KERNEL, "int main() { const int n = 4096; void *d_y, *d_x; cudaMalloc(&d_y, n * 4); cudaMalloc(&d_x, n * 4);\n"
             "  scale<<<n / 256, 256>>>((float*)d_y, (float*)d_x, n); }\n"),
    # a launcher whose own type is never given
    (KERNEL, "template <typename T> void run(T* d_y, const T* d_x, int n) { scale<<<n / 256, 256>>>(d_y, d_x, n); }\n"),
])
def test_what_the_arguments_do_not_give_is_not_guessed(tmp_path, kernel, host):
    spec = spec_of(tmp_path, host, kernel)
    assert spec.origin == "none" and spec.spec is None
    assert any("arguments' types do not give them all" in p for p in spec.problems), spec.problems
