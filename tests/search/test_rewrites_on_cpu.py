"""Every structural rewrite, judged by the evaluator with its kernels run on the CPU
(tests/cuda_on_cpu): the rewrites fsr proposes are verified on the kernels they are made for,
and rewrites broken the way hand-written ones break (a barrier left out, a tile loaded a row
short, a tail or half a shuffle tree dropped, an online softmax's sum not rescaled) are not.
The same cases run on a GPU in tests/gpu/test_structural*_gpu.py; these run wherever a C++
compiler does, CI included.

A fiber runs each CUDA thread until it waits at a barrier, so code that needs a barrier it does
not have reads what no thread has written yet: the emulator is harsher on missing barriers
than a GPU, where the race may go unseen. A vector access off its alignment fails the launch,
as it faults on a GPU (x86 would just load it)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from fsr_lsp.search.generators.structural import structural_proposals  # noqa: E402

from . import test_structural_atomic_sum as atomic  # noqa: E402
from . import test_structural_online_softmax as softmax  # noqa: E402
from . import test_structural_stencil as stencil  # noqa: E402
from . import test_structural_tiles as tiles  # noqa: E402
from . import test_structural_vector_map as maps  # noqa: E402
from ..support.cuda_on_cpu import cxx, evaluate_on_cpu  # noqa: E402
from ..support.search_helpers import context  # noqa: E402

pytestmark = pytest.mark.skipif(cxx() is None and os.environ.get("FSR_REQUIRE_NVCC") != "1",
                                reason="no C++ compiler (g++) to build kernels for the CPU")

ROOT = Path(__file__).parent.parent.parent
NAIVE = ROOT / "bench" / "naive_kernels"
FORMS = ROOT / "bench" / "matmul_forms"
ACCURACY = Path(__file__).parent.parent / "gpu" / "kernels" / "accuracy"

# (source, kernel, a bench size the CPU runs in about a second)
CASES = {
    "gelu": ((NAIVE / "gelu.cu").read_text(), "gelu_forward", "{ N = 100003 }"),
    # passed as `buffer + 1`: the vector map's alignment check must send every element the scalar way
    "gelu, its input one element into its buffer": (
        (NAIVE / "gelu.cu").read_text().replace('inp = "in[N] normal(0, 3)"', 'inp = "in[-1 : N] normal(0, 3)"'),
        "gelu_forward", "{ N = 100003 }"),
    "reduction": ((NAIVE / "reduction.cu").read_text(), "reduce_sum", "{ n = 20000 }"),
    "transpose": ((NAIVE / "transpose.cu").read_text(), "transpose_naive", "{ rows = 100, cols = 70 }"),
    "sgemm": ((NAIVE / "sgemm.cu").read_text(), "sgemm_naive", "{ M = 96, N = 64, K = 80 }"),
    "softmax": ((NAIVE / "softmax.cu").read_text(), "softmax_forward", "{ B = 64, C = 1024 }"),
    "softmax, the sum without a store": ((ROOT / "examples" / "softmax.cu").read_text(), "softmax",
                                         "{ rows = 64, cols = 1000 }"),
    "softmax, a guard that returns": ((ACCURACY / "softmax.cu").read_text(), "softmax", "{ N = 40, C = 777 }"),
    # a 32-thread block, as HeCBench's softmax launches it: under that launch each warp takes its block's 32 rows
    "softmax, a guard that returns, blocks of 32": (
        (ACCURACY / "softmax.cu").read_text().replace('"cdiv(N, 64)"', '"cdiv(N, 32)"').replace("block = 64", "block = 32"),
        "softmax", "{ N = 100, C = 300 }"),
    "softmax, the textbook shape (a double sum, divided by its cast)": (softmax.TEXTBOOK, "row_softmax",
                                                                         "{ N = 40, C = 1000 }"),
    "layernorm": ((NAIVE / "layernorm.cu").read_text(), "layernorm_forward", "{ N = 64, C = 768 }"),
    "stencil3x3": ((NAIVE / "stencil3x3.cu").read_text(), "blur3x3", "{ h = 100, w = 90 }"),
    "rowsum, 8 x 50,000": ((ACCURACY / "rowsum.cu").read_text(), "rowsum", None),
    "1-D convolution, int": (stencil.CONVOLUTION, "convolution_1d", "{ n = 4096 }"),
    "guarded 1-D stencil": (stencil.SPEC_1D + stencil.GUARDED, "smooth", "{ n = 2000 }"),
    **{f"atomic sum, {name}": (atomic.SPEC + text, "atomic_total", "{ n = 8000 }")
       for name, text in atomic.SUMS.items()},
    **{f"matrix product, {name}": (tiles.SPEC + text, "gemm", "{ M = 64, N = 48, K = 40 }")
       for name, text in tiles.SHAPES.items()},
    # passed as `buffer + 1`: no 128-bit load of A may be taken, its groups are misaligned
    "matrix product, A one element into its buffer": (
        tiles.SPEC.replace('A = "in[M * K]"', 'A = "in[-1 : M * K]"') + tiles.SHAPES["an if guard, alpha and beta"],
        "gemm", "{ M = 64, N = 48, K = 40 }"),
    "matrix product, x walks C's rows": ((FORMS / "sgemm_xrows.cu").read_text(), "gemm_naive",
                                         "{ M = 70, N = 90, K = 45 }"),
    "matrix product, B column-major": ((FORMS / "sgemm_colmajor_b.cu").read_text(), "matmul_bt",
                                       "{ M = 70, N = 90, K = 45 }"),
    "matrix product, double, column-major with leading dimensions": (
        (FORMS / "dgemm_colmajor.cu").read_text(), "dgemm_cm", "{ M = 70, N = 40, K = 33 }"),
    "matrix product, batched": ((FORMS / "sgemm_batched.cu").read_text(), "bmm",
                                "{ batch = 2, M = 40, N = 36, K = 20 }"),
    **{f"element-wise, {name}": (text, kernel, "{ N = 50001 }") for name, (text, kernel) in maps.MAPS.items()},
}


def proposals(source: str, kernel: str) -> dict[str, str]:
    """The structural rewrites of the kernel, by label (a label given twice numbered)."""
    ctx = context(source, kernel)
    out: dict[str, str] = {}
    for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, gpu=ctx.gpu, launch_fixed=True):
        label = p.generator if p.generator not in out else f"{p.generator} #{sum(k.startswith(p.generator) for k in out) + 1}"
        out[label] = p.source
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_structural_rewrite_is_verified_on_the_kernels_it_is_made_for(case):
    source, kernel, bench = CASES[case]
    rewrites = proposals(source, kernel)
    assert rewrites, f"no structural rewrite of {case}"
    for label, text in rewrites.items():
        result = evaluate_on_cpu(source, kernel, text, bench)
        assert result.status == "verified", (label, result.message, text)


def broken(case: str, label: str, old: str, new: str, count: int = 1) -> tuple[str, str, str, str]:
    """A rewrite fsr proposes with `old` replaced by `new` (which must occur in it)."""
    source, kernel, bench = CASES[case]
    text = proposals(source, kernel)[label]
    assert re.search(old, text), f"{old!r} is not in the {label} rewrite of {case}"
    return source, kernel, bench, re.sub(old, new, text, count=count)


BROKEN = {
    "the transpose of several elements a thread, a row of threads short of the tile":
        lambda: broken("transpose", "builtin:transpose-rows-write", r"fsr_j < 32; fsr_j \+= 8", "fsr_j < 24; fsr_j += 8"),
    "the transpose of several elements a thread without its barrier":
        lambda: broken("transpose", "builtin:transpose-rows-write", r"__syncthreads\(\);", ""),
    "the transpose tile without its barrier":
        lambda: broken("transpose", "builtin:transpose-tile-write", r"__syncthreads\(\);", ""),
    "the stencil tile loaded a row short":
        lambda: broken("stencil3x3", "builtin:stencil-tile", r"t < tile_h \* tile_w", "t < (tile_h - 1) * tile_w"),
    "the stencil's rows a thread, the write's bounds check left out (rows past the image written)":
        lambda: broken("stencil3x3", "builtin:stencil-rows", r"if \(!fsr_outside\) ", ""),
    "the stencil's rows a thread, a row short":
        lambda: broken("stencil3x3", "builtin:stencil-rows", r"fsr_r < 4;", "fsr_r < 3;"),
    "the 1-D stencil tile without its halo on the right":
        lambda: broken("guarded 1-D stencil", "builtin:stencil-tile", r"t < tile_w", "t < tile_w - halo"),
    "the vector map without its scalar tail":
        lambda: broken("gelu", "builtin:vector-map", r"for \(int i = vectors \* 4 \+ first; i < N",
                       "for (int i = vectors * 4 + first; i < vectors * 4"),
    "the __half vector map with the eighth element of each vector left out":
        lambda: broken("element-wise, GELU over __half", "builtin:vector-map",
                       r"\n\s*fsr_gelu_half_element\(out_lanes\[7\], inp_lanes\[7\]\);", ""),
    "the vector map without its alignment check, its input one element into its buffer":
        lambda: broken("gelu, its input one element into its buffer", "builtin:vector-map", r"if \(!aligned\) \{",
                       "if (false) {"),
    "the warp per row, its shuffle tree a level short":
        lambda: broken("softmax", "builtin:warp-per-row", r"= 16;", "= 8;", count=0),
    "the warp per row under its launch, the block's last rows never taken":
        lambda: broken("softmax", "builtin:warp-per-row-same-launch", r"row < \(blockIdx\.x \+ 1\) \* blockDim\.x;",
                       "row < blockIdx.x * blockDim.x + blockDim.x / 2;"),
    "the warp per row under its launch, each warp's turns a row apart (warps share rows, rows are left)":
        lambda: broken("softmax, a guard that returns, blocks of 32", "builtin:warp-per-row-same-launch",
                       r"i \+= \(blockDim\.x / 32\)", "i += 2"),
    "the warp per row under its launch, the lane's column stride a warp short":
        lambda: broken("softmax, a guard that returns, blocks of 32", "builtin:warp-per-row-same-launch",
                       r"j \+= 32", "j += 16", count=0),
    "the online softmax without the sum's rescale when the max grows":
        lambda: broken("softmax", "builtin:online-softmax", r"sum \*= expf\(maxval - v\); ", ""),
    "the online softmax of the textbook shape without the sum's rescale when the max grows":
        lambda: broken("softmax, the textbook shape (a double sum, divided by its cast)", "builtin:online-softmax",
                       r"total \*= expf\(mx - v\); ", ""),
    "the online softmax's butterfly adding the other lane's sum unscaled":
        lambda: broken("softmax, the sum without a store", "builtin:online-softmax",
                       r"other_sum \* expf\(other_max - larger\)", "other_sum"),
    "the grid-stride atomic sum, striding a block's width only (elements summed twice, others never)":
        lambda: broken("atomic sum, guarded", "builtin:atomic-grid-sum", r"fsr_i \+= \(long long\)blockDim\.x \* gridDim\.x",
                       "fsr_i += (long long)blockDim.x"),
    "the block sum, the last warp's partial left out":
        lambda: broken("reduction", "builtin:block-sum", r"threadIdx\.x < 8 \?", "threadIdx.x < 7 ?"),
    "the tiled product without the barrier after each slice":
        lambda: broken("sgemm", "builtin:tiled-product", r"__syncthreads\(\);\n        fsr_buf \^= 1;",
                       "fsr_buf ^= 1;"),
    "the tiled product storing the next slice over the one being read":
        lambda: broken("sgemm", "builtin:tiled-product", r"fsr_stash\(fsr_buf \^ 1\)", "fsr_stash(fsr_buf)"),
    "the tiled product taking 128-bit loads without the alignment check, A one element into its buffer":
        lambda: broken("matrix product, A one element into its buffer", "builtin:tiled-product",
                       r" && \(reinterpret_cast<unsigned long long>\(fsr_at\[0\]\) & 15ull\) == 0", "", count=0),
    "the tiled product writing every output of its tile, the original's guard left out":
        lambda: broken("matrix product, B column-major", "builtin:tiled-product", r"if \(row < M && col < N\) \{",
                       "if (true) {"),
    "the product tiled under its own launch, without the barrier after each slice":
        lambda: broken("sgemm", "builtin:product-tile-same-launch", r"__syncthreads\(\);\n    \}", "}"),
    "the product tiled under its own launch, its last partial slice left out":
        lambda: broken("matrix product, an if guard, alpha and beta", "builtin:product-tile-same-launch",
                       r"fsr_k0 < \(K\);", "fsr_k0 + 16 <= (K);"),
    "the product tiled under its own launch, the first factor's slice loaded with the other's k":
        lambda: broken("matrix product, x walks C's rows", "builtin:product-tile-same-launch",
                       r"= fsr_k0 \+ threadIdx\.x;", "= fsr_k0 + threadIdx.y;"),
    "the tiled product of a column-major double product, the last slice's tail not loaded":
        lambda: broken("matrix product, double, column-major with leading dimensions", "builtin:tiled-product",
                       r"l < \(K\);", "l < (K) - 1;", count=0),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_rewrite_broken_as_hand_written_ones_break_is_not_verified(case):
    source, kernel, bench, text = BROKEN[case]()
    result = evaluate_on_cpu(source, kernel, text, bench)
    assert result.status in ("wrong", "crashed"), (result.status, result.message, text)


def test_a_barrier_that_not_every_thread_reaches_is_a_crash_named_as_a_deadlock():
    """Half a warp at `__syncthreads`, the other half at a shuffle: neither barrier can open."""
    source, kernel, bench = CASES["gelu"]
    text = ("__global__ void gelu_forward(float* out, const float* inp, int N)\n{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    float v = i < N ? inp[i] : 0.0f;\n"
            "    if (threadIdx.x % 32 < 16) __syncthreads();\n"
            "    else v += __shfl_down_sync(0xffffffffu, v, 1);\n    if (i < N) out[i] = v;\n}\n")
    result = evaluate_on_cpu(source, kernel, text, bench)
    assert result.status == "crashed" and "deadlock" in result.message, result.message


def test_the_original_against_itself_is_unchanged_and_an_identical_copy_under_a_new_launch_is_verified():
    """The emulator runs what it is given: the same code under another block size gives the same answers."""
    source, kernel, bench = CASES["gelu"]
    ctx = context(source, kernel)
    assert evaluate_on_cpu(source, kernel, ctx.definition, bench).status == "unchanged"
    relaunched = '/* @fsr\ngrid = "cdiv(N, 128)"\nblock = 128\n*/\n' + ctx.definition
    result = evaluate_on_cpu(source, kernel, relaunched, bench)
    assert result.status == "verified", result.message


PROGRAM = """#include <cstdio>
#define ROWS 300
#define COLS 200

