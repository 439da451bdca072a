"""Structs passed by value on a GPU, through the commands: `fsr eval` packs a struct's members
into the launch (after an int, before a float: aligned in the parameter buffer), the sanitizers'
runs pack it the same way, and a rewrite reading one member for another is wrong; `fsr capture`
of a program passing `Matrix` structs gives a spec member by member that `fsr spec --check`
proves."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ..capture.test_capture import SPMV as CPU_SPMV
from ..support.programs import built, captured_and_proven, evaluated

pytestmark = pytest.mark.gpu

DATA = Path(__file__).parent.parent / "data" / "structs"
# the scalars written as the spec gives them: equal to what the original wrote only if the launch
# packed each where the kernel reads it
SHIFTED_GOOD = """__global__ void shifted_saxpy(int n, SaxpyParams p, float bias, float* seen)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        seen[0] = -3.0f; seen[1] = 1.5f; seen[2] = 0.25f; seen[3] = 1.0f; seen[4] = 1.0f;
    }
    if (i >= n) return;
    float y = p.y[i];
    p.y[i] = fmaf(p.alpha, __ldg(p.x + i), (float)p.beta * y) + (p.flag ? bias : 0.0f);
}
"""
SHIFTED_BETA_AS_ALPHA = SHIFTED_GOOD.replace("(float)p.beta * y", "p.alpha * y")


@pytest.fixture(scope="module")
def folder(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    out = tmp_path_factory.mktemp("structs")
    (out / ".git").mkdir()
    for name in ("after_int.cu", "matmul_struct.cu"):
        shutil.copy(DATA / name, out / name)
    return out


def test_a_struct_between_scalars_reaches_the_kernel_and_a_member_read_for_another_is_wrong(folder: Path):
    good = evaluated(folder, "after_int.cu", "shifted_saxpy", SHIFTED_GOOD)
    # the literals equal what the original read at the spec's values (the launch packed each where
    # the kernel reads it): it fails only once the float arguments move, on the range set that
    # runs after the spec's own inputs have all passed
    assert good.returncode == 1 and "wrong on other values of its float arguments" in good.stdout
    assert "input range        fail" in good.stdout
    source = (folder / "after_int.cu").read_text()
    # the original's own text, its guard written another way (the same text would be "unchanged", not run)
    same = evaluated(folder, "after_int.cu", "shifted_saxpy",
                     source[source.index("__global__"):].replace("if (i < n)", "if (n > i)"))
    assert same.returncode == 0 and "verified" in same.stdout
    assert "memcheck" in same.stdout  # the sanitizer's own runs packed the struct too
    bad = evaluated(folder, "after_int.cu", "shifted_saxpy", SHIFTED_BETA_AS_ALPHA)
    assert bad.returncode == 1 and "p.y" in bad.stdout


def test_matmul_over_structs_width_for_stride_is_wrong(folder: Path):
    good = evaluated(folder, "matmul_struct.cu", "MatMulKernel", (DATA / "matmul_struct_good.cu").read_text())
    assert good.returncode == 0 and "verified" in good.stdout
    bad = evaluated(folder, "matmul_struct.cu", "MatMulKernel",
                    (DATA / "matmul_struct_width_for_stride.cu").read_text())
    assert bad.returncode == 1 and "C.elements" in bad.stdout


def test_a_program_passing_structs_is_captured_and_its_spec_proven(folder: Path):
    source = (DATA / "matmul_struct.cu").read_text()
    built(folder, "mm", source[:source.index("/* @fsr")] + source[source.index("*/") + 3:])  # no spec: the capture's
    data = captured_and_proven(folder, "mm", "MatMulKernel")
    assert 'A = { width = "A_width"' in data["spec"] and "A_width = 512" in data["spec"]


@pytest.mark.parametrize("file, kernel, good, bad", [
    ("vector_by_value.cu", "dot4", "VECTOR_LITERALS", ("4.0f * v.w", "4.0f * v.x")),
    ("strided_params.cu", "gather2d", "GATHER_LITERALS", ("c];", "c * 2];")),
])
def test_vectors_and_arrays_by_value_reach_the_kernel_at_their_alignment(folder: Path, file, kernel, good, bad):
    """A float4 after an int (12 bytes of padding in the parameter buffer) and a struct holding
    int arrays and a float4: a rewrite writing the spec's values as literals is verified only if
    every lane reached the original where it reads it."""
    from ..kernels import test_struct_params as cpu

    shutil.copy(DATA / file, folder / file)
    text = getattr(cpu, good)
    ok = evaluated(folder, file, kernel, text)
    assert ok.returncode == 0 and "verified" in ok.stdout
    wrong = evaluated(folder, file, kernel, text.replace(*bad))
    assert wrong.returncode == 1


def test_a_template_params_struct_and_enums(folder: Path):
    from ..kernels import test_struct_params as cpu

    shutil.copy(DATA / "template_params.cu", folder / "template_params.cu")
    source = (DATA / "template_params.cu").read_text()
    good = source[source.index("template <typename T>\n__global__"):].replace("p.scale * p.in[i]", "p.in[i] * p.scale")
    r = evaluated(folder, "template_params.cu", "scale_kernel", good)
    assert r.returncode == 0 and "verified" in r.stdout
    (folder / "enums.cu").write_text(cpu.ENUM_KERNEL)
    wrong = cpu.ENUM_KERNEL[cpu.ENUM_KERNEL.index("__global__"):].replace("mode == Mode::B ? 1.f", "mode == Mode::A ? 1.f")
    assert evaluated(folder, "enums.cu", "act_kernel", wrong).returncode == 1


SPMV_PROGRAM = "#include <cstdio>\n#include <vector>\n" + CPU_SPMV + """
int main() {
    const int rows = 1000, per = 8, n = rows * per, cols = 500;
    std::vector<int> rowptr(rows + 1), col(n);
    std::vector<float> val(n, 0.5f), x(cols, 1.0f);
    for (int r = 0; r <= rows; ++r) rowptr[r] = r * per;
    for (int k = 0; k < n; ++k) col[k] = (k * 37) % cols;
    int *d_rowptr, *d_col; float *d_val, *d_x, *d_y;
    cudaMalloc(&d_rowptr, sizeof(int) * (rows + 1)); cudaMalloc(&d_col, sizeof(int) * n);
    cudaMalloc(&d_val, sizeof(float) * n); cudaMalloc(&d_x, sizeof(float) * cols); cudaMalloc(&d_y, sizeof(float) * rows);
    cudaMemcpy(d_rowptr, rowptr.data(), sizeof(int) * (rows + 1), cudaMemcpyHostToDevice);
    cudaMemcpy(d_col, col.data(), sizeof(int) * n, cudaMemcpyHostToDevice);
    cudaMemcpy(d_val, val.data(), sizeof(float) * n, cudaMemcpyHostToDevice);
    cudaMemcpy(d_x, x.data(), sizeof(float) * cols, cudaMemcpyHostToDevice);
    Csr a{d_rowptr, d_col, d_val, rows};
    spmv<<<(rows + 127) / 128, 128>>>(a, d_x, d_y);
    cudaDeviceSynchronize();
    printf("done\\n");
    return 0;
}
"""


def test_a_structs_members_saved_by_a_capture_are_drawn_in_the_runs_range_and_proven(folder: Path):
    """`fsr capture --snapshot-bytes` of a program passing a CSR matrix as a struct: the members'
    bytes are saved, the spec draws the column indices in the run's range, and it is proven."""
    built(folder, "spmv", SPMV_PROGRAM)
    data = captured_and_proven(folder, "spmv", "spmv", "--snapshot-bytes", "1000000")
    assert "randint(0, 500)" in data["spec"]  # the run's column indices
