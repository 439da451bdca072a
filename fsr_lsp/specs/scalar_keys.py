"""The spec's keys of one plain value: the tolerances (`rtol`, `atol`) and the choices (`edge`,
`bench_inputs`). Each is read or said wrong through `add(message, key)`, and falls back to its
default so the rest of the block is still read."""

from __future__ import annotations

from typing import Any, Callable

Add = Callable[[str, str], None]


def one_of(add: Add, data: dict, key: str, allowed: tuple, message: str) -> Any:
    """`data[key]` if it is one of `allowed` (the first is the default), else the default, said."""
    value = data.get(key, allowed[0])
    if not any(type(value) is type(a) and value == a for a in allowed):
        add(message, key)
        return allowed[0]
    return value


def tolerance(add: Add, data: dict, key: str) -> float | None:
    """A non-negative number, or None where the block gives none."""
    v = data.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        add(f"{key} must be a non-negative number, got {v!r}", key)
        return None
    return float(v)
