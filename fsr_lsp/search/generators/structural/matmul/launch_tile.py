"""A naive matrix product staged through shared tiles under its own launch: the one tiling a
program can take when its launch cannot follow a new one (`<<<blocks, threads>>>` with a
`dim3 threads(16, 16)` the file sets elsewhere, or a launch in another file).

The tiled family (tile_text.py) chooses its own block and grid, which is faster where the launch
can change. This one keeps the original's square block of T x T threads and its grid: each
thread still computes the output it computed, and the block stages a T-wide slice of the first
factor's rows and of the second factor's columns through shared memory, so each element loaded
from global memory is read T times from shared memory. The sum runs over k in the original's
order, into the original's accumulator, so the results are the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass

from .....kernels import Kernel
from .....specs import Spec
from ..syntax import dims
from .layout import adjacent
from .product import Index, NotAProduct, Product, read_product

SIDES = (8, 16, 32)  # square blocks whose side is the slice's width: T x T threads, T*(T+1) elements a tile


@dataclass(frozen=True)
class LaunchTile:
    definition: str
    side: int
    note: str


def launch_tile(kernel: Kernel, spec: Spec, definition: str) -> LaunchTile | None:
    """The rewrite, or None where the kernel is no naive product or its block is not square."""
    try:
        product = read_product(kernel, spec, definition)
    except NotAProduct:
        return None
    block = dims(spec.block)
    if len(block) != 2 or block[0] != block[1] or block[0] not in SIDES:
        return None
    side = int(block[0])
    return LaunchTile(_text(product, side), side,
                      f"the product staged through {side}x{side} shared tiles under the original's launch "
                      f"(each loaded element read {side} times from shared memory)")


def _text(p: Product, t: int) -> str:
    axis = "xy"
    pd, qd = axis[p.p.dim], axis[p.q.dim]
    before = "".join(f"    {line}\n" for line in p.before)
    epilogue = "".join(f"        {line}\n" for line in p.epilogue)
    return (
        f"{p.signature.rstrip()}\n{{\n"
        f"{before}"
        f"    {p.p.type} {p.p.name} = blockIdx.{pd} * blockDim.{pd} + threadIdx.{pd};\n"
        f"    {p.q.type} {p.q.name} = blockIdx.{qd} * blockDim.{qd} + threadIdx.{qd};\n"
        f"    __shared__ {p.acc_type} fsr_first[{t}][{t} + 1];  // [row of the tile][k of the slice]\n"
        f"    __shared__ {p.acc_type} fsr_second[{t}][{t} + 1];  // [k of the slice][column of the tile]\n"
        f"    {p.acc_type} {p.acc} = {p.init};\n"
        f"    for ({p.k_type} fsr_k0 = 0; fsr_k0 < ({p.bound}); fsr_k0 += {t}) {{\n"
        f"{_load(p, 'fsr_first', p.p, p.a, p.p_guard, index_first=True)}"
        f"{_load(p, 'fsr_second', p.q, p.b, p.q_guard, index_first=False)}"
        f"        __syncthreads();\n"
        f"#pragma unroll\n"
        f"        for (int fsr_kk = 0; fsr_kk < {t}; ++fsr_kk)\n"
        f"            {p.acc} += fsr_first[threadIdx.{pd}][fsr_kk] * fsr_second[fsr_kk][threadIdx.{qd}];\n"
        f"        __syncthreads();\n"
        f"    }}\n"
        f"    if ({p.guard}) {{\n"
        f"{epilogue}"
        f"    }}\n"
        f"}}\n")


def _load(p: Product, tile: str, index: Index, factor: str, guard: str, index_first: bool) -> str:
    """One thread's element of a slice: the tile's index (a row of the first factor, a column of
    the second) and k each from one of the thread's two coordinates, neighbouring threads along
    whichever of the two is adjacent in memory (coalesced loads); the factor, its guard and the
    index's name read as the kernel wrote them, inside a scope of their own."""
    along_index = adjacent(factor, index.name, p.k) == "index"
    local_index, local_k = ("threadIdx.x", "threadIdx.y") if along_index else ("threadIdx.y", "threadIdx.x")
    d = "xy"[index.dim]
    at = f"[{local_index}][{local_k}]" if index_first else f"[{local_k}][{local_index}]"
    return (f"        {{\n"
            f"            {index.type} {index.name} = blockIdx.{d} * blockDim.{d} + {local_index};\n"
            f"            {p.k_type} {p.k} = fsr_k0 + {local_k};\n"
            f"            {tile}{at} = ({guard}) && {p.k} < ({p.bound}) ? {factor} : ({p.acc_type})0;\n"
            f"        }}\n")
