"""A file whose host side needs headers this machine lacks still yields its kernel: compiled
again without the missing #includes and the host functions, lines kept."""

import shutil
from pathlib import Path

import pytest

from fsr_lsp.evaluator.compile.device_unit import device_unit, error_lines, missing_headers
from fsr_lsp.evaluator.job.prepare import EvalOptions, prepare

SPEC = """/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
y = "out[n]"
x = "in[n]"
n = "n"
*/
"""
TORCH_FILE = """#include <torch/extension.h>
#include "my_project/utils.h"
#include <cuda_runtime.h>

__device__ __forceinline__ float sq(float v) { return v * v; }

""" + SPEC + """__global__ void square(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = sq(x[i]);
}

torch::Tensor square_forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    square<<<(x.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), x.data_ptr<float>(), x.numel());
    return y;
}
"""


def test_missing_headers_are_read_from_each_compilers_words():
    log = ("kernel.cu:1:10: fatal error: torch/extension.h: No such file or directory\n"
           'kernel.cu(2): catastrophic error: cannot open source file "my_project/utils.h"\n')
    assert missing_headers(log) == ("torch/extension.h", "my_project/utils.h")
    assert missing_headers("kernel.cu(5): error: identifier \"x\" is undefined") == ()


def test_the_unit_keeps_device_code_and_lines_and_drops_host_code_and_missing_includes():
    unit = device_unit(TORCH_FILE, ("torch/extension.h", "my_project/utils.h"))
    assert unit is not None and unit.host_functions == 1
    lines, before = unit.text.splitlines(), TORCH_FILE.splitlines()
    assert len(lines) == len(before) and len(unit.text.encode()) == len(TORCH_FILE.encode())
    assert "torch" not in unit.text and "utils.h" not in unit.text and "#include <cuda_runtime.h>" in unit.text
    assert "__device__ __forceinline__ float sq" in unit.text and "__global__ void square" in unit.text
    assert device_unit(TORCH_FILE, ()) is None


@pytest.mark.nvcc
def test_prepare_compiles_the_kernel_of_a_torch_extension_file_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("FSR_CACHE_DIR", str(tmp_path))
    prepared = prepare(TORCH_FILE, "square", None, "sm_90a", EvalOptions(compiler="nvcc"))
    assert prepared.job is not None, prepared.result.message if prepared.result else ""
    assert any("compiled without its host code: torch/extension.h, my_project/utils.h not found" in w
               for w in prepared.result.warnings)


# cuda-samples' timer used without its header, and a runtime call a newer toolkit rejects:
# the host side fails to compile, the kernel does not
HOST_ERRORS_FILE = """#include <cstdio>

class Operator {
    StopWatchInterface *p_timer;
public:
    Operator() { sdkCreateTimer(&p_timer); }
};
StopWatchInterface *timer = NULL;

""" + SPEC + """__global__ void twice(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}

int main() {
    cudaMemPrefetchAsync(nullptr, 0, 0, nullptr, 0, 0, 0);
    return 0;
}
"""


def test_error_lines_are_the_compiled_files_own_errors_in_each_compilers_words():
    log = ('kernel.cu(4): error: identifier "StopWatchInterface" is undefined\n'
           "kernel.cu:8:1: error: 'StopWatchInterface' does not name a type\n"
           "kernel.cu(9): warning #177-D: variable \"v\" was declared but never referenced\n"
           'helper.h(3): error: identifier "x" is undefined\n')
    assert error_lines(log) == {4, 8}


def test_host_declarations_the_compiler_rejects_are_left_out_and_device_code_kept():
    unit = device_unit(HOST_ERRORS_FILE, (), frozenset({4, 6, 8, 27}))
    assert unit is not None and unit.declarations == 2 and unit.host_functions == 2  # the constructor, main
    assert "StopWatchInterface" not in unit.text and "cudaMemPrefetchAsync" not in unit.text
    assert "__global__ void twice" in unit.text and unit.text.count("\n") == HOST_ERRORS_FILE.count("\n")


