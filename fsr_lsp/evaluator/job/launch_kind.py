"""Which launch a kernel needs, read from its code: a kernel that syncs its whole grid, itself
or through the device functions it calls, needs a cooperative launch (gpu/cooperative.py).
Read per binary, so a rewrite that adds or drops a grid sync is launched as it needs. A grid
group only asked for its rank or size (`this_grid().thread_rank()`) needs none: launched
cooperatively, a grid larger than fits the GPU at once would fail where the program's own
launch ran. Any other use of a grid group is taken for a sync (a plain launch of one would trap)."""

from __future__ import annotations

import re

from ...kernels.callees import reachable_bodies

_GRID_SYNC = re.compile(r"\bthis_grid\s*\(|\bgrid_group\b|\bthis_multi_grid\s*\(|\bgrid\.sync\s*\(")
# `this_grid()` asked only what it is (its rank, its size): all a plain launch allows; any other use
# (kept in a name, passed on, synced) is taken for a sync, as fsr cannot follow it
_QUERIED = re.compile(r"\bthis_grid\s*\(\s*\)\s*\.\s*(?:thread_rank|block_rank|size|num_threads|num_blocks|"
                      r"thread_index|block_index|dim_blocks|dim_threads|group_dim|is_valid)\s*\(")


def needs_cooperative_launch(text: str, kernel: str) -> bool:
    """Whether `kernel` of the file `text` (or a function it calls) may sync its grid."""
    return bool(_GRID_SYNC.search(text)) and any(_may_sync_grid(body) for body in reachable_bodies(text, kernel))


def _may_sync_grid(body: str) -> bool:
    """Whether a function's text uses a grid group otherwise than by asking `this_grid()` its
    rank or size."""
    uses = len(_GRID_SYNC.findall(body))
    return uses > len(_QUERIED.findall(body))
