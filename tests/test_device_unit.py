"""A file whose host side needs headers this machine lacks still yields its kernel: compiled
again without the missing #includes and the host functions, lines kept."""

import pytest

from fsr_lsp.evaluator.device_unit import device_unit, missing_headers
from fsr_lsp.evaluator.prepare import EvalOptions, prepare

TORCH_FILE = """#include <torch/extension.h>
#include "my_project/utils.h"
#include <cuda_runtime.h>

__device__ __forceinline__ float sq(float v) { return v * v; }

/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
y = "out[n]"
x = "in[n]"
n = "n"
*/
__global__ void square(float* y, const float* x, int n) {
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
