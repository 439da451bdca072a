"""Device buffers for one size: random inputs from a seed, poisoned outputs, comparisons.

Unsigned types live in signed torch storage of the same width: only their bits matter
to the kernel, and integer outputs are compared exactly.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..captured_buffers import read_saved
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
        return captured(torch, arg).to(device)
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
    return values.to(storage_dtype(torch, arg.dtype))


def refill(torch: Any, t: Any, arg: ArgPlan, generator: Any) -> None:
    """New random contents for a buffer in place, one pass over it: the timed runs draw fresh
    inputs every repetition, and at 2^24 elements a generate-then-copy costs as much as the kernel."""
    init = arg.init
    assert init is not None
    if init.kind == "captured":
        t.copy_(captured(torch, arg))
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


def bad_mask(torch: Any, got: Any, expected: Any, arg: ArgPlan) -> Any:
    """Elements outside tolerance (floats: |g - e| <= atol + rtol |e|, NaN only matches NaN;
    integers: exact)."""
    if arg.dtype not in FLOATS:
        return got != expected
    wide = torch.float64 if arg.dtype == "float64" else torch.float32  # float32 holds every narrower value exactly
    # |g - e| <= atol + rtol |e|; equal infinities and NaN against NaN are close
    return ~torch.isclose(got.to(wide), expected.to(wide), rtol=arg.rtol, atol=arg.atol, equal_nan=True)


def count_bad(torch: Any, got: Any, expected: Any, arg: ArgPlan) -> Any:
    """Device-side count (no synchronisation), for accumulating over timed runs."""
    return bad_mask(torch, got, expected, arg).sum()


def unwritten_count(torch: Any, got: Any, arg: ArgPlan, which: str) -> int:
    if which == "A" and arg.dtype in FLOATS:
        return int(got.isnan().sum().item())
    size = got.element_size()
    as_bytes = got.view(torch.uint8).reshape(-1, size)
    return int((as_bytes == POISON_BYTE[which]).all(dim=1).sum().item())


def describe(torch: Any, check: str, size: str, seed: int, arg: ArgPlan, got: Any, expected: Any,
             poison_used: str | None) -> Mismatch | None:
    """A Mismatch for the first differing buffer, or None when they agree."""
    bad = bad_mask(torch, got, expected, arg)
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
