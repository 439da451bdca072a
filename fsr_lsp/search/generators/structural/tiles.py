"""One thread per output of a matrix product -> the tiled family (matmul/), its first guesses.

The naive kernel of a matrix product gives each thread one output and loops over `k`, reading a
row of A and a column of B from global memory: every operand is read once per output that needs
it, and each multiply waits on a load. The family gives a block a tile of the output and each
thread a tile of it in registers, the operands staged in shared memory a slice of k at a time
(matmul/tile_text.py). Which tile fits a product and a GPU is measured, not guessed: round 0
proposes the first guesses of the space's prior (each a different tile shape), ranked by their
screened time; later rounds climb from the verified leader (tuner/climb.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....evaluator.records import GpuInfo
from ....kernels import Kernel
from ....specs import Spec
from ....specs.expr import ExprError, evaluate
from ...proposal import Proposal
from .matmul.product import NotAProduct, Product, read_product
from .matmul.tile_text import describe, launch, render
from .matmul.tile_space import TileConfig, first_guesses, valid

GENERATOR = "builtin:tiled-product"
FIRST_GUESSES = 4  # tile shapes round 0 screens
DEFAULT_SMS = 132  # the GPU's, where it is not known yet (an H100's)


@dataclass(frozen=True)
class Sizes:
    p: int  # outputs along the tile's rows at the bench size
    q: int
    batch: int
    element: int  # bytes of the accumulator's type


def matrix_product(kernel: Kernel, spec: Spec, definition: str) -> Product | None:
    """The naive product's parts, or None when the kernel is not one."""
    try:
        return read_product(kernel, spec, definition)
    except NotAProduct:
        return None


def bench_sizes(product: Product, spec: Spec) -> Sizes:
    """The product's extents at the bench size (1 where an extent cannot be evaluated)."""
    def value(expr: str | None) -> int:
        if expr is None:
            return 1
        try:
            return max(1, int(evaluate(expr, spec.bench)))
        except (ExprError, TypeError, ValueError):
            return 1

    return Sizes(value(product.extent[0]), value(product.extent[1]), value(product.batch),
                 8 if product.acc_type == "double" else 4)


def tile_proposal(product: Product, c: TileConfig, round_: int = 0, parent: str = "") -> Proposal:
    return Proposal(source=launch(product, c) + render(product, c), generator=GENERATOR, note=describe(c),
                    round=round_, parent=parent)


def tiled_products(kernel: Kernel, spec: Spec, definition: str, gpu: GpuInfo | None = None,
                   round_: int = 0) -> list[tuple[TileConfig, Proposal]]:
    """Round 0's configurations of the family with their candidates, likeliest first; [] when
    the kernel is not a naive matrix product."""
    product = matrix_product(kernel, spec, definition)
    return [] if product is None else first_tiles(product, spec, gpu, round_)


def first_tiles(product: Product, spec: Spec, gpu: GpuInfo | None = None,
                round_: int = 0) -> list[tuple[TileConfig, Proposal]]:
    """Round 0's configurations of a product the recogniser read, with their candidates."""
    s = bench_sizes(product, spec)
    sms = gpu.sm_count if gpu is not None and gpu.sm_count else DEFAULT_SMS
    configs = [c for c in first_guesses(s.p, s.q, s.batch, sms, s.element, FIRST_GUESSES) if valid(c, s.element)]
    return [(c, tile_proposal(product, c, round_)) for c in configs]
