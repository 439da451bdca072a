"""A buffer's init in the `@fsr` spec: how its values are drawn (`normal()`, `uniform(lo, hi)`,
`observed(lo, hi)`, `randint(lo, hi)`, `zeros()`, `fill(v)`, `captured()`), and the `domain(lo, hi)`
that may follow a float's, each problem reported at the argument's place."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Protocol

from ..kernels.kernel import Param
from .expr import ExprError, evaluate
from .model import Init, default_init

_INIT = re.compile(r"^(uniform|observed|normal|randint|zeros|fill|captured)\s*\((.*)\)$")
_DOMAIN = re.compile(r"^(?P<init>.*?)\s*\bdomain\s*\((?P<bounds>[^()]*)\)$")
INIT_FORMS = "uniform(lo,hi), observed(lo,hi), normal(), randint(lo,hi), zeros(), fill(v) or captured()"
INT_RANGE = {f"{sign}int{bits}": ((0, (1 << bits) - 1) if sign else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1))
             for sign in ("", "u") for bits in (8, 16, 32, 64)} | {"bool": (0, 1)}


class Failing(Protocol):
    """Where a problem is recorded (the spec parser's context): `fail` returns the exception to raise."""

    def fail(self, message: str, key: str | None = None, section: str | None = None, code: str = "spec") -> Exception:
        ...


def read_init(ctx: Failing, p: Param, text: str, dtype: str) -> Init:
    """The init written after a buffer's extent, with its `domain(lo, hi)` when it has one."""
    m = _DOMAIN.match(text)
    if not m:
        return _distribution(ctx, p, text, dtype)
    init = _distribution(ctx, p, m.group("init"), dtype)
    domain = _domain(ctx, p, m.group("bounds"), dtype)
    if init.kind in ("fill", "captured"):
        raise ctx.fail(f"{p.name}: domain(...) bounds random values; {init.kind} inputs are not drawn", p.name, "args",
                       code="spec-bad-arg")
    if init.kind in ("uniform", "randint") and (init.lo < domain[0] or init.hi > domain[1] + (init.kind == "randint")):
        raise ctx.fail(f"{p.name}: {init.kind}({init.lo:g}, {init.hi:g}) draws values outside domain({domain[0]:g}, "
                       f"{domain[1]:g})", p.name, "args", code="spec-bad-arg")
    return replace(init, domain=domain)


def _domain(ctx: Failing, p: Param, text: str, dtype: str) -> tuple[float, float]:
    """`domain(lo, hi)`: the values callers really pass (lo <= v <= hi). Inputs are drawn, and
    the sets that probe the range made, inside it."""
    if not dtype.startswith(("float", "bfloat")):
        raise ctx.fail(f"{p.name}: domain(...) is for float inputs; integers keep the range of their init", p.name,
                       "args", code="spec-bad-arg")
    try:
        values = [float(evaluate(a.strip(), {})) for a in text.split(",")]
    except ExprError as e:
        raise ctx.fail(f"{p.name}: domain(lo, hi) needs numbers: {e}", p.name, "args", code="spec-bad-arg") from None
    if len(values) != 2 or not values[0] < values[1]:
        raise ctx.fail(f"{p.name}: domain(lo, hi) needs two numbers with lo < hi", p.name, "args", code="spec-bad-arg")
    return values[0], values[1]


def _distribution(ctx: Failing, p: Param, text: str, dtype: str) -> Init:
    if not text:
        return default_init(dtype)
    m = _INIT.match(text)
    if not m:
        raise ctx.fail(f"{p.name}: unknown init {text!r} (use {INIT_FORMS}, and domain(lo,hi) after it to narrow "
                       "what a float takes)", p.name, "args", code="spec-bad-arg")
    kind, inner = m.group(1), m.group(2).strip()
    if kind == "captured":
        if inner:
            raise ctx.fail(f"{p.name}: captured() takes no arguments (its bytes are the ones `fsr capture "
                           f"--snapshot-bytes` saved for it)", p.name, "args", code="spec-bad-arg")
        return Init("captured")
    try:
        values = [float(evaluate(a.strip(), {})) for a in inner.split(",")] if inner else []
    except ExprError as e:
        raise ctx.fail(f"{p.name}: {kind}(...) needs numbers: {e}", p.name, "args") from None
    if kind == "normal":
        if len(values) not in (0, 2):
            raise ctx.fail(f"{p.name}: normal() takes no arguments or (mean, std)", p.name, "args")
        mean, std = values if values else (0.0, 1.0)
        return Init("normal", mean, std, declared=bool(values))
    if kind in ("zeros", "fill"):
        return _fill(ctx, p, kind, values, dtype)
    if len(values) == 2 and values[0] == values[1]:
        raise ctx.fail(f"{p.name}: {kind}({values[0]:g}, {values[1]:g}) holds no value; for a constant start "
                       f"(an accumulator, histogram bins) use fill({values[0]:g})"
                       + (" or zeros()" if values[0] == 0 else ""), p.name, "args", code="spec-bad-arg")
    if len(values) != 2 or not values[0] < values[1]:
        raise ctx.fail(f"{p.name}: {kind}(lo, hi) needs two numbers with lo < hi", p.name, "args")
    if kind == "randint" and not all(v.is_integer() for v in values):
        raise ctx.fail(f"{p.name}: randint bounds must be integers", p.name, "args")
    if kind == "randint" and dtype.startswith("uint") and values[0] < 0:
        raise ctx.fail(f"{p.name}: randint({values[0]:g}, ...) is negative for an unsigned type", p.name, "args")
    if kind == "observed":  # the range a captured run had: drawn from, not a bound
        return Init("uniform", values[0], values[1])
    return Init(kind, values[0], values[1], declared=kind == "uniform")


def _fill(ctx: Failing, p: Param, kind: str, values: list[float], dtype: str) -> Init:
    """zeros() and fill(v): a constant start, for accumulators (atomicAdd into out[0], histogram
    bins) that must be declared inout and start from a known value."""
    if kind == "zeros":
        if values:
            raise ctx.fail(f"{p.name}: zeros() takes no arguments", p.name, "args", code="spec-bad-arg")
        return Init("fill", 0.0, 0.0)
    if len(values) != 1:
        raise ctx.fail(f"{p.name}: fill(v) takes one number", p.name, "args", code="spec-bad-arg")
    v = values[0]
    if not dtype.startswith(("float", "bfloat")):
        if not v.is_integer():
            raise ctx.fail(f"{p.name}: fill({v:g}) is not an integer, and {p.name} holds {dtype}", p.name, "args",
                           code="spec-bad-arg")
        lo, hi = INT_RANGE.get(dtype, (-(1 << 63), (1 << 64) - 1))
        if not lo <= v <= hi:
            raise ctx.fail(f"{p.name}: fill({v:g}) does not fit {dtype}", p.name, "args", code="spec-bad-arg")
    return Init("fill", v, v)
