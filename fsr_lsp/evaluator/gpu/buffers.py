"""Device buffers for one size: random inputs from a seed, poisoned outputs, comparisons.

Unsigned types live in signed torch storage of the same width: only their bits matter
to the kernel, and integer outputs are compared exactly.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any, NamedTuple

from ..job.captured_buffers import read_saved
from ..records import ArgPlan, Mismatch

FLOATS = ("float16", "bfloat16", "float32", "float64")
POISON_BYTE = {"A": 0xA5, "B": 0x5A}


def storage_dtype(torch: Any, dtype: str) -> Any:
    return {
        "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
        "int32": torch.int32, "uint32": torch.int32, "int64": torch.int64, "uint64": torch.int64,
        "int16": torch.int16, "uint16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.uint8,
    }[dtype]


def generate(torch: Any, device: Any, arg: ArgPlan, generator: Any) -> Any:
    """Fresh random contents for an input buffer; never zeros unless the spec says `zeros()`
    (an accumulator's start)."""
    assert arg.init is not None
    n = arg.numel
    init = arg.init
    if init.kind == "captured":
        return fresh_over(torch, captured(torch, arg).to(device), arg, generator)
    real = torch.float64 if arg.dtype == "float64" else torch.float32
    if init.kind == "normal":
        values = torch.randn(n, generator=generator, device=device, dtype=real) * init.hi + init.lo
    elif init.kind == "fill":
        kind = real if arg.dtype in FLOATS else torch.int64
        values = torch.full((n,), init.lo if arg.dtype in FLOATS else int(init.lo), device=device, dtype=kind)
    elif init.kind == "uniform":
        values = torch.rand(n, generator=generator, device=device, dtype=real) * (init.hi - init.lo) + init.lo
    else:
        values = torch.randint(int(init.lo), int(init.hi), (n,), generator=generator, device=device, dtype=torch.int64)
    if init.domain is not None and arg.dtype in FLOATS:  # the spec's domain(lo, hi): callers pass nothing else
        values = values.clamp(*init.domain)
    return values.to(storage_dtype(torch, arg.dtype))


def refill(torch: Any, t: Any, arg: ArgPlan, generator: Any) -> None:
    """New random contents for a buffer in place, one pass over it: the timed runs draw fresh
    inputs every repetition, and at 2^24 elements a generate-then-copy costs as much as the kernel."""
    init = arg.init
    assert init is not None
    if init.kind == "captured":
        t.copy_(fresh_over(torch, captured(torch, arg).to(t.device), arg, generator))
    elif init.kind == "fill":
        t.fill_(init.lo if arg.dtype in FLOATS else int(init.lo))
    elif arg.dtype not in FLOATS or init.kind == "randint":
        lo, hi = int(init.lo), int(init.hi)
        info = torch.iinfo(t.dtype) if not t.dtype.is_floating_point else None
        if info is not None and (lo < info.min or hi - 1 > info.max):  # unsigned values in signed storage
            t.copy_(torch.randint(lo, hi, t.shape, generator=generator, device=t.device, dtype=torch.int64).to(t.dtype))
        else:
            t.random_(lo, hi, generator=generator)
    elif init.kind == "normal":
        t.normal_(init.lo, init.hi, generator=generator)
    else:
        t.uniform_(init.lo, init.hi, generator=generator)
    if init.domain is not None and arg.dtype in FLOATS and init.kind not in ("fill", "captured"):
        t.clamp_(*init.domain)


FRESH_ELEMENTS = 256  # drawn afresh over a run's bytes at every input set (bench_inputs = "captured")


def fresh_over(torch: Any, values: Any, arg: ArgPlan, generator: Any) -> Any:
    """`values` (a run's bytes) with a few elements drawn afresh as the spec draws the buffer at
    its other sizes, at places drawn afresh: every input set differs from every other, while a
    check kernel prints a few lines, not millions. `values` as they are without `arg.fresh`."""
    if arg.fresh is None or not values.numel():
        return values
    k = min(FRESH_ELEMENTS, values.numel())
    at = torch.randint(0, values.numel(), (k,), generator=generator, device=values.device)
    drawn = generate(torch, values.device, dataclasses.replace(arg, init=arg.fresh, fresh=None, length=k, lanes=1), generator)
    values[at] = drawn.to(values.dtype)
    return values


def captured(torch: Any, arg: ArgPlan) -> Any:
    """A captured() buffer's saved contents, on the host (read once per file and size)."""
    return torch.frombuffer(bytearray(_saved(arg.source, arg.nbytes)), dtype=storage_dtype(torch, arg.dtype))


@lru_cache(maxsize=16)
def _saved(source: str, nbytes: int) -> bytes:
    data = read_saved(source, nbytes)
    if len(data) != nbytes:  # prepare checked the size: the file changed since
        raise OSError(f"{source} holds {len(data)} bytes, {nbytes} needed")
    return data


def poisoned(torch: Any, device: Any, arg: ArgPlan, which: str) -> Any:
    """An output buffer holding a value no correct kernel leaves behind: NaN for floats on
    the first run, byte patterns otherwise, so unwritten elements fail either comparison."""
    t = torch.empty(arg.numel, dtype=storage_dtype(torch, arg.dtype), device=device)
    poison(torch, t, arg, which)
    return t


def poison(torch: Any, t: Any, arg: ArgPlan, which: str) -> None:
    if which == "A" and arg.dtype in FLOATS:
        t.fill_(float("nan"))
    else:
        t.view(torch.uint8).fill_(POISON_BYTE[which])


# Without a double-precision reference, a float output may also differ from the original's by
# this much of its scale (|e| + the buffer's mean |e|): about 80 units in the last place, what
# a reordered sum of 50,000 elements rounds to, where torch.testing's rtol is one or ten.
SCALED_DEFAULT = {"float32": 1e-5, "float64": 2e-14, "float16": 1e-2, "bfloat16": 8e-2}


def bad_mask(torch: Any, got: Any, expected: Any, arg: ArgPlan, scaled_tol: float | None = None) -> Any:
    """Elements outside tolerance. Integers: exact. Floats with `scaled_tol`: the error over the
    output's scale (gpu/accuracy.py) within it. Floats with the spec's rtol/atol:
    |g - e| <= atol + rtol |e|, NaN only matching NaN. Floats with the default tolerance: within
    torch.testing's rtol and atol, the atol scaled down by the buffer's mean magnitude where that
    is under 1 (an atol of 1e-5 accepts anything in outputs that are all below 1e-5), or within
    SCALED_DEFAULT of the output's scale."""
    if arg.dtype not in FLOATS:
        return got != expected
    if scaled_tol is not None:
        return scaled_error(torch, got, expected) > scaled_tol
    wide = torch.float64 if arg.dtype == "float64" else torch.float32  # float32 holds every narrower value exactly
    g, e = got.to(wide), expected.to(wide)
    atol: Any = arg.atol
    if arg.tolerance == "default":
        atol = arg.atol * mean_magnitude(torch, e).clamp(max=1.0)
    # |g - e| <= atol + rtol |e|; equal values (infinities too) and NaN against NaN are close
    close = ((g - e).abs() <= atol + arg.rtol * e.abs()) | (g == e) | (g.isnan() & e.isnan())
    if arg.tolerance == "default":
        close |= scaled_error(torch, g, e) <= SCALED_DEFAULT[arg.dtype]
    return ~close


def scaled_error(torch: Any, got: Any, ref: Any, scale: Any = None) -> Any:
    """|got - ref| / (|ref| + mean |ref|) in float64; NaN against NaN and equal infinities are 0,
    a NaN or infinity against anything else is infinite. `scale`: the magnitude to use in place
    of this buffer's own mean |ref|. (In place where it can: a verification computes this some
    fifty times a candidate, and each pass is a launch of host time.)"""
    g, r = got.to(torch.float64), ref.to(torch.float64)
    scale = (mean_magnitude(torch, r) if scale is None else torch.as_tensor(scale, dtype=torch.float64)) \
        .clamp(min=torch.finfo(torch.float32).tiny)
    err = (g - r).abs_().div_(r.abs().add_(scale))
    err.masked_fill_((g == r) | (g.isnan() & r.isnan()), 0.0)
    return err.nan_to_num_(nan=float("inf"), posinf=float("inf"))


def mean_magnitude(torch: Any, values: Any) -> Any:
    """The mean |x| over the finite elements, as a device scalar (no synchronisation)."""
    finite = values.isfinite()
    total = values.abs().masked_fill_(~finite, 0).sum(dtype=torch.float64)
    return total / finite.sum().clamp(min=1)


def identical(torch: Any, got: Any, expected: Any) -> bool:
    """Every element equal (a NaN never is; -0.0 equals 0.0): no element is then outside any
    tolerance, whichever applies. One pass and a wait, where the tolerance takes twenty passes
    (most rewrites of data movement and of elementwise work give the original's very bits)."""
    return bool(torch.equal(got, expected))


def differing(torch: Any, got: Any, expected: Any) -> Any:
    """Device-side count of the elements not equal (a NaN never is; -0.0 equals 0.0, as in
    `identical`), with no wait: a timing's bit-for-bit comparison, read at its synchronizes."""
    return torch.count_nonzero(got != expected)


def count_bad(torch: Any, got: Any, expected: Any, arg: ArgPlan, scaled_tol: float | None = None) -> Any:
    """Device-side count, for accumulating over timed runs."""
    if identical(torch, got, expected):
        return torch.zeros((), dtype=torch.int64, device=got.device)
    return bad_mask(torch, got, expected, arg, scaled_tol).sum()


def unwritten_count(torch: Any, got: Any, arg: ArgPlan, which: str) -> int:
    if which == "A" and arg.dtype in FLOATS:
        return int(got.isnan().sum().item())
    size = got.element_size()
    as_bytes = got.view(torch.uint8).reshape(-1, size)
    return int((as_bytes == POISON_BYTE[which]).all(dim=1).sum().item())


class Where(NamedTuple):
    """Which check, at which size and input set, a comparison belongs to."""

    check: str
    size: str
    seed: int


def describe(torch: Any, at: Where, arg: ArgPlan, got: Any, expected: Any, poison_used: str | None,
             scaled_tol: float | None = None) -> Mismatch | None:
    """A Mismatch for the first differing buffer, or None when they agree."""
    check, size, seed = at
    if identical(torch, got, expected):
        return None
    bad = bad_mask(torch, got, expected, arg, scaled_tol)
    n_bad = int(bad.sum().item())
    if n_bad == 0:
        return None
    first = int(bad.nonzero()[0].item())
    max_err = None
    if arg.dtype in FLOATS:
        diff = (got.double() - expected.double()).abs()
        finite = diff[bad & diff.isfinite()]
        max_err = float(finite.max().item()) if finite.numel() else float("inf")
    unwritten = 0
    if poison_used is not None and arg.direction == "out":
        unwritten = unwritten_count(torch, got[bad], arg, poison_used) if n_bad else 0
    return Mismatch(check=check, size=size, seed=seed, buffer=arg.name, bad=n_bad, total=arg.numel,
                    max_abs_err=max_err, first_index=first // max(arg.lanes, 1) if arg.lanes > 1 else first,
                    got=_fmt(got[first].item()), expected=_fmt(expected[first].item()), unwritten=unwritten)


def _fmt(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)
