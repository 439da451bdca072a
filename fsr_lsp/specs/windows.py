"""A buffer the kernel gets a pointer into: `in[-3 : n + 3]` says the kernel may use indices -3
to n + 2 around its pointer. Stencils are passed `d_in + RADIUS` of a buffer allocated with
a halo before and after; the halo is the program's, and a read of it is no overrun."""

from __future__ import annotations

from .expr import ExprError, evaluate_int
from .model import SizeSet


def read_window(text: str, sizes: list[SizeSet], name: str) -> tuple[str, str]:
    """`-3 : n + 3` -> ("-3", "n + 3"); a plain length -> ("0", ""). ValueError, saying why,
    when the start does not evaluate or lies after the pointer."""
    if text.count(":") != 1:
        return "0", ""
    start, stop = (t.strip() for t in text.split(":"))
    for s in sizes:
        try:
            first = evaluate_int(start, s, f"start of {name}")
        except ExprError as e:
            raise ValueError(f"{name}: start {start!r} does not evaluate: {e}") from None
        if first > 0:
            shown = ", ".join(f"{k}={v}" for k, v in s.items())
            raise ValueError(f"{name}: a buffer starts at or before its pointer: {start!r} gives {first} at {shown}")
    return start, stop
