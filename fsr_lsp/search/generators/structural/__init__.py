"""Structural rewrites: a new split of the work, each a transform behind a recogniser of the
pattern it applies to (one thread walking a row -> a warp per row). A transform that does not
apply says nothing; one that applies gives a candidate verified like any other, its label
saying what it did. They go first in a search: where one applies, it is the likeliest big win.
"""

from __future__ import annotations

from ....evaluator.records import GpuInfo
from ....kernels import Kernel
from ....specs import Spec
from ...proposal import Proposal
from .atomic_sum import atomic_sums
from .block_sum import block_sum
from .online_softmax import online_softmax
from .rows import warp_per_row
from .stencil_tile import patterns_line as stencil_line, stencil_rows, stencil_tile
from .tiles import matrix_product, tiled_products
from .transpose_tile import transpose_tile
from .vector_map import vector_map


def patterns(kernel: Kernel, spec: Spec, definition: str) -> list[str]:
    """What the recognisers found, in words a model can act on (for its prompt)."""
    found = []
    summed = block_sum(kernel, spec, definition)
    if summed is not None:
        found.append(f"a shared-memory tree sums each block over `{summed.array}`: log2(block) barriers with most lanes "
                     "idle. Warp shuffles (each warp in registers, then the warps' sums) are the usual fix, and more "
                     "elements a thread where the output allows it; fsr's own shuffle rewrite is measured in the first "
                     "round")
    atomics = atomic_sums(kernel, spec, definition)
    if atomics:
        found.append(f"every thread adds into `{atomics[0].pointer}` with its own atomicAdd: the atomics on one "
                     "address are serialised. Summing each warp's (or block's) values first, by shuffles, and "
                     "adding once a warp or block is the usual fix; fsr's own such rewrite is measured in the first "
                     "round")
    if transpose_tile(kernel, spec, definition):
        found.append("each thread copies one element to a transposed index: one of the two global accesses walks "
                     "a warp down a column (a transaction per thread). Staging the block's elements in a shared "
                     "tile (with a padding column) so that reads and writes both go along rows is the usual fix; "
                     "fsr's own such rewrite is measured in the first round")
    product = matrix_product(kernel, spec, definition)
    if product is not None:
        found.append(f"one thread computes each output of a matrix product, reading a row and a column from global "
                     f"memory over `{product.bound}` (each operand loaded once per output that needs it). Tiles of "
                     "the output a block, staged in shared memory, with several outputs a thread in registers, "
                     "128-bit loads and the next slice loaded while this one is multiplied, are the usual fix; "
                     "fsr's own family of such rewrites is measured in the first round and tuned after it")
    mapped = vector_map(kernel, spec, definition)
    if mapped is not None:
        found.append(f"an element-wise map: each thread loads and stores one 32-bit element of "
                     f"{', '.join(f'`{b}`' for b in mapped.buffers)}. 128-bit vector accesses (float4) and several "
                     "elements a thread cut the instructions per byte moved; fsr's own such rewrite (four elements "
                     "a thread, a scalar path for unaligned pointers) is measured in the first round")
    stencil = stencil_tile(kernel, spec, definition)
    if stencil is not None:
        found.append(stencil_line(stencil))
    if online_softmax(kernel, spec, definition) is not None:
        found.append("a softmax walks each row three times (the max; the exponentials and their sum; the division): "
                     "an online softmax takes the max and the sum in one pass (the sum rescaled whenever the max "
                     "grows, (max, sum) pairs combined across lanes), then writes the outputs in a second pass; "
                     "fsr's own such rewrite (one warp per row) is measured in the first round")
    rows = warp_per_row(kernel, spec, definition)
    if rows is None:
        return found
    return found + [f"one thread walks each row's columns ({rows.loops} column loop{'s' if rows.loops > 1 else ''}, "
            f"{rows.row_count} rows): neighbouring threads read addresses a row apart, so the loads are "
            "uncoalesced, and few rows leave the GPU idle. One warp (or block) per row, with the column loops "
            "strided over its lanes and shuffle reductions, is the usual fix; fsr's own such rewrite is "
            "measured in the first round"]


def structural_proposals(kernel: Kernel, spec: Spec, definition: str, round_: int = 0,
                         gpu: GpuInfo | None = None) -> list[Proposal]:
    """Every structural rewrite that applies; `gpu`, where known, sizes those whose launch
    depends on it (a grid of one wave)."""
    out = []
    rows = warp_per_row(kernel, spec, definition)
    if rows is not None:
        block = f'/* @fsr\ngrid = "{rows.grid}"\nblock = {rows.block}\n*/\n'
        out.append(Proposal(source=block + rows.definition, generator="builtin:warp-per-row", note=rows.note,
                            round=round_))
    online = online_softmax(kernel, spec, definition)
    if online is not None:  # right after the warp per row: both measured in the first round
        block = f'/* @fsr\ngrid = "{online.grid}"\nblock = {online.block}\n*/\n'
        out.append(Proposal(source=block + online.definition, generator="builtin:online-softmax", note=online.note,
                            round=round_))
    summed = block_sum(kernel, spec, definition)
    if summed is not None:
        out.append(Proposal(source=summed.definition, generator="builtin:block-sum", note=summed.note, round=round_))
    atomics = atomic_sums(kernel, spec, definition, gpu)
    order = {"grid": 0, "block": 1, "warp": 2}  # fewest atomics first
    for atomic in sorted(atomics, key=lambda a: order[a.scope]):
        out.append(Proposal(source=atomic.launch + atomic.definition, generator=f"builtin:atomic-{atomic.scope}-sum",
                            note=atomic.note, round=round_))
    for transposed in transpose_tile(kernel, spec, definition):
        out.append(Proposal(source=transposed.launch + transposed.definition,
                            generator=f"builtin:transpose-{'tile' if transposed.elements == 1 else 'rows'}-"
                                      f"{transposed.exchanged}",
                            note=transposed.note, round=round_))
    stencil = stencil_tile(kernel, spec, definition)
    if stencil is not None:
        out.append(Proposal(source=stencil.definition, generator="builtin:stencil-tile", note=stencil.note,
                            round=round_))
    for rows in stencil_rows(kernel, spec, definition):
        out.append(Proposal(source=rows.launch + rows.definition, generator="builtin:stencil-rows", note=rows.note,
                            round=round_))
    out += [p for _, p in tiled_products(kernel, spec, definition, gpu, round_)]
    mapped = vector_map(kernel, spec, definition)
    if mapped is not None:
        block = f'/* @fsr\ngrid = "{mapped.grid}"\nblock = {mapped.block}\n*/\n'
        out.append(Proposal(source=mapped.helper + block + mapped.definition,  # the block right above the kernel
                            generator="builtin:vector-map", note=mapped.note, round=round_))
    return out
