"""Which launch a kernel needs, read from its code: a kernel that syncs its whole grid, itself
or through the device functions it calls, needs a cooperative launch (gpu/cooperative.py).
Read per binary, so a rewrite that adds or drops a grid sync is launched as it needs. A grid
group only asked for its rank or size (`this_grid().thread_rank()`) needs none: launched
cooperatively, a grid larger than fits the GPU at once would fail where the program's own
launch ran."""

from __future__ import annotations

import re

from ...kernels.callees import reachable_bodies

_GRID_SYNC = re.compile(r"\bthis_grid\s*\(|\bgrid_group\b|\bthis_multi_grid\s*\(|\bgrid\.sync\s*\(")
# a grid group synced: `this_grid().sync()`, or a name holding one (`auto g = cg::this_grid()`,
# `grid_group& g` as a parameter) synced, by its method, `cg::sync(g)` or a split barrier
_SYNCED_DIRECTLY = re.compile(r"\bthis_grid\s*\(\s*\)\s*\.\s*(?:sync|barrier_arrive|barrier_wait)\s*\(|\bthis_multi_grid\s*\(")
_GRID_NAME = re.compile(r"\b(?:auto|grid_group)\s*&?\s*(\w+)\s*(?:=\s*(?:\w+\s*::\s*)*this_grid\s*\(\s*\)|[,)])")


def needs_cooperative_launch(text: str, kernel: str) -> bool:
    """Whether `kernel` of the file `text` (or a function it calls) syncs its grid."""
    return bool(_GRID_SYNC.search(text)) and any(_syncs_grid(body) for body in reachable_bodies(text, kernel))


def _syncs_grid(body: str) -> bool:
    """Whether a function's text syncs a grid group (not merely reads its rank)."""
    if _SYNCED_DIRECTLY.search(body) or re.search(r"\bgrid\.sync\s*\(", body):
        return True
    for name in set(_GRID_NAME.findall(body)):
        n = re.escape(name)
        if re.search(rf"\b{n}\s*\.\s*(?:sync|barrier_arrive|barrier_wait)\s*\(|\bsync\s*\(\s*{n}\s*\)", body):
            return True
    return False
