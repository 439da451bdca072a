"""The device side of a file whose host side cannot be compiled here.

Real files include host-only headers the GPU machine may not have (`<torch/extension.h>`, a
project's own `"utils.h"` on another include path) and launch their kernels from host code
that needs them. The kernel itself rarely does: when the whole file fails on a missing header,
it is compiled again with the missing `#include`s and every host function (those with neither
`__global__` nor `__device__`) blanked out, lines kept, so errors still point at the user's lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..kernels.treesitter import nodes_of, parse

# gcc (nvcc's host pass), cudafe (nvcc's front end) and NVRTC, as each says it
_MISSING = re.compile(r"fatal error: ([^\s:]+): No such file or directory"
                      r"|cannot open source file \"([^\"]+)\"")
_DEVICE = re.compile(rb"\b__(?:global|device)__\b")


@dataclass(frozen=True)
class DeviceUnit:
    text: str
    missing: tuple[str, ...]  # the headers left out
    host_functions: int  # host function definitions blanked


def missing_headers(log: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a or b for a, b in _MISSING.findall(log)))


def device_unit(text: str, missing: tuple[str, ...]) -> DeviceUnit | None:
    """`text` without the `#include`s of `missing` and without host function bodies; None
    when nothing is missing (a compile error of another kind is the user's to see)."""
    if not missing:
        return None
    data = bytearray(text.encode())
    cut: list[tuple[int, int]] = []
    for node in nodes_of(parse(bytes(data)).root_node, "preproc_include"):
        path = node.child_by_field_name("path")
        name = path.text.decode(errors="replace").strip("<>\"") if path is not None and path.text else ""
        if name in missing:
            cut.append((node.start_byte, node.end_byte))
    hosts = 0
    for node in nodes_of(parse(bytes(data)).root_node, "function_definition"):
        head = bytes(data[node.start_byte:(node.child_by_field_name("body") or node).start_byte])
        if not _DEVICE.search(head) and not _inside(node, cut):
            cut.append((node.start_byte, node.end_byte))
            hosts += 1
    for start, end in cut:
        data[start:end] = bytes(b if b == 0x0A else 0x20 for b in data[start:end])
    return DeviceUnit(data.decode(errors="replace"), missing, hosts)


def _inside(node, spans: list[tuple[int, int]]) -> bool:
    return any(s <= node.start_byte and node.end_byte <= e for s, e in spans)
