"""Kernels that read texture objects: fsr makes the texture the spec describes (a CUDA array
read by tex2D, linear memory read by tex1Dfetch), fills it at every seed, proves the original
and catches a rewrite that reads the wrong texel; a program's own texture is captured."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fsr_lsp.drafting.proof import prove
from fsr_lsp.evaluator import evaluate

from .conftest import QUICK
from ..support.doubles import fsr
from ..support.programs import spec_of

pytestmark = pytest.mark.gpu

SCALE = """/* @fsr
bench = { w = 1024, h = 768 }
tests = [ { w = 17, h = 5 }, { w = 256, h = 100 } ]
grid = ["cdiv(w / 2, 16)", "cdiv(h / 2, 16)"]
block = [16, 16]
[args]
out = "out[(w / 2) * (h / 2)]"
image = "texture[w, h] unsigned char"
w = "w"
h = "h"
*/
__global__ void halve(unsigned char* out, cudaTextureObject_t image, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w / 2 && y < h / 2) out[y * (w / 2) + x] = tex2D<unsigned char>(image, 2 * x, 2 * y);
}
"""
REWRITE = """__global__ void halve(unsigned char* out, cudaTextureObject_t image, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    int half_w = w >> 1;
    if (x < half_w && y < (h >> 1)) out[y * half_w + x] = tex2D<unsigned char>(image, (float)(x << 1), (float)(y << 1));
}
"""
GATHER = """/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
y = "out[n]"
x = "linear[n] float4"
n = "n"
*/
__global__ void sum4(float* y, cudaTextureObject_t x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float4 v = tex1Dfetch<float4>(x, i); y[i] = v.x + v.y + v.z + v.w; }
}
"""


def test_a_2d_texture_is_made_filled_and_its_wrong_texel_caught(evaluator):
    assert prove(evaluator, SCALE, "halve").proven
    r = evaluate(evaluator, SCALE, "halve", REWRITE, QUICK)
    assert r.status == "verified", r.message
    off_by_one = REWRITE.replace("(float)(x << 1)", "(float)((x << 1) + 1)")
    wrong = evaluate(evaluator, SCALE, "halve", off_by_one, QUICK)
    assert wrong.status == "wrong" and wrong.mismatch.buffer == "out", wrong.message


def test_a_linear_texture_read_by_tex1dfetch(evaluator):
    assert prove(evaluator, GATHER, "sum4").proven
    drops_w = GATHER.split("*/", 1)[1].replace(" + v.w", "")
    wrong = evaluate(evaluator, GATHER, "sum4", drops_w, QUICK)
    assert wrong.status == "wrong", wrong.message


PROGRAM = r"""#include <cstdio>
#include <vector>

__global__ void shrink(unsigned char* out, int out_w, float factor, cudaTextureObject_t image)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    out[y * out_w + x] = tex2D<unsigned char>(image, x * factor, y * factor);
}

int main()
{
    const int w = 640, h = 480, out_w = 320, out_h = 240;
    std::vector<unsigned char> pixels(w * h);
    for (int i = 0; i < w * h; ++i) pixels[i] = (unsigned char)(i * 7);
    cudaChannelFormatDesc format = cudaCreateChannelDesc<unsigned char>();
    cudaArray_t array;
    cudaMallocArray(&array, &format, w, h);
    cudaMemcpy2DToArray(array, 0, 0, pixels.data(), w, w, h, cudaMemcpyHostToDevice);
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = array;
    cudaTextureDesc tex = {};
    tex.addressMode[0] = tex.addressMode[1] = cudaAddressModeClamp;
    tex.filterMode = cudaFilterModePoint;
    tex.readMode = cudaReadModeElementType;
    cudaTextureObject_t image = 0;
    cudaCreateTextureObject(&image, &res, &tex, nullptr);
    unsigned char* out;
    cudaMalloc(&out, out_w * out_h);
    shrink<<<dim3(out_w / 16, out_h / 16), dim3(16, 16)>>>(out, out_w, 2.0f, image);
    printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    cudaDestroyTextureObject(image);
    return 0;
}
"""


def test_a_programs_own_texture_is_captured_and_its_spec_proven(tmp_path: Path, evaluator):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    (tmp_path / ".git").mkdir()
    (tmp_path / "shrink.cu").write_text(PROGRAM)
    built = subprocess.run([nvcc, "-o", "shrink", "shrink.cu"], cwd=tmp_path, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    r = fsr("capture", "--", "./shrink", cwd=tmp_path)
    assert r.returncode == 0 and "no error" in r.stdout, r.stdout + r.stderr
    spec = spec_of(tmp_path, "shrink", "shrink.cu")
    print(spec["spec"], spec["proof"])
    assert spec["origin"] == "captured" and spec["proof"]["status"] == "proven"
    assert 'image = "texture[640, 480] unsigned char' in spec["spec"]