__global__ void transpose(const float *in, float *out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

int main()
{
    float *d_in, *d_out;
    cudaMalloc(&d_in, ROWS * COLS * sizeof(float));
    cudaMalloc(&d_out, ROWS * COLS * sizeof(float));
    dim3 block(32, 8);
    dim3 grid((COLS + block.x - 1) / block.x, (ROWS + block.y - 1) / block.y);
    transpose<<<grid, block>>>(d_in, d_out, ROWS, COLS);
    cudaDeviceSynchronize();
    printf("%s\\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
"""


def test_a_programs_kernel_is_drafted_proven_and_rewritten_as_fsr_optimize_does_it(tmp_path):
    """The user's path without a capture, every stage real but the GPU: the spec drafted from the
    program's own launch (`fsr spec`), proven on the original through the evaluator's worker
    process (the host code, which is no C++, left out as it is where nvcc cannot build it),
    then each structural rewrite of the proven spec evaluated there."""
    from fsr_lsp.drafting.resolver import kernel_specs
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.drafting.proof import prove
    from fsr_lsp.evaluator.api import evaluate

    from ..support.cuda_on_cpu import cpu_evaluator

    path = tmp_path / "transpose.cu"
    path.write_text(PROGRAM)
    (drafted,) = kernel_specs([path])
    assert drafted.origin == "drafted" and drafted.spec is not None, drafted.problems
    with cpu_evaluator() as evaluator:
        proof = prove(evaluator, PROGRAM, "transpose", drafted.spec)
        assert proof.proven, proof.message
        placed = place_spec(PROGRAM, "transpose", proof.spec).text
        rewrites = proposals(placed, "transpose")
        assert {"builtin:transpose-tile-write", "builtin:transpose-tile-read", "builtin:transpose-rows-write",
                "builtin:transpose-rows-read"} <= set(rewrites)
        assert all(k.startswith(("builtin:transpose-tile-", "builtin:transpose-rows-")) for k in rewrites), rewrites
        for label, text in rewrites.items():
            result = evaluate(evaluator, placed, "transpose", text)
            assert result.status == "verified", (label, result.message)
        wrong = rewrites["builtin:transpose-tile-write"].replace("__syncthreads();", "")
        assert evaluate(evaluator, placed, "transpose", wrong).status == "wrong"


STENCIL_PROGRAM = """#include <cstdio>
#define N 4096
#define RADIUS 3
#define BLOCK_SIZE 16

__global__ void stencil_1d(int *in, int *out) {
    __shared__ int temp[BLOCK_SIZE + 2 * RADIUS];
    int gindex = threadIdx.x + blockIdx.x * blockDim.x;
    int lindex = threadIdx.x + RADIUS;
    temp[lindex] = in[gindex];
    if (threadIdx.x < RADIUS) {
        temp[lindex - RADIUS] = in[gindex - RADIUS];
        temp[lindex + BLOCK_SIZE] = in[gindex + BLOCK_SIZE];
    }
    __syncthreads();
    int result = 0;
    for (int offset = -RADIUS; offset <= RADIUS; offset++)
        result += temp[lindex + offset];
    out[gindex] = result;
}

int main() {
    int *d_in, *d_out;
    int size = (N + 2 * RADIUS) * sizeof(int);
    cudaMalloc((void **)&d_in, size);
    cudaMalloc((void **)&d_out, size);
    stencil_1d<<<N / BLOCK_SIZE, BLOCK_SIZE>>>(d_in + RADIUS, d_out + RADIUS);
    cudaDeviceSynchronize();
    return 0;
}
"""


def test_a_kernel_passed_a_pointer_into_its_buffer_reads_before_it_and_only_a_rewrite_that_stays_there_passes(tmp_path):
    """A training course's 1-D stencil is launched on `d_in + RADIUS` and reads `in[-RADIUS]`: the
    draft gives its buffers windows (`in[-(3) : ...]`), the proof makes the output it writes in
    part `inout`, a correct rewrite is verified, and one reading an element before its window
    (the guard band's poison) is not."""
    from fsr_lsp.drafting.resolver import kernel_specs
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.drafting.proof import prove
    from fsr_lsp.evaluator.api import evaluate

    from ..support.cuda_on_cpu import cpu_evaluator

    path = tmp_path / "stencil_1d.cu"
    path.write_text(STENCIL_PROGRAM)
    (drafted,) = kernel_specs([path])
    assert drafted.spec is not None and 'in = "in[-(3) :' in drafted.spec, drafted.spec
    with cpu_evaluator() as evaluator:
        proof = prove(evaluator, STENCIL_PROGRAM, "stencil_1d", drafted.spec)
        assert proof.proven, proof.message
        assert 'out = "inout[-(3) :' in proof.spec, proof.spec
        placed = place_spec(STENCIL_PROGRAM, "stencil_1d", proof.spec).text
        definition = context(placed, "stencil_1d").definition
        unrolled = definition.replace("    for (int offset", "    #pragma unroll\n    for (int offset")
        before = definition.replace("in[gindex - RADIUS];", "in[gindex - RADIUS - 1];")
        assert unrolled != definition and before != definition
        assert evaluate(evaluator, placed, "stencil_1d", unrolled).status == "verified"
        assert evaluate(evaluator, placed, "stencil_1d", before).status == "wrong"


REDUCE_HEAD = "__global__ void reduce_sum(const float* x, float* total, int n)\n{\n"


@pytest.mark.parametrize("case, body, status, words", [
    ("shared memory read before any thread writes it",
     "    __shared__ float block_total;\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    __syncthreads();\n    if (i < n) atomicAdd(&block_total, x[i]);\n    __syncthreads();\n"
     "    if (threadIdx.x == 0) atomicAdd(total, block_total);\n}\n", "wrong", ""),
    ("a shuffle over lanes that have returned",
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n    float v = x[i];\n"
     "    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);\n"
     "    if (threadIdx.x % 32 == 0) atomicAdd(total, v);\n}\n", "crashed", "a lane that had returned"),
])
def test_what_is_undefined_on_a_gpu_fails_on_the_cpu_too(case, body, status, words):
    """Shared memory starts as garbage (each block's, poisoned), and a shuffle that reads a lane
    which has returned reads nothing: on the CPU, where zeros and stale values would pass, both fail."""
    source, kernel, bench = CASES["reduction"]
    result = evaluate_on_cpu(source, kernel, REDUCE_HEAD + body, bench)
    assert result.status == status and words in result.message, (case, result.message)


def test_dynamic_shared_memory_declared_at_file_scope_is_the_launchs():
    """`extern __shared__ float sdata[];` above the kernel, where most code declares it."""
    source, kernel, bench = CASES["reduction"]
    at_file_scope = source.replace("    extern __shared__ float sdata[];\n", "").replace(
        "__global__ void reduce_sum", "extern __shared__ float sdata[];\n\n__global__ void reduce_sum")
    assert at_file_scope.count("extern __shared__") == 1 and at_file_scope != source
    definition = context(at_file_scope, kernel).definition
    unrolled = definition.replace("    for (unsigned int s", "    #pragma unroll\n    for (unsigned int s")
    assert unrolled != definition
    result = evaluate_on_cpu(at_file_scope, kernel, unrolled, bench)
    assert result.status == "verified", result.message


def test_each_block_finds_its_shared_memory_poisoned_not_zero_nor_what_the_last_block_left():
    import numpy as np

    from fsr_lsp.evaluator.compile.compiler import KernelRef
    from fsr_lsp.evaluator.records import LaunchPlan

    from ..support.cuda_on_cpu import EmulatedKernel, compile_on_cpu

    source = ("__global__ void seen(unsigned* out)\n{\n    __shared__ unsigned cell;\n"
              "    extern __shared__ unsigned dynamic[];\n    __syncthreads();\n"
              "    out[2 * blockIdx.x] = cell;\n    out[2 * blockIdx.x + 1] = dynamic[0];\n"
              "    __syncthreads();\n    cell = 7;\n    dynamic[0] = 7;\n}\n")
    built = compile_on_cpu(source, KernelRef("seen"))
    assert built.ok, built.log
    out = np.zeros(4, np.uint32)
    EmulatedKernel(built.binary).launch([out.ctypes.data], LaunchPlan((2, 1, 1), (1, 1, 1), 16))
    assert list(out) == [0xCDCDCDCD] * 4


def test_the_grid_stride_atomic_sum_is_verified_where_each_thread_strides_over_many_elements():
    """On the search's GPU the grid of one wave is larger than a CPU-sized bench needs, so each
    thread would add one element: here a GPU of 2 SMs (4 blocks resident) makes every thread
    walk its stride many times, the tail included (8000 = 7 x 1024 + 832)."""
    import dataclasses

    from fsr_lsp.search.generators.structural.atomic_sum import atomic_sums

    for name in ("guarded", "braced, &p[0], a product"):
        source = atomic.SPEC + atomic.SUMS[name]
        ctx = context(source, "atomic_total")
        tiny = dataclasses.replace(ctx.gpu, sm_count=2, max_threads_per_sm=512)
        (grid,) = [a for a in atomic_sums(ctx.kernel, ctx.spec, ctx.definition, tiny) if a.scope == "grid"]
        assert 'grid = "min(cdiv(n, 256), 4)"' in grid.launch
        result = evaluate_on_cpu(source, "atomic_total", grid.launch + grid.definition, "{ n = 8000 }")
        assert result.status == "verified", (name, result.message, grid.definition)
