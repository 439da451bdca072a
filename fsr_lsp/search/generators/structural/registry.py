"""The structural rewrites, each listed once: its name, its recogniser, the pattern in words (for
a model's prompt) and its candidates. `structural/__init__.py` reads the list both ways (the
patterns for a prompt, the proposals for a round), running each recogniser once per call. The
order is the proposals' order: the likeliest big win of a kernel first (a warp per row, then the
online softmax measured beside it, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ....evaluator.records import GpuInfo
from ....kernels import Kernel
from ....specs import Spec
from ...proposal import Proposal
from .atomic_sum import atomic_sums
from .block_sum import block_sum
from .online_softmax import online_softmax
from .rows import rows_under_launch, warp_per_row
from .stencil_tile import patterns_line as stencil_line, stencil_rows, stencil_tile
from .matmul.launch_tile import launch_tile
from .tiles import first_tiles, matrix_product
from .transpose_tile import transpose_tile
from .vector_map import vector_map

Found = Any  # what a recogniser read of the kernel (its own record type), or a list of them
Find = Callable[[Kernel, Spec, str, "GpuInfo | None"], Found]


@dataclass(frozen=True)
class StructuralRewrite:
    name: str
    find: Find  # None or [] where the kernel is not of this pattern
    candidates: Callable[[Found, Spec, "GpuInfo | None", int], list[Proposal]]
    line: Callable[[Found], str] | None = None  # the pattern in words; None: said by another entry
    # A variant that keeps the original's launch, slower than the entry it varies: proposed only where the
    # program's launch cannot follow a new one (search/apply.py's `launch_follows`), there all that applies.
    fixed_launch_only: bool = False


def _launched(generator: str) -> Callable[[Found, Spec, GpuInfo | None, int], list[Proposal]]:
    """One candidate with its own launch block above the definition."""
    def candidates(r: Found, spec: Spec, gpu: GpuInfo | None, round_: int) -> list[Proposal]:
        block = f'/* @fsr\ngrid = "{r.grid}"\nblock = {r.block}\n*/\n'
        return [Proposal(source=block + r.definition, generator=generator, note=r.note, round=round_)]
    return candidates


def _same_launch(generator: str) -> Callable[[Found, Spec, GpuInfo | None, int], list[Proposal]]:
    def candidates(r: Found, spec: Spec, gpu: GpuInfo | None, round_: int) -> list[Proposal]:
        return [Proposal(source=r.definition, generator=generator, note=r.note, round=round_)]
    return candidates


def _atomic_candidates(found: Found, spec: Spec, gpu: GpuInfo | None, round_: int) -> list[Proposal]:
    order = {"grid": 0, "block": 1, "warp": 2}  # fewest atomics first
    return [Proposal(source=a.launch + a.definition, generator=f"builtin:atomic-{a.scope}-sum", note=a.note, round=round_)
            for a in sorted(found, key=lambda a: order[a.scope])]


def _transpose_candidates(found: Found, spec: Spec, gpu: GpuInfo | None, round_: int) -> list[Proposal]:
    return [Proposal(source=t.launch + t.definition, note=t.note, round=round_,
                     generator=f"builtin:transpose-{'tile' if t.elements == 1 else 'rows'}-{t.exchanged}")
            for t in found]


def _stencil_row_candidates(found: Found, spec: Spec, gpu: GpuInfo | None, round_: int) -> list[Proposal]:
    return [Proposal(source=r.launch + r.definition, generator="builtin:stencil-rows", note=r.note, round=round_)
            for r in found]


def _vector_candidates(m: Found, spec: Spec, gpu: GpuInfo | None, round_: int) -> list[Proposal]:
    block = f'/* @fsr\ngrid = "{m.grid}"\nblock = {m.block}\n*/\n'
    return [Proposal(source=m.helper + block + m.definition,  # the block right above the kernel
                     generator="builtin:vector-map", note=m.note, round=round_)]


def _rows_line(rows: Found) -> str:
    return (f"one thread walks each row's columns ({rows.loops} column loop{'s' if rows.loops > 1 else ''}, "
            f"{rows.row_count} rows): neighbouring threads read addresses a row apart, so the loads are "
            "uncoalesced, and few rows leave the GPU idle. One warp (or block) per row, with the column loops "
            "strided over its lanes and shuffle reductions, is the usual fix; fsr's own such rewrite is "
            "measured in the first round")


def _block_sum_line(summed: Found) -> str:
    return (f"a shared-memory tree sums each block over `{summed.array}`: log2(block) barriers with most lanes "
            "idle. Warp shuffles (each warp in registers, then the warps' sums) are the usual fix, and more "
            "elements a thread where the output allows it; fsr's own shuffle rewrite is measured in the first "
            "round")


def _atomic_line(atomics: Found) -> str:
    return (f"every thread adds into `{atomics[0].pointer}` with its own atomicAdd: the atomics on one "
            "address are serialised. Summing each warp's (or block's) values first, by shuffles, and "
            "adding once a warp or block is the usual fix; fsr's own such rewrite is measured in the first "
            "round")


def _transpose_line(_: Found) -> str:
    return ("each thread copies one element to a transposed index: one of the two global accesses walks "
            "a warp down a column (a transaction per thread). Staging the block's elements in a shared "
            "tile (with a padding column) so that reads and writes both go along rows is the usual fix; "
            "fsr's own such rewrite is measured in the first round")


def _product_line(product: Found) -> str:
    return (f"one thread computes each output of a matrix product, reading a row and a column from global "
            f"memory over `{product.bound}` (each operand loaded once per output that needs it). Tiles of "
            "the output a block, staged in shared memory, with several outputs a thread in registers, "
            "128-bit loads and the next slice loaded while this one is multiplied, are the usual fix; "
            "fsr's own family of such rewrites is measured in the first round and tuned after it")


def _vector_line(mapped: Found) -> str:
    return (f"an element-wise map: each thread loads and stores one 32-bit element of "
            f"{', '.join(f'`{b}`' for b in mapped.buffers)}. 128-bit vector accesses (float4) and several "
            "elements a thread cut the instructions per byte moved; fsr's own such rewrite (four elements "
            "a thread, a scalar path for unaligned pointers) is measured in the first round")


def _softmax_line(_: Found) -> str:
    return ("a softmax walks each row three times (the max; the exponentials and their sum; the division): "
            "an online softmax takes the max and the sum in one pass (the sum rescaled whenever the max "
            "grows, (max, sum) pairs combined across lanes), then writes the outputs in a second pass; "
            "fsr's own such rewrite (one warp per row) is measured in the first round")


def _without_gpu(find: Callable[[Kernel, Spec, str], Found]) -> Find:
    return lambda kernel, spec, definition, gpu: find(kernel, spec, definition)


REWRITES: tuple[StructuralRewrite, ...] = (
    StructuralRewrite("warp per row", _without_gpu(warp_per_row), _launched("builtin:warp-per-row"), _rows_line),
    StructuralRewrite("warp per row under its launch", _without_gpu(rows_under_launch),
                      _same_launch("builtin:warp-per-row-same-launch"), fixed_launch_only=True),
    StructuralRewrite("online softmax", _without_gpu(online_softmax), _launched("builtin:online-softmax"),
                      _softmax_line),
    StructuralRewrite("block sum", _without_gpu(block_sum), _same_launch("builtin:block-sum"), _block_sum_line),
    StructuralRewrite("atomic sum", atomic_sums, _atomic_candidates, _atomic_line),
    StructuralRewrite("transpose", _without_gpu(transpose_tile), _transpose_candidates, _transpose_line),
    StructuralRewrite("stencil tile", _without_gpu(stencil_tile), _same_launch("builtin:stencil-tile"), stencil_line),
    StructuralRewrite("stencil rows", _without_gpu(stencil_rows), _stencil_row_candidates),
    StructuralRewrite("tiled product", _without_gpu(matrix_product),
                      lambda product, spec, gpu, round_: [p for _, p in first_tiles(product, spec, gpu, round_)],
                      _product_line),
    StructuralRewrite("tiled product under its launch", _without_gpu(launch_tile),
                      _same_launch("builtin:product-tile-same-launch"), fixed_launch_only=True),
    StructuralRewrite("vector map", _without_gpu(vector_map), _vector_candidates, _vector_line),
)


def recognised(kernel: Kernel, spec: Spec, definition: str, gpu: GpuInfo | None = None,
               launch_fixed: bool = False) -> list[tuple[StructuralRewrite, Found]]:
    """Each rewrite whose pattern the kernel has, with what its recogniser read, in order; the
    variants under the original's launch only where `launch_fixed`."""
    out = []
    for rewrite in REWRITES:
        if rewrite.fixed_launch_only and not launch_fixed:
            continue
        found = rewrite.find(kernel, spec, definition, gpu)
        if found is not None and found != []:
            out.append((rewrite, found))
    return out
