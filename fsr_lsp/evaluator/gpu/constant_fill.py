"""Values for the `__constant__` data a program sets at run time (job/constants.py says which and
why): drawn per input set, the same bytes in every module of the job."""

from __future__ import annotations

from typing import Any

from .buffers import storage_dtype
from .common import JobContext

FLOAT_KINDS = ("float32", "float64", "float16", "bfloat16")
WHOLE_LIMIT = 8  # whole numbers in [0, WHOLE_LIMIT): indices into the arrays such tables index


def fill_constants(ctx: JobContext, seed: int) -> None:
    """Every run-time constant of the job, drawn for `seed`, in the original's module, the
    candidate's and the double-precision original's (as doubles where its copy is twice as wide)."""
    torch = ctx.torch
    for plan in ctx.job.constants:
        size = ctx.original.global_size(plan.name)
        if not size:
            continue  # compiled away: nothing reads it
        values = _draw(torch, plan.dtype, size, seed)
        data = _bytes(torch, values)
        for kernel in (ctx.original, ctx.candidate):
            if kernel is not None and kernel.global_size(plan.name):
                kernel.set_global(plan.name, data)
        wide = ctx.wide
        if wide is not None and wide.global_size(plan.name):
            twice = plan.dtype == "float32" and wide.global_size(plan.name) == 2 * size
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