@pytest.mark.parametrize("text, line", [
    # the kernel's own error is the user's to see
    (HOST_ERRORS_FILE.replace("2.f * x[i]", "2.f * x[i] + undefined_thing"), 23),
    # a struct the kernel takes: leaving it out would change what the kernel means
    ("struct Params { Unknown u; int n; };\n__global__ void k(Params p, float* y) { y[0] = p.n; }\n", 1),
    # a constant the kernel reads
    ("Unknown scale_of(int);\nconst float SCALE = scale_of(2);\n__global__ void k(float* y) { y[0] = SCALE; }\n", 2),
])
def test_errors_in_device_code_or_in_what_it_names_are_not_worked_around(text, line):
    assert device_unit(text, (), frozenset({line})) is None


@pytest.mark.nvcc
def test_prepare_compiles_a_kernel_whose_host_code_does_not_compile_here(tmp_path, monkeypatch):
    monkeypatch.setenv("FSR_CACHE_DIR", str(tmp_path))
    prepared = prepare(HOST_ERRORS_FILE, "twice", None, "sm_90a", EvalOptions(compiler="nvcc"))
    assert prepared.job is not None, prepared.result.message if prepared.result else ""
    assert any("compiled without its host code: its host code does not compile here" in w
               and "2 host declarations" in w for w in prepared.result.warnings)
    broken = HOST_ERRORS_FILE.replace("2.f * x[i]", "2.f * x[i] + undefined_thing")
    failed = prepare(broken, "twice", None, "sm_90a", EvalOptions(compiler="nvcc"))
    assert failed.job is None and "undefined_thing" in failed.result.message


NESTED_LOG = """In file included from kernel.cu:9:
/work/proj/inc/common.h:2:10: fatal error: cublas_v2.h: No such file or directory
    2 | #include <cublas_v2.h>
      |          ^~~~~~~~~~~~~
compilation terminated.
"""


def test_a_missing_header_one_include_deep_is_found_in_the_header_that_includes_it(tmp_path):
    """`common.h` including `<cublas_v2.h>` (issue 61, item 5): the header is patched, not the file."""
    from fsr_lsp.evaluator.compile.device_unit import missing_in_headers
    from fsr_lsp.evaluator.job.prepare import _patch_headers

    assert missing_in_headers(NESTED_LOG) == {"/work/proj/inc/common.h": ("cublas_v2.h",)}
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "common.h").write_text("#pragma once\n#include <cublas_v2.h>\ninline void host_helper(cublasHandle_t h) {}\n"
                                  "__device__ inline float twice(float x) { return 2.0f * x; }\n")
    patched = tmp_path / "patched"
    patched.mkdir()
    log = NESTED_LOG.replace("/work/proj/inc", str(inc))
    assert _patch_headers(log, (str(inc),), patched) == 1
    copy = (patched / "common.h").read_text()
    assert "cublas_v2.h" not in copy and "host_helper" not in copy and "__device__ inline float twice" in copy
    assert copy.count("\n") == (inc / "common.h").read_text().count("\n")  # lines kept


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="needs nvcc")
def test_a_file_whose_header_includes_a_missing_one_compiles_its_device_side(tmp_path):
    from fsr_lsp.evaluator.job.prepare import EvalOptions, prepare

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "common.h").write_text("#pragma once\n#include <cublas_v2_not_here.h>\n"
                                               "inline void host_helper(cublasHandle_t h) { (void)h; }\n"
                                               "__device__ inline float twice(float x) { return 2.0f * x; }\n")
    source = ('/* @fsr\nbench = { n = 1000 }\ngrid = "cdiv(n, 256)"\nblock = 256\n[args]\nn = "n"\nx = "inout[n]"\n*/\n'
              '#include "common.h"\n__global__ void k(int n, float* x) { int i = blockIdx.x * blockDim.x + threadIdx.x; '
              'if (i < n) x[i] = twice(x[i]); }\nint main() { return 0; }\n')
    prepared = prepare(source, "k", None, "sm_90", EvalOptions(include_dirs=(str(tmp_path / "inc"),), compiler="nvcc"))
    assert prepared.result.compile["original"].ok, prepared.result.message
    assert any("cublas_v2_not_here.h not found" in w for w in prepared.result.warnings)
