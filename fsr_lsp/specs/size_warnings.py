"""What a spec's sizes leave untested, said as a warning on its `tests`: sizes equal at the bench
and in every test (M = N = K, a square run's) never tell one from another, so a rewrite that
reads one for another (strides A's rows by N where the kernel strides them by K) is verified."""

from __future__ import annotations

from .model import SizeSet

# sizes' values in a test that holds them apart: odd, distinct, none a multiple of a block
# (the warning's example here, and the tests drafts add, drafting/untied.py)
APART = (37, 53, 71, 89, 113, 131, 151, 173, 197, 223, 251, 277)


def tied_sizes_message(all_sizes: list[SizeSet]) -> str | None:
    """The warning for the first group of sizes that vary yet hold one value in every plan
    (the bench first, then the tests), or None."""
    groups: dict[tuple, list[str]] = {}
    bench = all_sizes[0]
    for name, value in bench.items():
        values = tuple(s.get(name) for s in all_sizes)
        if isinstance(value, int) and value > 1 and len(set(values)) > 1:
            groups.setdefault(values, []).append(name)
    tied = [names for names in groups.values() if len(names) > 1]
    if not tied:
        return None
    names = tied[0]
    example = ", ".join(f"{k} = {v}" for k, v in zip(names, APART))
    listed = ", ".join(names[:-1]) + f" and {names[-1]}"
    return (f"{listed} are equal at the bench and in every test: a rewrite that reads one for another would be "
            f"verified; add a test with them apart (e.g. {{ {example} }})")
