"""Test sizes that move apart the sizes a bench holds equal.

A draft's tests shrink every size alike (1, 17, 1000, each capped at its bench value), so sizes
equal at the bench stay equal in every test: a captured square matmul (M = N = K = 1024) is
tested square only, and a rewrite that strides A's rows by N where the kernel strides them by K
passes every test. What a caller may pass is M, N and K apart. So where two sizes the kernel
sees share a bench value, two more tests give each its own value, in one order and then the
other (each of M < N and M > N). The original judges them like any test: where it fails apart,
the proof leaves that size out (relax.py), and says so.

A capture alone cannot tell which of the equal sizes a buffer's length or a grid follows (a
1024 x 1024 allocation is M * K as well as N * N): `apart_safe` writes such an expression over
the largest of them, so a test with them apart allocates enough and launches a grid that covers.
"""

from __future__ import annotations

import re

from ..specs.size_warnings import APART
from .spec_text import positive



def tied_groups(bench: dict[str, int], varying: set[str] | list[str]) -> list[list[str]]:
    """The sizes among `varying` that share a bench value above 1, in groups of two or more."""
    by_value: dict[int, list[str]] = {}
    for name in bench:
        if name in varying and bench[name] > 1:
            by_value.setdefault(bench[name], []).append(name)
    return [names for names in by_value.values() if len(names) > 1]


def untied_tests(bench: dict[str, int], varying: set[str] | list[str], checks: list[str],
                 tests: list[dict[str, int]] | tuple[()] = ()) -> list[dict[str, int]]:
    """Up to two test sizes with each tied group's sizes apart (both orders); the other varying
    sizes at a small value, the rest at the bench. Only those keeping every check positive;
    none when `tests` already hold every group apart (a draft's own, capped at a capture's)."""
    groups = tied_groups(bench, varying)
    if not groups or all(any(len({t.get(k) for k in g}) == len(g) for t in tests) for g in groups):
        return []
    out: list[dict[str, int]] = []
    for reverse in (False, True):
        entry = {k: (min(v, APART[0]) if k in varying else v) for k, v in bench.items()}
        for names in groups:
            values = _distinct_values(bench[names[0]], len(names))
            for name, value in zip(names, reversed(values) if reverse else values):
                entry[name] = value
        if entry not in out and entry != bench and positive(checks, entry):
            out.append(entry)
    return out


def _distinct_values(limit: int, count: int) -> list[int]:
    """`count` distinct values at most `limit`, ascending (fewer when `limit` is too small)."""
    values = [v for v in APART if v < limit][:count]
    v = limit
    while len(values) < count and v >= 1:
        if v not in values:
            values.append(v)
        v -= 1
    return sorted(values)


def apart_safe(expr: str, groups: list[list[str]]) -> str:
    """`expr` with each size of a tied group read as the largest of its group: `M * M` over
    M = N = K becomes `max(M, N, K) * max(M, N, K)`, the same at the bench and enough apart."""
    for names in groups:
        widest = _max_of(names)
        expr = re.sub(r"\b(" + "|".join(map(re.escape, names)) + r")\b", widest, expr)
    return expr


def _max_of(names: list[str]) -> str:
    """`max(a, b, ...)`, nested past the 8 arguments a spec's max takes."""
    if len(names) <= 8:
        return f"max({', '.join(names)})"
    return f"max({', '.join(names[:7])}, {_max_of(names[7:])})" if len(names) > 8 else names[0]
