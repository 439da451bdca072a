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

from ..records import ArgPlan, SizePlan
from ...specs.model import Init

LINKS = ".links"
MAX_REACHED = 4096  # buffers added for memory a kernel's pointers reach, at most


def links_file(path: str) -> Path:
    return Path(path + LINKS)


def read_links(path: str) -> list[tuple[int, str, int]]:
    """A saved file's links: (byte in the file, the file linked to, byte in that file)."""
    try:
        text = links_file(path).read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].isdigit() and parts[2].isdigit() and "/" not in parts[1]:
            out.append((int(parts[0]), str(Path(path).parent / parts[1]), int(parts[2])))
    return out


def holds_pointers(where: str) -> bool:
    """Whether the saved bytes at "OFFSET:PATH" hold pointers the capture followed."""
    return links_file(where.partition(":")[2]).exists()


def with_linked_memory(plan: SizePlan) -> SizePlan:
    """The plan with the memory its captured buffers' pointers reach (module docstring)."""
    starts: dict[str, tuple[str, int, int]] = {}  # saved file -> (buffer, its first byte in the file, its bytes)
    roots = []
    for a in plan.args:
        if a.kind in ("buffer", "bytes") and a.source:
            offset, _, path = a.source.partition(":")
            if a.kind == "bytes":  # a value passed as the run passed it: its file is its bytes
                starts.setdefault(path, (a.name, 0, os.path.getsize(path)))
            else:
                starts.setdefault(path, (a.name, int(offset), a.nbytes))
            if links_file(path).exists():
                roots.append((a.name, path))
    if not roots:
        return plan
    links: dict[str, list[tuple[int, str, int]]] = {}
    reached: list[ArgPlan] = []
    pending = list(roots)
    seen = set()
    while pending:
        name, path = pending.pop(0)
        if (name, path) in seen:
            continue
        seen.add((name, path))
        _, start, nbytes = starts[path]
        for at, target, offset in read_links(path):
            if not 0 <= at - start <= nbytes - 8:
                continue  # outside this buffer (a smaller test size takes the saved bytes' start)
            if target not in starts:
                if len(reached) >= MAX_REACHED or not os.path.exists(target):
                    continue
                size = os.path.getsize(target)
                hidden = ArgPlan(name=f"{roots[0][0]}->{len(reached) + 1}", kind="buffer", dtype="uint8", length=size,
                                 direction="inout", init=Init("captured"), source=f"0:{target}", hidden=True)
                reached.append(hidden)
                starts[target] = (hidden.name, 0, size)
                pending.append((hidden.name, target))
            into, first, size = starts[target]
            if first <= offset < first + max(size, 1):
                links.setdefault(name, []).append((at - start, into, offset - first))
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


def value_bytes(arg: ArgPlan, addresses: dict[str, int]) -> bytes:
    """A captured value's bytes with its pointers written for buffers at `addresses`."""
    data = bytearray(Path(arg.source.partition(":")[2]).read_bytes())
    for at, target, offset in arg.links:
        if target in addresses and at + 8 <= len(data):
            data[at:at + 8] = (addresses[target] + offset).to_bytes(8, "little")
    return bytes(data)


def link_writes(args: list[ArgPlan], addresses: dict[str, int]) -> list[tuple[int, int]]:
    """(address to write, pointer to write there) for every link, with the buffers at `addresses`
    (each buffer's first byte)."""
    out = []
    for a in args:
        if a.kind == "bytes":
            continue  # a value: its pointers are written into its bytes (value_bytes), not into memory
        for at, target, offset in a.links:
            if a.name in addresses and target in addresses:
                out.append((addresses[a.name] + at, addresses[target] + offset))
    return out


def has_links(args: list[ArgPlan]) -> bool:
    return any(a.links for a in args)
