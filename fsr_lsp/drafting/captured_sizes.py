"""The captured numbers written over the launch's sizes: an allocation of `rows * cols`
elements, a grid of `cdiv(n, 256)` blocks. A spec written so scales to smaller test sizes."""

from __future__ import annotations

from itertools import combinations_with_replacement


def named_values(sizes: dict[str, int]) -> dict[int, str]:
    """Value -> the simplest expression over the sizes with that value (a size, then a product of two)."""
    named: dict[int, str] = {}
    for k, v in sizes.items():
        named.setdefault(v, k)
    for a, b in combinations_with_replacement(sizes, 2):
        named.setdefault(sizes[a] * sizes[b], f"{a} * {b}")
    return named


def grid_expression(g: int, b: int, covered: dict[int, str], named: dict[int, str]) -> str:
    """A grid dimension over the sizes: one block per `b` elements of a buffer first (what a
    grid is for), then a size itself (a block per row), then `b` elements of any size."""
    if g == 1:
        return "1"
    over_buffer = [e for v, e in covered.items() if (v + b - 1) // b == g]
    if over_buffer:
        return f"cdiv({min(over_buffer, key=len)}, {b})"
    if g in named:
        return named[g]
    exact = [e for v, e in named.items() if (v + b - 1) // b == g]
    return f"cdiv({min(exact, key=len)}, {b})" if exact else str(g)
