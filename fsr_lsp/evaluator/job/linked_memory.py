"""Memory that holds pointers, from a capture: a struct whose `char* name` points into another
allocation, a linked list's nodes, a table of `void*` lists (an inverted index).

`fsr capture --snapshot-bytes` saves what a kernel's pointers point to and follows the pointers
inside that memory: each saved file's links ("AT TARGET_FILE OFFSET" a line) are beside it, in
`FILE.links`, and each allocation linked to is saved too (capture/fsr_capture.cpp). Here a plan
gets that graph: one more buffer for each allocation reached (`hidden`: the kernel reaches it
through pointers, it is no argument), filled with its saved bytes and compared like an `inout`
buffer, and on each buffer its links. At every launch the evaluator writes each link's target
address at its place (the graph rebuilt at the evaluator's own addresses, gpu/relocation.py),
and before comparing puts back the saved word where a link still points where it was put, so
that runs at different addresses compare equal.

Plain data in and out (no GPU): this runs before the job leaves for a worker.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ...kernels.c_types import ITEMSIZE
from ..records import ArgPlan, SizePlan
from ...specs.model import Init

LINKS = ".links"
MAX_REACHED = 4096  # buffers added for memory a kernel's pointers reach, at most


def links_file(path: str) -> Path:
    return Path(path + LINKS)


NOWHERE = ""  # a link's target when what it pointed to was not saved: null is written there


def read_links(path: str) -> list[tuple[int, str, int]]:
    """A saved file's links: (byte in the file, the file linked to, byte in that file); a target
    of "-" is memory the capture did not save (over its cap), NOWHERE here."""
    try:
        text = links_file(path).read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].isdigit() and parts[2].isdigit() and "/" not in parts[1]:
            target = NOWHERE if parts[1] == "-" else str(Path(path).parent / parts[1])
            out.append((int(parts[0]), target, int(parts[2])))
    return out


@dataclasses.dataclass(frozen=True)
class _Region:
    name: str  # the buffer (or captured value) holding these bytes of a saved file
    first: int  # its first byte in the file
    size: int


def with_linked_memory(plan: SizePlan) -> SizePlan:
    """The plan with the memory its captured buffers' pointers reach (module docstring). A link
    whose target was not saved, or lies outside every buffer made of its file (a smaller test
    size takes a saved buffer's start), gets null: never the run's own address, which could
    fall into this process's memory."""
    regions: dict[str, list[_Region]] = {}  # saved file -> the buffers made of it
    roots: list[tuple[_Region, str]] = []
    for a in plan.args:
        if a.kind not in ("buffer", "bytes") or not a.source or (a.kind == "buffer" and a.dtype != "uint8"):
            continue  # typed memory holds numbers: its words are not followed
        offset, _, path = a.source.partition(":")
        region = _Region(a.name, 0, os.path.getsize(path)) if a.kind == "bytes" else _Region(a.name, int(offset), a.nbytes)
        regions.setdefault(path, []).append(region)
        if links_file(path).exists():
            roots.append((region, path))
    for a in plan.args:  # typed buffers may still be what a link points into
        if a.kind == "buffer" and a.source and a.dtype != "uint8":
            offset, _, path = a.source.partition(":")
            regions.setdefault(path, []).append(_Region(a.name, int(offset), a.nbytes))
    if not roots:
        return plan
    links: dict[str, list[tuple[int, str, int]]] = {}
    reached: list[ArgPlan] = []
    pending = list(roots)
    seen: set[str] = set()
    while pending:
        region, path = pending.pop(0)
        if region.name in seen:
            continue
        seen.add(region.name)
        for at, target, offset in read_links(path):
            if not 0 <= at - region.first <= region.size - 8:
                continue  # another buffer's part of the file
            if target and target not in regions and len(reached) < MAX_REACHED and os.path.exists(target):
                size = os.path.getsize(target)
                hidden = ArgPlan(name=f"{roots[0][0].name}->{len(reached) + 1}", kind="buffer", dtype="uint8",
                                 length=size, direction="inout", init=Init("captured"), source=f"0:{target}",
                                 hidden=True, pointers=True)
                reached.append(hidden)
                regions[target] = [_Region(hidden.name, 0, size)]
                pending.append((regions[target][0], target))
            into = next((r for r in regions.get(target, ()) if r.first <= offset <= r.first + r.size), None)
            link = (at - region.first, into.name, offset - into.first) if into else (at - region.first, NOWHERE, 0)
            links.setdefault(region.name, []).append(link)
    args = [dataclasses.replace(a, links=tuple(links.get(a.name, ()))) for a in plan.args]
    args += [dataclasses.replace(h, links=tuple(links.get(h.name, ()))) for h in reached]
    return dataclasses.replace(plan, args=args)


def value_from_capture(arg: ArgPlan, where: str) -> ArgPlan:
    """A value passed as the run passed it (`captured()`), given its saved bytes ("OFFSET:PATH",
    OFFSET where the run's launch placed it among the parameters): launched as a struct of those
    bytes, aligned as that place shows (a power of two up to 16; 8 at the first place)."""
    offset, _, path = where.partition(":")
    place = int(offset)
    align = min(16, place & -place) if place else 8
    return dataclasses.replace(arg, dtype=f"struct:{os.path.getsize(path)}:{align}", source=where)


def late_values(args: list[ArgPlan], values: list, addresses: dict[str, int]) -> list:
    """`values` (one per plan argument) with those known only once every buffer has its address
    (`addresses`: each buffer's first byte): a captured value's bytes with its pointers, and a
    pointer into another buffer (`end(X)`: just past its last byte, as wide as X is allocated;
    `same(X)`: the kernel's pointer to X)."""
    buffers = {a.name: a for a in args if a.kind == "buffer"}
    return [value_bytes(a, addresses) if a.kind == "bytes" else
            _pointer_at(buffers[a.at[0]], addresses[a.at[0]], a.at[1]) if a.at else v for a, v in zip(args, values)]


def _pointer_at(of: ArgPlan, address: int, at: str) -> int:
    if at == "end":
        return address + of.nbytes
    return address + of.offset * of.lanes * ITEMSIZE[of.dtype]  # where the kernel's own pointer to it is


def value_bytes(arg: ArgPlan, addresses: dict[str, int]) -> bytes:
    """A captured value's bytes with its pointers written for buffers at `addresses`."""
    data = bytearray(Path(arg.source.partition(":")[2]).read_bytes())
    for at, target, offset in arg.links:
        if at + 8 <= len(data):
            data[at:at + 8] = (addresses[target] + offset if target in addresses else 0).to_bytes(8, "little")
    return bytes(data)


def link_writes(args: list[ArgPlan], addresses: dict[str, int]) -> list[tuple[int, int]]:
    """(address to write, pointer to write there) for every link, with the buffers at `addresses`
    (each buffer's first byte)."""
    out = []
    for a in args:
        if a.kind == "bytes":
            continue  # a value: its pointers are written into its bytes (value_bytes), not into memory
        for at, target, offset in a.links:
            if a.name in addresses:  # null where the target was not saved
                out.append((addresses[a.name] + at, addresses[target] + offset if target in addresses else 0))
    return out


def has_links(args: list[ArgPlan]) -> bool:
    return any(a.links for a in args)
