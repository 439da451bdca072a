"""The atomic-sum recogniser and its rewrites (every thread's atomicAdd into one address ->
one a warp, one a block): the shapes naive sums are written in, what it must leave alone,
and, where nvcc is here, that what it writes compiles."""

from __future__ import annotations

import pytest

from fsr_lsp.search.generators.structural import patterns, structural_proposals

from ..support.search_helpers import context
from .test_structural_block_sum import vetted_and_compiled

SPEC = """/* @fsr
bench = { n = 8388608 }
tests = [ { n = 1 }, { n = 1000 }, { n = 100003 } ]
grid = "cdiv(n, 256)"
block = 256
rtol = 1e-3
atol = 1e-5
[args]
x = "in[n]"
total = "inout[1] zeros()"
n = "n"
*/
"""
SUMS = {
    "guarded": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
               "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicAdd(total, x[i]);\n}\n",
    "braced, &p[0], a product": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
                                "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                "    if (i < n) {\n        atomicAdd(&total[0], x[i] * x[i]);\n    }\n}\n",
    "a loop before it": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n    float acc = 0.0f;\n"
                        "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {\n"
                        "        if (x[i] < 0) break;\n        acc += x[i];\n    }\n    atomicAdd(total, acc);\n}\n",
}
NOT_SUMS = {
    "an early return": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n"
                       "    atomicAdd(total, x[i]);\n}\n",
    "inside a loop": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
                     "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)\n"
                     "        atomicAdd(total, x[i]);\n}\n",
    "an address per thread": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (i < n) atomicAdd(&total[i % 1], x[i]);\n}\n",
    "one thread a block already": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
                                  "    __shared__ float s[256];\n    s[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];\n"
                                  "    __syncthreads();\n    if (threadIdx.x == 0) atomicAdd(total, s[0]);\n}\n",
    "an else branch": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "    if (i < n) atomicAdd(total, x[i]); else atomicAdd(total, 1.0f);\n}\n",
    "two atomics on it": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
                         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicAdd(total, x[i]);\n"
                         "    if (i < n) atomicAdd(total, 1.0f);\n}\n",
    "its old value used": "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
                          "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    float old = atomicAdd(total, x[i]);\n"
                          "    (void)old;\n}\n",
}


def sums(text: str):
    ctx = context(text, "atomic_total")
    return [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
            if p.generator.startswith("builtin:atomic-")]


@pytest.mark.parametrize("case", sorted(SUMS))
def test_an_atomic_sum_by_every_thread_gets_a_block_and_a_warp_rewrite(case):
    text = SPEC + SUMS[case]
    block, warp = sums(text)
    assert (block.generator, warp.generator) == ("builtin:atomic-block-sum", "builtin:atomic-warp-sum")
    assert "fsr_warp_sums[8]" in block.source and "if (threadIdx.x == 0) atomicAdd(" in block.source
    assert "if ((threadIdx.x & 31) == 0) atomicAdd(" in warp.source
    for p in (block, warp):
        assert p.source.count("atomicAdd(") == 1 and "__shfl_down_sync(0xffffffffu, fsr_sum, fsr_offset)" in p.source
        if case != "a loop before it":  # the guard is a select: the read stays guarded
            assert "(i < n) ? (float)(x[i]" in p.source, p.source
        vetted_and_compiled(text, "atomic_total", p.source)
    ctx = context(text, "atomic_total")
    assert any("with its own atomicAdd" in f for f in patterns(ctx.kernel, ctx.spec, ctx.definition))


@pytest.mark.parametrize("case", sorted(NOT_SUMS))
def test_what_is_no_atomic_sum_by_every_thread_is_left_alone(case):
    assert sums(SPEC + NOT_SUMS[case]) == [], case


