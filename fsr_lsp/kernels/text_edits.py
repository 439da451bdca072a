"""Where a new version of a text differs from an earlier one, as one edit: what tree-sitter
needs to reparse only around it. An editor sends a document again after each keystroke, and
every reader (discovery, launches, types) parsed the whole text anew."""

from __future__ import annotations

from dataclasses import dataclass

MIN_SHARED = 0.9  # an earlier text serves when at least this share of the new one is unchanged around the edit


@dataclass(frozen=True)
class Edit:
    start: int  # the first byte that differs
    old_end: int  # where the changed bytes end in the old text
    new_end: int  # ... and in the new one
    start_point: tuple[int, int]  # (row, byte column) of `start`
    old_end_point: tuple[int, int]
    new_end_point: tuple[int, int]


def one_edit(old: bytes, new: bytes) -> Edit | None:
    """The single edit that turns `old` into `new` (their common head and tail kept), or None
    when they share too little for a reparse to pay."""
    shortest = min(len(old), len(new))
    head = _shared(shortest, lambda at, n: old[at:at + n] == new[at:at + n])
    # the tail, counted back from both ends, never into the shared head
    tail = _shared(shortest - head, lambda at, n: old[len(old) - at - n:len(old) - at] == new[len(new) - at - n:len(new) - at])
    if head + tail < MIN_SHARED * len(new) or old == new:
        return None
    old_end, new_end = len(old) - tail, len(new) - tail
    return Edit(head, old_end, new_end, point_at(old, head), point_at(old, old_end), point_at(new, new_end))


def point_at(data: bytes, offset: int) -> tuple[int, int]:
    """tree-sitter's point of a byte offset: its row, and its column in bytes."""
    row = data.count(b"\n", 0, offset)
    return row, offset - (data.rfind(b"\n", 0, offset) + 1)


BLOCK = 64 << 10  # bytes compared at a time: a 10 MB text's slices were copied whole at each step of a search


def _shared(limit: int, same) -> int:
    """How many bytes from one end the two texts share (at most `limit`): `same(at, n)` says
    whether the n bytes `at` from that end are equal. Compared a block at a time, then within
    the first block that differs by halves."""
    at = 0
    while at < limit:
        step = min(BLOCK, limit - at)
        if not same(at, step):
            low, high = 0, step - 1  # the block's shared part is shorter than `step`
            while low < high:
                mid = (low + high + 1) // 2
                if same(at, mid):
                    low = mid
                else:
                    high = mid - 1
            return at + low
        at += step
    return limit
