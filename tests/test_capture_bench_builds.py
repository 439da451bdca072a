"""The capture bench builds a program the way its project does (issue 44 item 5): a CMake
project by CMake, a sample by nvcc with the helper sources beside it when it does not link
alone. The builds need nvcc (and cmake), not a GPU."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.nvcc
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
coverage = pytest.importorskip("capture_coverage")

KERNEL = "__global__ void scale(float* y, const float* x, float a, int n)\n{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }\n"
MAIN = ("__global__ void scale(float* y, const float* x, float a, int n);\n"
        "int main() { float *x, *y; int n = 1000; cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4);\n"
        "  scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n); cudaDeviceSynchronize(); return 0; }\n")


@pytest.fixture
def nvcc_on_path(monkeypatch):
    from fsr_lsp.evaluator.compile.compiler import find_nvcc

    nvcc = find_nvcc()
    monkeypatch.setenv("PATH", f"{Path(nvcc).parent}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake")
def test_a_cmake_project_is_built_by_cmake_and_its_sources_are_not_built_again_alone(tmp_path, nvcc_on_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.24)\nproject(demo LANGUAGES CXX CUDA)\n"
                                            "add_executable(scale_app src/main.cu src/kernels.cu)\n"
                                            "set_target_properties(scale_app PROPERTIES CUDA_SEPARABLE_COMPILATION ON)\n")
    (project / "src" / "kernels.cu").write_text(KERNEL)
    (project / "src" / "main.cu").write_text(MAIN)
    programs = coverage.all_programs(project, tmp_path / "out", [], [], cmake_arch="90")
    assert [(p.name, p.unbuilt) for p in programs] == [("./scale_app (cmake)", "")]
    assert programs[0].binary.is_file() and {s.name for s in programs[0].sources} == {"main.cu", "kernels.cu"}


def test_a_sample_that_needs_the_helper_sources_beside_it_is_linked_with_them(tmp_path, nvcc_on_path):
    sample = tmp_path / "project" / "sample"
    sample.mkdir(parents=True)
    (sample / "helper.cu").write_text(KERNEL)
    (sample / "main.cu").write_text(MAIN)
    out = tmp_path / "out"
    out.mkdir()
    # without the CUDA libraries the projects' builds add (not every toolkit here has them)
    (program,) = coverage.nvcc_programs(tmp_path / "project", out, [], [sample / "main.cu"],
                                        extra=("-rdc=true", "-lcudadevrt"))
    assert program.binary is not None and program.binary.is_file(), program.unbuilt
    assert {s.name for s in program.sources} == {"main.cu", "helper.cu"}
    alone = coverage.nvcc_programs(tmp_path / "project", out, [], [sample / "main.cu"], extra=("-rdc=true",))
    assert alone[0].binary is not None  # (the same, built again: the helper is what makes it link)
    (sample / "helper.cu").unlink()
    (unlinked,) = coverage.nvcc_programs(tmp_path / "project", out, [], [sample / "main.cu"], extra=("-rdc=true",))
    assert unlinked.binary is None and unlinked.sources == [sample / "main.cu"]
