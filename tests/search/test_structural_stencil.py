"""The stencil recogniser and its rewrite (neighbours read from global memory -> the block's tile
and its halo staged in shared memory): the 3x3 blur of the naive set (clamped borders, 2-D), a
1-D convolution (guarded borders, its radius a `#define` of the file) and a guarded 1-D stencil
with literal bounds; what it must leave alone; and, where nvcc is here, that what it writes
compiles to a tile of the size the halo needs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsr_lsp.evaluator.compile.compiler import CompileOptions, compile_kernel
from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.evaluator.job.prepare import kernel_ref
from fsr_lsp.kernels import find_kernel
from fsr_lsp.search.generators.structural import patterns, structural_proposals
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.search_helpers import context
from .test_structural_block_sum import vetted_and_compiled

BLUR = Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "stencil3x3.cu"
# CoffeeBeforeArch's 05_convolution/1d_naive: launched with exactly n threads (n a multiple of the block)
CONVOLUTION = """#define MASK_LENGTH 7

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 256 }, { n = 1024 }, { n = 4096 } ]
edge = false
grid = "n / 256"
block = 256
[args]
array = "in[n]"
mask = "in[7]"
result = "out[n]"
n = "n"
*/
__global__ void convolution_1d(int *array, int *mask, int *result, int n) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int r = MASK_LENGTH / 2;
  int start = tid - r;
  int temp = 0;
  for (int j = 0; j < MASK_LENGTH; j++) {
    if (((start + j) >= 0) && (start + j < n)) {
      temp += array[start + j] * mask[j];
    }
  }
  result[tid] = temp;
}
"""
SPEC_1D = """/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 300 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
in = "in[n]"
out = "out[n]"
s = "3"
n = "n"
*/
"""
HEAD_1D = "__global__ void smooth(const float* in, float* out, int s, int n)\n{\n" \
          "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
GUARDED = HEAD_1D + """    if (i < n) {
        float sum = 0.0f;
        for (int k = -3; k <= 3; ++k) {
            int j = i + k;
            if (j >= 0 && j < n) sum += in[j];
        }
        out[i] = sum;
    }
}
"""
NOT_STENCILS = {
    "an element-wise map": HEAD_1D + "    if (i < n) out[i] = 2.0f * in[i];\n}\n",
    "an offset that is a runtime parameter": HEAD_1D + """    if (i < n) {
        float sum = 0.0f;
        for (int k = -s; k <= s; ++k) {
            int j = i + k;
            if (j >= 0 && j < n) sum += in[j];
        }
        out[i] = sum;
    }
}
""",
    "shared memory already used": HEAD_1D + """    __shared__ float staged[256];
    staged[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (i < n) {
        float sum = 0.0f;
        for (int k = -3; k <= 3; ++k) {
            int j = i + k;
            if (j >= 0 && j < n) sum += in[j];
        }
        out[i] = sum;
    }
}
""",
    "a write at a neighbour's index": HEAD_1D + """    if (i < n - 1) {
        float sum = 0.0f;
        for (int k = -3; k <= 3; ++k) {
            int j = i + k;
            if (j >= 0 && j < n) sum += in[j];
        }
        out[i + 1] = sum;
    }
}
""",
    "borders neither clamped nor checked": HEAD_1D + "    if (i > 0 && i < n - 1) out[i] = in[i - 1] + in[i] + in[i + 1];\n}\n",
    "the input also read at another index": GUARDED.replace("sum += in[j];", "sum += in[j] * in[0];"),
    "an atomic": GUARDED.replace("out[i] = sum;", "atomicAdd(out, sum);"),
}


def stenciled(text: str, name: str = "smooth"):
    ctx = context(text, name)
    return [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition) if p.generator == "builtin:stencil-tile"]


def shared_bytes(text: str, name: str, source: str) -> int:
    """The static shared memory ptxas gives the rewrite: the tile the halo loads must fill."""
    compiled = vetted_and_compiled(text, name, source)
    assert compiled is not None and compiled.resources is not None
    return compiled.resources.shared_bytes


def test_the_naive_blur_reads_its_neighbours_from_an_18x18_tile_loaded_with_its_clamp():
    text = BLUR.read_text()
    (p,) = stenciled(text, "blur3x3")
    assert p.note.startswith("input tile with a halo of 1 in shared memory (18x18 elements of `img`)")
    assert "constexpr int halo = 1;" in p.source
    assert "constexpr int tile_h = 16 + 2 * halo, tile_w = 16 + 2 * halo;  // 18 x 18" in p.source
    assert "__shared__ float tile[tile_h][tile_w];" in p.source
    # the load applies the original's clamp at the tile element's coordinates, every thread a share of it
    assert "for (int t = threadIdx.y * 16 + threadIdx.x; t < tile_h * tile_w; t += 256)" in p.source
    assert "= img[min(max(gy, 0), h - 1) * w + min(max(gx, 0), w - 1)];" in p.source
    # then the barrier, and only after it the early return and the original's loops, in its order
    load, compute = p.source.split("__syncthreads();")
    assert "return" not in load and "if (x >= w || y >= h) return;" in compute
    assert "sum += tile[(y + dy) - tile_y0][(x + dx) - tile_x0];" in compute and "img[" not in compute
    assert "int yy" not in compute and "out[y * w + x] = sum / 9.0f;" in compute
    assert compute.index("for (int dy = -1; dy <= 1; dy++)") < compute.index("for (int dx = -1; dx <= 1; dx++)")
    vetted_and_compiled(text, "blur3x3", p.source)
    ctx = context(text, "blur3x3")
    assert any("read from global memory by 9 threads" in f for f in patterns(ctx.kernel, ctx.spec, ctx.definition))


def test_a_1d_convolution_keeps_its_bounds_check_and_loads_zero_where_it_fails():
    (p,) = stenciled(CONVOLUTION, "convolution_1d")
    # the radius is the file's #define: the compiler checks it is a constant and covers the mask's reach
    assert "constexpr int halo = MASK_LENGTH / 2;" in p.source
    assert "static_assert(MASK_LENGTH - (MASK_LENGTH / 2) - 1 <= halo," in p.source
    assert "constexpr int tile_w = 256 + 2 * halo;" in p.source and "__shared__ int tile[tile_w];" in p.source
    assert "tile[t] = (g >= 0 && g < n) ? array[g] : 0;" in p.source
    load, compute = p.source.split("__syncthreads();")
    assert "if (((start + j) >= 0) && (start + j < n)) {" in compute
    assert "temp += tile[(start + j) - tile_x0] * mask[j];" in compute and "array[" not in compute
    vetted_and_compiled(CONVOLUTION, "convolution_1d", p.source)


def test_a_guarded_1d_stencil_with_literal_bounds_gets_a_262_tile():
    text = SPEC_1D + GUARDED
    (p,) = stenciled(text)
    assert "constexpr int halo = 3;" in p.source and "constexpr int tile_w = 256 + 2 * halo;  // 262" in p.source
    assert "tile[t] = (g >= 0 && g < n) ? in[g] : 0.0f;" in p.source
    load, compute = p.source.split("__syncthreads();")
    assert "if (j >= 0 && j < n) sum += tile[j - tile_x0];" in compute and "if (i < n) {" in compute
    assert "if (i < n)" not in load
    vetted_and_compiled(text, "smooth", p.source)


@pytest.mark.nvcc
def test_the_tiles_are_as_large_as_the_halo_needs():
    """18 x 18 floats for a radius of 1 on 16x16 blocks; 256 + 2 * 3 = 262 for a radius of 3 on
    blocks of 256 (the convolution's from MASK_LENGTH 7, which only the compiler sees)."""
    (blur,) = stenciled(BLUR.read_text(), "blur3x3")
    assert shared_bytes(BLUR.read_text(), "blur3x3", blur.source) == 18 * 18 * 4
    (conv,) = stenciled(CONVOLUTION, "convolution_1d")
    assert shared_bytes(CONVOLUTION, "convolution_1d", conv.source) == 262 * 4
    (guarded,) = stenciled(SPEC_1D + GUARDED)
    assert shared_bytes(SPEC_1D + GUARDED, "smooth", guarded.source) == 262 * 4


@pytest.mark.nvcc
def test_a_radius_the_mask_outreaches_is_refused_by_the_compiler():
    """The static_assert is what makes a symbolic radius safe: an even mask reaches one less ahead
    (fine), but a halo taken from a name that does not cover the loop fails to compile."""
    (conv,) = stenciled(CONVOLUTION, "convolution_1d")
    broken = conv.source.replace("constexpr int halo = MASK_LENGTH / 2;", "constexpr int halo = MASK_LENGTH / 4;")
    assert broken != conv.source
    src = SourceText(CONVOLUTION)
    kernel = find_kernel(src, "convolution_1d")
    spec = parse_spec(src, kernel).spec
    vetted = check_candidate(src, kernel, spec, broken)
    compiled = compile_kernel(vetted.source, kernel_ref(kernel, spec), CompileOptions(arch="sm_90a", compiler="nvcc"))
    assert not compiled.ok and "the stencil reads no further than the halo" in compiled.log


@pytest.mark.parametrize("case", sorted(NOT_STENCILS))
def test_what_is_no_stencil_is_left_alone(case):
    assert stenciled(SPEC_1D + NOT_STENCILS[case]) == [], case


def test_a_transpose_and_a_block_the_spec_does_not_fix_are_left_alone():
    transpose = Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "transpose.cu"
    assert stenciled(transpose.read_text(), "transpose_naive") == []
    text = BLUR.read_text()
    assert stenciled(text.replace("block = [16, 16]", "block = [16, 16, 2]"), "blur3x3") == []
    assert stenciled(text.replace("block = [16, 16]", "block = 256"), "blur3x3") == []


def test_rows_a_thread_run_every_clamped_read_and_check_only_the_write():
    """The 3x3 blur clamps every read into the image: each row's reads run unchecked (the compiler
    keeps the rows two outputs share in registers) and only its write is checked; a stencil
    whose reads are guarded instead keeps its bounds check as `continue` for that row alone."""
    from fsr_lsp.search.generators.structural.stencil_tile import ROWS, stencil_rows

    from ..support.search_helpers import context

    text = (Path(__file__).parent.parent.parent / "bench" / "naive_kernels" / "stencil3x3.cu").read_text()
    ctx = context(text, "blur3x3")
    out = stencil_rows(ctx.kernel, ctx.spec, ctx.definition)
    assert [r.note for r in out] == [f"{n} outputs a thread down each column, pointers __restrict__" for n in ROWS]
    first = out[0]
    assert 'grid = ["cdiv(w, 16)", "cdiv(cdiv(h, 16), 4)"]' in first.launch
    assert "const bool fsr_outside = (x >= w || y >= h);" in first.definition
    assert "if (!fsr_outside) out[y * w + x] = sum / 9.0f;" in first.definition and "return" not in first.definition
    assert "float* __restrict__ img, float* __restrict__ out" in first.definition
    guarded = re.sub(r"int yy = min\(max\(y \+ dy, 0\), h - 1\);\s*int xx = min\(max\(x \+ dx, 0\), w - 1\);\s*"
                     r"sum \+= img\[yy \* w \+ xx\];",
                     "int yy = y + dy, xx = x + dx;\n if (yy >= 0 && yy < h && xx >= 0 && xx < w) sum += img[yy * w + xx];",
                     text)
    assert guarded != text
    ctx = context(guarded, "blur3x3")
    kept = stencil_rows(ctx.kernel, ctx.spec, ctx.definition)
    assert kept and all("fsr_outside" not in r.definition and "if (x >= w || y >= h) continue;" in r.definition
                        for r in kept)
