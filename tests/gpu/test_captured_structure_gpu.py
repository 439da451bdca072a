"""Kernels that index by their data, captured with their inputs saved: a histogram of letters
(values drawn in the run's range keep its bins in bounds at every size) and a compaction by a
scan's offsets (random offsets collide, so the offsets and flags take the run's own bytes, the
data stays random). `fsr spec --check` proves both."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ..support.doubles import fsr
from ..support.programs import spec_of

pytestmark = pytest.mark.gpu

PROGRAM = r"""#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void letter_histogram(const char* text, int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[(text[i] - 'a') / 4], 1);
}

__global__ void compact(float* out, const float* in, const int* keep, const int* offsets, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && keep[i]) out[offsets[i]] = in[i];
}

int main(int argc, char** argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4096;
    std::vector<char> text(n);
    std::vector<float> in(n);
    std::vector<int> keep(n), offsets(n);
    srand(7);
    int kept = 0;
    for (int i = 0; i < n; ++i) {
        text[i] = 'a' + rand() % 26;
        in[i] = rand() / (float)RAND_MAX - 0.5f;
        keep[i] = in[i] > 0.f;
        offsets[i] = kept;
        kept += keep[i];
    }
    char* d_text; int *d_bins, *d_keep, *d_offsets; float *d_in, *d_out;
    cudaMalloc(&d_text, n); cudaMalloc(&d_bins, 7 * sizeof(int));
    cudaMalloc(&d_in, n * sizeof(float)); cudaMalloc(&d_out, n * sizeof(float));
    cudaMalloc(&d_keep, n * sizeof(int)); cudaMalloc(&d_offsets, n * sizeof(int));
    cudaMemcpy(d_text, text.data(), n, cudaMemcpyHostToDevice);
    cudaMemset(d_bins, 0, 7 * sizeof(int));
    cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(d_keep, keep.data(), n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(d_offsets, offsets.data(), n * sizeof(int), cudaMemcpyHostToDevice);
    letter_histogram<<<(n + 255) / 256, 256>>>(d_text, d_bins, n);
    compact<<<(n + 255) / 256, 256>>>(d_out, d_in, d_keep, d_offsets, n);
    printf("%s, %d kept\n", cudaGetErrorString(cudaDeviceSynchronize()), kept);
    return 0;
}
"""


@pytest.fixture(scope="module")
def captured(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    folder = tmp_path_factory.mktemp("structure")
    (folder / ".git").mkdir()
    (folder / "index.cu").write_text(PROGRAM)
    built = subprocess.run([nvcc, "-o", "index", "index.cu"], cwd=folder, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    r = fsr("capture", "--snapshot-bytes", "1000000", "--", "./index", cwd=folder)
    assert r.returncode == 0 and "no error" in r.stdout, r.stdout + r.stderr
    return folder


def test_a_histogram_of_letters_is_proven_at_every_size_with_letters(captured: Path):
    spec = spec_of(captured, "letter_histogram", "index.cu")
    print(spec["spec"], spec["proof"])
    assert spec["origin"] == "captured" and spec["proof"]["status"] == "proven"
    assert "randint(97, 123)" in spec["spec"] and "zeros()" in spec["spec"]


def test_a_compaction_by_offsets_takes_the_runs_offsets_and_keeps_its_data_random(captured: Path):
    spec = spec_of(captured, "compact", "index.cu")
    print(spec["spec"], spec["proof"])
    assert spec["origin"] == "captured" and spec["proof"]["status"] == "proven"
    proven = spec["spec"]  # as the proof left it
    assert 'offsets = "in[n] captured()"' in proven and "captured()" not in proven.split("in = ", 1)[1].splitlines()[0]
    assert "verified at the captured size only" in spec["proof"]["message"]