def test_an_integer_count_gets_it_and_a_block_of_no_warp_multiple_does_not():
    count = SPEC.replace('total = "inout[1] zeros()"', 'total = "inout[1] zeros()"').replace("float* total", "int* total")
    text = count + SUMS["guarded"].replace("float* total", "int* total").replace("x[i]);", "x[i] > 0.5f ? 1 : 0);")
    block, warp = sums(text)
    assert "int fsr_sum = (i < n) ? (int)(x[i] > 0.5f ? 1 : 0) : 0;" in warp.source, warp.source
    vetted_and_compiled(text, "atomic_total", warp.source)
    assert sums(SPEC.replace("block = 256", "block = 48") + SUMS["guarded"]) == []


def test_where_the_gpu_is_known_the_plain_shape_also_strides_over_a_grid_of_one_wave():
    """`i = <global index>; if (i < n) atomicAdd(p, v);` (as the olcf exercise writes it, a size_t
    index and a macro bound): a third rewrite, first in the list, with a grid of one wave of
    resident blocks. A body with more in it, or no GPU, gets none."""
    from fsr_lsp.search.generators.structural.atomic_sum import atomic_sums

    from ..support.search_helpers import GPU

    olcf = "#define N 8388608\n" + SPEC + (
        "__global__ void atomic_total(const float* x, float* total, int n)\n{\n"
        "    size_t idx = threadIdx.x + blockDim.x * blockIdx.x;\n    if (idx < N) atomicAdd(total, x[idx]);\n}\n")
    for text in (SPEC + SUMS["guarded"], SPEC + SUMS["braced, &p[0], a product"], olcf):
        ctx = context(text, "atomic_total")
        proposals = [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, gpu=GPU)
                     if p.generator.startswith("builtin:atomic-")]
        assert [p.generator for p in proposals] == ["builtin:atomic-grid-sum", "builtin:atomic-block-sum",
                                                     "builtin:atomic-warp-sum"]
        grid = proposals[0].source
        assert 'grid = "min(cdiv(n, 256), 1056)"' in grid and "block = 256" in grid  # 132 SMs x 8 blocks
        assert grid.count("atomicAdd(") == 1 and "fsr_i += (long long)blockDim.x * gridDim.x" in grid
        vetted_and_compiled(text, "atomic_total", grid, launch_changed=True)
    assert "size_t idx = (size_t)fsr_i;" in grid and "fsr_i < (long long)(N)" in grid
    for name in ("a loop before it",):
        ctx = context(SPEC + SUMS[name], "atomic_total")
        assert [a.scope for a in atomic_sums(ctx.kernel, ctx.spec, ctx.definition, GPU)] == ["warp", "block"]
    ctx = context(SPEC + SUMS["guarded"], "atomic_total")
    assert [a.scope for a in atomic_sums(ctx.kernel, ctx.spec, ctx.definition)] == ["warp", "block"]


def test_the_grid_stride_form_refuses_a_guard_or_value_a_strided_loop_would_change():
    """A guard with more than the bound in it (`i < n && n > 4` read as one bound would sum
    x[0] alone), or a value that reads the launch (`x[i] * blockIdx.x`): no grid-stride form
    (found in review)."""
    from fsr_lsp.search.generators.structural.atomic_sum import atomic_sums

    from ..support.search_helpers import GPU

    base = SPEC + SUMS["guarded"]
    for old, new in (("if (i < n)", "if (i < n && n > 4)"), ("x[i]);", "x[i] * blockIdx.x);"),
                     ("if (i < n)", "if (i < (n > 4 ? n : 4))"), ("x[i]);", "x[i] / gridDim.x);")):
        text = base.replace(old, new)
        assert text != base
        ctx = context(text, "atomic_total")
        assert "grid" not in [a.scope for a in atomic_sums(ctx.kernel, ctx.spec, ctx.definition, GPU)], new
    ctx = context(base.replace("if (i < n)", "if (i < n * 2 - (n + 0))"), "atomic_total")
    assert "grid" in [a.scope for a in atomic_sums(ctx.kernel, ctx.spec, ctx.definition, GPU)]  # arithmetic is fine
