"""A configuration as a candidate: the rewritten definition, with an @fsr block when the launch
changes (the evaluator reads the candidate's launch from it)."""

from __future__ import annotations

import dataclasses

from ....evaluator.records import GpuInfo
from ....kernels import Kernel
from ....specs import Spec, render_spec
from ....specs.expr import has_literal, replace_literal
from ...proposal import Proposal
from ..structural.syntax import add_launch_bounds, add_restrict
from . import transforms
from .space import Config, Space


def render(c: Config, space: Space, kernel: Kernel, spec: Spec, definition: str, gpu: GpuInfo,
           round_: int = 0) -> Proposal | None:
    """None when a transform's precondition fails (the config cannot be written)."""
    text = definition
    block = c.block or space.original_block
    threads = space.threads(c)
    grid = list(spec.grid) if not c.block else [_rescale(g, old, new) for g, old, new in zip(spec.grid, spec.block, block)]
    smem = spec.smem if not c.block else _rescale_smem(spec.smem, space.original_block, block)
    if c.restrict:
        text = add_restrict(text, kernel, space.const_names if c.restrict == "const" else frozenset())
    if c.unroll:
        text = transforms.unroll_loops(text, c.unroll)
    if c.grid_stride_waves:
        rewritten = transforms.to_grid_stride(text)
        if rewritten is None:
            return None
        text = rewritten
        resident = max(1, min(32, space.max_threads_per_sm // threads))
        grid = [f"min({grid[0]}, {gpu.sm_count * resident * c.grid_stride_waves})"]
    if c.privatize:
        if space.private is None:
            return None
        text = transforms.privatize_atomics(text, *space.private)
    if c.static_block:
        text = transforms.static_block(text, block)
    if c.min_blocks or (kernel.launch_bounds and c.block):
        text = add_launch_bounds(text, kernel.name, threads, c.min_blocks)
    launch_changed = tuple(grid) != tuple(spec.grid) or tuple(block) != tuple(spec.block) or smem != spec.smem
    if launch_changed:
        text = render_spec(dataclasses.replace(spec, grid=tuple(grid), block=tuple(block), smem=smem)) + text
    flags = ("-use_fast_math",) if c.fast_math else ()
    return Proposal(source=text, generator=f"builtin:{c.describe()}", note=c.describe(), flags=flags, round=round_)


def _rescale(expr: str | int, old: int, new: int) -> str | int:
    """`cdiv(n, 256)` and `(n + 255) / 256` alike follow a block of 256 becoming `new`."""
    if has_literal(expr, old) and old > 2 and has_literal(expr, old - 1):
        expr = replace_literal(expr, old - 1, new - 1)
    return replace_literal(expr, old, new)


def _rescale_smem(smem: str | int, old: tuple[int, ...], new: tuple[int, ...]) -> str | int:
    """Dynamic shared memory sized by the block (`256 * 4` for a 256-thread block)."""
    old_threads, new_threads = _product(old), _product(new)
    if old_threads > 8 and has_literal(smem, old_threads):
        return replace_literal(smem, old_threads, new_threads)
    return smem


def _product(block: tuple[int, ...]) -> int:
    n = 1
    for b in block:
        n *= b
    return n
