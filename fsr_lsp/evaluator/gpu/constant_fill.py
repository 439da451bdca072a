"""Values for the `__constant__` data a program sets at run time (job/constants.py says which and
why): drawn per input set, the same bytes in every module of the job."""

from __future__ import annotations

import zlib
from typing import Any

from .buffers import storage_dtype
from .common import JobContext

FLOAT_KINDS = ("float32", "float64", "float16", "bfloat16")
WHOLE_LIMIT = 8  # whole numbers in [0, WHOLE_LIMIT): indices into the arrays such tables index


def fill_constants(ctx: JobContext, seed: int) -> None:
    """Every run-time constant of the job, drawn for `seed` and its own name (two tables of one
    type never hold the same values, so reading one for the other shows), in each module that
    holds it: the original's, the candidate's, and the double-precision original's (as doubles
    where its copy is twice as wide). One no module holds is said once."""
    torch = ctx.torch
    for plan in ctx.job.constants:
        sizes = [(k, k.global_size(plan.name)) for k in (ctx.original, ctx.candidate) if k is not None]
        size = max((s for _, s in sizes), default=0)
        if not size:
            note = f"__constant__ `{plan.name}` is not in the compiled module (renamed or unused): left as loaded"
            if note not in ctx.result.warnings:
                ctx.result.warnings.append(note)
            continue
        values = _draw(torch, plan.dtype, size, seed ^ zlib.crc32(plan.name.encode()))
        data = _bytes(torch, values)
        for kernel, own in sizes:
            if own:
                kernel.set_global(plan.name, data)
        wide = ctx.wide
        wide_size = wide.global_size(plan.name) if wide is not None else 0
        if wide is not None and wide_size:
            twice = plan.dtype == "float32" and wide_size == 2 * size
            wide.set_global(plan.name, _bytes(torch, values.double()) if twice else data)


def _draw(torch: Any, dtype: str, nbytes: int, seed: int) -> Any:
    kind = storage_dtype(torch, dtype)
    count = nbytes // torch.empty((), dtype=kind).element_size()
    generator = torch.Generator().manual_seed(seed ^ 0xC0)
    if dtype in FLOAT_KINDS:
        return torch.randn(count, generator=generator, dtype=torch.float64).to(kind)
    high = 2 if dtype == "bool" else WHOLE_LIMIT
    return torch.randint(0, high, (count,), generator=generator, dtype=torch.int64).to(kind)


def _bytes(torch: Any, values: Any) -> bytes:
    return values.contiguous().view(torch.uint8).numpy().tobytes()
