"""`fsr eval` takes the path the other commands take: a relative FILE keeps its folder as an
include path, and a kernel with no @fsr block gets its spec from the workspace's latest capture
(or a draft from its launch), as Optimize does. Without a GPU the command stops after the
compile, which is far enough to tell."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.captures import scale_launch, write_capture
from ..support.doubles import fsr

pytestmark = pytest.mark.nvcc

SCALE = """#include "common.h"
__global__ void scale(float* out, const float* in, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * in[i] * ONE;
}
"""




def gpu_here() -> bool:
    try:
        import pycuda  # noqa: F401
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.fixture
def project(tmp_path: Path) -> Path:
    from fsr_lsp.evaluator.compile.compiler import find_nvcc

    if find_nvcc() is None:
        pytest.skip("nvcc not found")
    if gpu_here():
        pytest.skip("these check the path to the GPU, which a GPU machine would then take")
    (tmp_path / "common.h").write_text("#define ONE 1.0f\n")
    (tmp_path / "scale.cu").write_text(SCALE)
    return tmp_path


def test_a_relative_file_keeps_its_folder_for_its_own_headers(project: Path):
    block = ('/* @fsr\nbench = { n = 4096 }\ntests = [ { n = 1000 } ]\ngrid = "cdiv(n, 256)"\nblock = 256\n'
             '[args]\nout = "out[n]"\nin = "in[n]"\na = 2.0\nn = "n"\n*/\n')
    (project / "scale.cu").write_text(SCALE.replace("__global__", block + "__global__"))
    r = fsr("eval", "scale.cu", "--kernel", "scale", cwd=project)
    assert "common.h" not in r.stderr, r.stderr
    assert r.returncode == 3 and "it compiles for" in r.stderr and "Traceback" not in r.stderr


def test_after_a_capture_eval_takes_the_captured_spec(project: Path):
    r = fsr("eval", "scale.cu", "--kernel", "scale", cwd=project)
    assert "captured" not in r.stderr  # its signature alone gives a spec: nothing to take from a capture yet
    write_capture(project, [scale_launch(1 << 20)])
    r = fsr("eval", "scale.cu", "--kernel", "scale", cwd=project)
    assert "captured in a run" in r.stderr, r.stderr
    assert r.returncode == 3 and "it compiles for" in r.stderr and "Traceback" not in r.stderr
