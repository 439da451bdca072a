"""Capture on a GPU, end to end: a binary built by nvcc with static cudart, a template kernel
whose argument the program picks at run time, and a pycuda script (the driver API with a
parameter buffer); each capture gives a spec that `fsr spec --check` proves, and `fsr
optimize` searches with it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.doubles import fsr
from ..support.programs import spec_of
from ..capture.test_capture import KERNELS as CPU_KERNELS

pytestmark = pytest.mark.gpu

KERNELS = "#include <cuda_runtime.h>\n\n" + CPU_KERNELS  # the kernels the CPU tests capture, as a .cu file
MAIN = """#include <cstdio>
#include <cstdlib>
#include "kernels.cu"
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s\\n", cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char** argv) {
    int n = atoi(argv[1]), rows = atoi(argv[2]), cols = atoi(argv[3]), bs = atoi(argv[4]);
    float *x, *y, *m, *out;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&m, (size_t)rows * cols * sizeof(float)));
    CHECK(cudaMalloc(&out, rows * sizeof(float)));
    for (int it = 0; it < 3; ++it) scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n);
    if (bs == 64) rowsum<64><<<(rows + 63) / 64, 64>>>(m, out, rows, cols);
    else rowsum<128><<<(rows + 127) / 128, 128>>>(m, out, rows, cols);
    CHECK(cudaDeviceSynchronize());
    printf("done\\n");
    return 0;
}
"""
PYCUDA = """import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
from pycuda.compiler import SourceModule

src = open("kernels.cu").read().split("template")[0]
mod = SourceModule(src.replace("#include <cuda_runtime.h>", ""), no_extern_c=False)
n = 3000
x = drv.mem_alloc(n * 4); y = drv.mem_alloc(n * 4)
mod.get_function("scale")(y, x, np.float32(0.5), np.int32(n), block=(128, 1, 1), grid=((n + 127) // 128, 1))
drv.Context.synchronize()
"""




@pytest.fixture(scope="module")
def app(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    folder = tmp_path_factory.mktemp("capture")
    (folder / ".git").mkdir()  # the workspace
    (folder / "kernels.cu").write_text(KERNELS)
    (folder / "main.cu").write_text(MAIN)
    (folder / "scale.py").write_text(PYCUDA)
    built = subprocess.run([nvcc, "-cudart", "static", "-o", "app", "main.cu"], cwd=folder, capture_output=True,
                           text=True)
    assert built.returncode == 0, built.stderr
    return folder


def test_a_static_cudart_binary_and_a_template_chosen_at_run_time(app: Path):
    r = fsr("capture", "--snapshot-bytes", "10000000", "--", "./app", "5000", "300", "40", "64", cwd=app)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "scale" in r.stdout and "rowsum" in r.stdout
    scale = spec_of(app, "scale")
    print(scale["spec"], scale["proof"])
    assert scale["origin"] == "captured" and scale["proof"]["status"] == "proven"
    # main.cu's launch, drafted and checked against the capture (as `fsr optimize` resolves it), gives the grid
    assert "bench = { n = 5000 }" in scale["spec"] and 'grid = "(n + 255) / 256"' in scale["spec"]
    assert "a = 2.0" in scale["spec"] and "3 launches" in scale["spec"]
    rowsum = spec_of(app, "rowsum")
    print(rowsum["spec"], rowsum["proof"])
    assert rowsum["origin"] == "captured" and rowsum["proof"]["status"] == "proven"
    assert 'template = "64"' in rowsum["spec"] and "rows = 300" in rowsum["spec"] and "cols = 40" in rowsum["spec"]
    # each launch's GPU time in the run, from CUPTI's kernel records (all three of scale's)
    from fsr_lsp.capture import latest_capture

    (scaled,) = latest_capture(app).of("scale")
    assert scaled.count == 3 and scaled.timed == 3 and 500 < scaled.gpu_ns < 5_000_000, scaled
    assert scale["captured_ms"] == scaled.gpu_ns / 1e6 and "GPU time" in r.stdout


def test_a_watched_build_and_the_program_confirmed(app: Path, monkeypatch):
    """`fsr capture --build` records the build's flags; after an edit, `fsr confirm` rebuilds,
    reruns and compares (here the kernel is unchanged: the same output, the same exit status)."""
    nvcc = Path(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    monkeypatch.setenv("PATH", f"{nvcc.parent}:{os.environ['PATH']}")  # the build names nvcc as builds do
    build = "nvcc -O3 --use_fast_math -DUNUSED_FLAG=1 -cudart static -o app main.cu"
    r = fsr("capture", "--build", build, "--", "./app", "5000", "300", "40", "64", cwd=app)
    assert r.returncode == 0 and "recorded how the build compiles main.cu" in r.stderr, r.stdout + r.stderr
    r = fsr("confirm", "kernels.cu", "-k", "scale", cwd=app)
    print(r.stdout, r.stderr)
    assert "exit status 0, as before" in r.stdout and "the same output" in r.stdout
    assert "scale in your program:" in r.stdout
    flags = spec_of(app, "scale")
    assert "--use_fast_math" in flags["build"] and "-DUNUSED_FLAG=1" in flags["build"], flags


def test_a_pycuda_script_and_optimize_with_the_capture(app: Path):
    r = fsr("capture", "--kernel", "scale", "--", sys.executable, "scale.py", cwd=app)
    assert r.returncode == 0, r.stdout + r.stderr
    scale = spec_of(app, "scale")
    print(scale["spec"], scale["proof"])
    assert scale["origin"] == "captured" and scale["proof"]["status"] == "proven"
    assert "bench = { n = 3000 }" in scale["spec"] and "a = 0.5" in scale["spec"]
    r = fsr("optimize", "kernels.cu", "-k", "scale", "--rounds", "1", "--candidates", "2", "--no-sanitize",
            "--time-budget", "90", cwd=app)
    print(r.stdout[-3000:], r.stderr[-2000:])
    assert "took one from the launch captured in a run" in r.stderr  # the plan is said where progress goes
    assert r.returncode == 0 and "Traceback" not in r.stderr  # improved, or no win: the captured spec was proven


CMAKE = """cmake_minimum_required(VERSION 3.18)
project(app LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES native)
add_executable(app main.cu)
target_compile_options(app PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--use_fast_math -DFROM_CMAKE=1>)
"""


def test_a_cmake_build_is_watched(app: Path, tmp_path: Path):
    """CMake starts nvcc by its absolute path: the watcher records it all the same."""
    if shutil.which("cmake") is None:
        pytest.skip("no cmake here")
    folder = tmp_path / "cmake_app"
    shutil.copytree(app, folder, ignore=shutil.ignore_patterns(".fsr", "app"))
    (folder / "CMakeLists.txt").write_text(CMAKE)
    nvcc = Path(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    build = f"cmake -S . -B build -DCMAKE_CUDA_COMPILER={nvcc} > /dev/null && cmake --build build"
    r = fsr("capture", "--build", build, "--", "./build/app", "5000", "300", "40", "64", cwd=folder)
    assert r.returncode == 0 and "recorded how the build compiles" in r.stderr, r.stdout + r.stderr
    flags = spec_of(folder, "scale")
    assert "--use_fast_math" in flags["build"] and "-DFROM_CMAKE=1" in flags["build"], flags
