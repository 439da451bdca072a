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
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))
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


# Projects written for older toolkits (issue 44): the bench's shims let this toolkit build them with
# the projects' own build files; the bench's architecture is a concrete one here (no GPU needed).
RUN = ("void run() { float *x, *y; int n = 1000; cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4);\n"
       "  scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n); cudaDeviceSynchronize(); }\n")
CALLS_RUN = "void run();\nint main() { run(); return 0; }\n"


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    project = tmp_path / "project"
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project


@pytest.mark.parametrize(("args", "kept"), [
    # what this toolkit compiles for is left as it is
    (["-gencode", "arch=compute_90,code=sm_90", "-c", "a.cpp"],
     ["-gencode", "arch=compute_90,code=sm_90", "-c", "a.cpp"]),
    (["-arch=native", "-O2", "x.o"], ["-arch=native", "-O2", "x.o"]),
    # dropped architectures go, and the bench's is added when none is left
    (["-arch=compute_70", "-code=compute_70", "-c", "a.o"], ["-c", "a.o", "-arch=sm_90"]),
    (["-arch", "sm_35", "-O3", "-o", "app"], ["-O3", "-o", "app", "-arch=sm_90"]),
    (["-gencode", "arch=compute_52,code=sm_52", "-gencode=arch=compute_90,code=\"sm_90,compute_90\"", "x.o"],
     ["-gencode=arch=compute_90,code=\"sm_90,compute_90\"", "x.o"]),
    (["--generate-code=arch=compute_60,code=[compute_60,sm_60]", "--gpu-architecture=sm_70", "x.o"],
     ["x.o", "-arch=sm_90"]),
    (["--generate-code", "arch=compute_80,code=[compute_80,sm_80,sm_52]", "x.o"],
     ["--generate-code", "arch=compute_80,code=[compute_80,sm_80]", "x.o"]),
    # a CUDA source gets <cassert>, as older toolkits' headers gave it
    (["-arch=sm_90", "-c", "k.cu"], ["-include", "cassert", "-arch=sm_90", "-c", "k.cu"]),
])
def test_the_nvcc_shim_drops_only_the_architectures_this_toolkit_cannot_compile_for(args, kept):
    supported = {75, 80, 86, 89, 90, 100, 120}
    assert coverage.shim_nvcc_args(args, supported, "sm_90") == kept


@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake")
def test_a_cmake_project_for_architectures_this_toolkit_dropped_is_built_for_the_benchs(tmp_path, nvcc_on_path):
    # the architectures set for every target, one named in the flags too, a library in a subdirectory,
    # device code linked across files (the device link is nvcc's too)
    project = _project(tmp_path, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.18)\nproject(old LANGUAGES CXX CUDA)\n"
                          'set(CMAKE_CUDA_ARCHITECTURES "60;70")\n'
                          'set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -gencode arch=compute_52,code=sm_52")\n'
                          "add_subdirectory(lib)\nadd_executable(old_app main.cu)\ntarget_link_libraries(old_app run)\n"
                          "set_target_properties(old_app PROPERTIES CUDA_SEPARABLE_COMPILATION ON)\n",
        "lib/CMakeLists.txt": "add_library(run STATIC run.cu)\n"
                              "set_target_properties(run PROPERTIES CUDA_SEPARABLE_COMPILATION ON)\n",
        "lib/run.cu": KERNEL + RUN, "main.cu": CALLS_RUN})
    programs = coverage.all_programs(project, tmp_path / "out", [], [], cmake_arch="90")
    assert [(p.name, p.unbuilt) for p in programs] == [("./old_app (cmake)", "")]
    flags = (tmp_path / "out" / "cmake__" / "lib" / "CMakeFiles" / "run.dir" / "flags.make").read_text()
    assert "compute_90" in flags and "compute_60" not in flags  # the bench's architecture, not a fallback of the shim's


@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake")
def test_a_find_cuda_project_with_an_old_minimum_and_a_dropped_architecture_is_built(tmp_path, nvcc_on_path):
    project = _project(tmp_path, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.0)\nproject(sgemm)\n"
                          "set(CUDA_NVCC_FLAGS -arch=compute_70;-code=compute_70)\nfind_package(CUDA REQUIRED)\n"
                          "aux_source_directory(src SRC)\nCUDA_ADD_EXECUTABLE(sgemm sgemm.cu ${SRC})\n",
        "src/run.cu": KERNEL + RUN, "sgemm.cu": CALLS_RUN})
    programs = coverage.all_programs(project, tmp_path / "out", [], [], cmake_arch="90")
    assert [(p.name, p.unbuilt) for p in programs] == [("./sgemm (cmake)", "")]


@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake")
def test_a_program_cmake_leaves_beside_the_sources_is_found(tmp_path, nvcc_on_path):
    """NVIDIA_SGEMM_PRACTICE sets EXECUTABLE_OUTPUT_PATH to its source folder: the program is
    there, not in the build folder."""
    project = _project(tmp_path, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.24)\nproject(demo LANGUAGES CXX CUDA)\n"
                          "set(EXECUTABLE_OUTPUT_PATH ${PROJECT_SOURCE_DIR})\n"
                          "add_executable(beside src/run.cu sgemm.cu)\n",
        "src/run.cu": KERNEL + RUN, "sgemm.cu": CALLS_RUN})
    programs = coverage.all_programs(project, tmp_path / "out", [], [], cmake_arch="90")
    assert [(p.name, p.unbuilt) for p in programs] == [("./beside (cmake)", "")]
    assert programs[0].binary == project / "beside" and programs[0].folder == project


def test_a_makefile_with_a_dropped_architecture_is_built_by_make(tmp_path, nvcc_on_path):
    project = _project(tmp_path, {
        "sample/Makefile": "app: main.cu run.cu\n"
                           "\tnvcc -O2 -gencode arch=compute_52,code=sm_52 -o app main.cu run.cu\n",
        "sample/run.cu": KERNEL + RUN, "sample/main.cu": CALLS_RUN})
    programs = coverage.all_programs(project, tmp_path / "out", [], [], cmake_arch="90")
    assert [(p.name, p.unbuilt) for p in programs] == [("sample/app", "")]
    assert {s.name for s in programs[0].sources} == {"main.cu", "run.cu"}


def test_a_source_that_uses_assert_without_including_it_builds(tmp_path, nvcc_on_path):
    project = _project(tmp_path, {
        "sample/Makefile": "app: main.cu\n\t$(CUDA_PATH)/bin/nvcc $(GENCODE_FLAGS) -o app main.cu\n",
        "sample/main.cu": "__global__ void check(const int* p) { assert(p[threadIdx.x] >= 0); }\n"
                          "int main() { int* p; cudaMalloc(&p, 128); check<<<1, 32>>>(p);\n"
                          "  cudaDeviceSynchronize(); }\n"})
    programs = coverage.all_programs(project, tmp_path / "out", [], [], cmake_arch="90")
    assert [(p.name, p.unbuilt) for p in programs] == [("sample/app", "")]
