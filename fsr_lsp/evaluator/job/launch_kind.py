"""Which launch a kernel needs, read from its code: a kernel that syncs its whole grid, itself
or through the device functions it calls, needs a cooperative launch (gpu/cooperative.py).
Read per binary, so a rewrite that adds or drops a grid sync is launched as it needs."""

from __future__ import annotations

import re

from ...kernels.treesitter import nodes_of, parse

_GRID_SYNC = re.compile(r"\bthis_grid\s*\(|\bgrid_group\b|\bthis_multi_grid\s*\(|\bgrid\.sync\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def needs_cooperative_launch(text: str, kernel: str) -> bool:
    """Whether `kernel` of the file `text` (or a function it calls) syncs its grid."""
    if not _GRID_SYNC.search(text):
        return False
    bodies: dict[str, list[str]] = {}
    for fn in nodes_of(parse(text.encode()).root_node, "function_definition"):
        name = fn.child_by_field_name("declarator")
        while name is not None and name.type not in ("identifier", "field_identifier", "qualified_identifier"):
            name = name.child_by_field_name("declarator")
        if name is not None and name.text:
            short = name.text.decode().rsplit("::", 1)[-1]
            bodies.setdefault(short, []).append((fn.text or b"").decode(errors="replace"))
    seen, todo = set(), [kernel]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for body in bodies.get(name, []):
            if _GRID_SYNC.search(body):
                return True
            todo += [w for w in set(_IDENT.findall(body)) if w in bodies]
    return False
