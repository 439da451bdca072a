"""The device side of a file whose host side cannot be compiled here.

Real files include host-only headers the GPU machine may not have (`<torch/extension.h>`, a
project's own `"utils.h"` on another include path, cuda-samples' `<helper_timer.h>`) and
launch their kernels from host code that needs them, or that a newer toolkit no longer takes
(`cudaMemPrefetchAsync` changed in CUDA 13). The kernel itself rarely does: when the whole
file fails on a missing header or on errors in host code only, it is compiled again with the
missing `#include`s, every host function (those with neither `__global__` nor `__device__`)
and the host declarations the compiler rejected blanked out, lines kept, so errors still point
at the user's lines. A declaration that device code names is never blanked: leaving it out
could change what the kernel means, so that failure stays the user's to see.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ...kernels.treesitter import nodes_of, parse
from .compiler_output import OWN_FILE, GCC_LOCATION, NVCC_LOCATION

# gcc (nvcc's host pass), cudafe (nvcc's front end) and NVRTC, as each says it
_MISSING = re.compile(r"fatal error: ([^\s:]+): No such file or directory"
                      r"|cannot open source file \"([^\"]+)\"")
_DEVICE = re.compile(rb"\b__(?:global|device)__\b")
_DEVICE_ANY = re.compile(rb"\b__(?:global|device|constant|shared|managed)__\b")
_CLASSES = ("class_specifier", "struct_specifier", "union_specifier", "enum_specifier")
_DECLARATIONS = (*_CLASSES, "declaration", "template_declaration", "type_definition", "alias_declaration",
                 "function_definition")
_NAMES = ("identifier", "type_identifier", "field_identifier", "namespace_identifier")


@dataclass(frozen=True)
class DeviceUnit:
    text: str
    missing: tuple[str, ...]  # the headers left out
    host_functions: int  # host function definitions blanked
    declarations: int = 0  # host declarations blanked because the compiler rejected them


def missing_headers(log: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a or b for a, b in _MISSING.findall(log)))


def missing_in_headers(log: str) -> dict[str, tuple[str, ...]]:
    """Headers of the user's (not the compiled file itself) that include one the compiler cannot
    find: their path as the compiler names it -> the missing ones (`common.h` including
    `<cublas_v2.h>`, one include deep)."""
    out: dict[str, list[str]] = {}
    for line in log.splitlines():
        m = NVCC_LOCATION.match(line) or GCC_LOCATION.match(line)
        found = _MISSING.search(line) if m else None
        if m and found and m.group("file").rsplit("/", 1)[-1] != OWN_FILE:
            out.setdefault(m.group("file"), []).append(found.group(1) or found.group(2))
    return {f: tuple(dict.fromkeys(names)) for f, names in out.items()}


def error_lines(log: str) -> frozenset[int]:
    """The lines of the compiled file itself (`kernel.cu`) that the compiler calls errors."""
    lines = set()
    for line in log.splitlines():
        m = NVCC_LOCATION.match(line) or GCC_LOCATION.match(line)
        if m and "error" in m.group("sev") and m.group("file").rsplit("/", 1)[-1] == OWN_FILE:
            lines.add(int(m.group("line")))
    return frozenset(lines)


def device_unit(text: str, missing: tuple[str, ...], errors: frozenset[int] = frozenset(),
                hosts: bool = False) -> DeviceUnit | None:
    """`text` without the `#include`s of `missing`, without host function bodies and without
    the host declarations on the 1-based `errors` lines; None when there is nothing to leave
    out, or when an error is in device code or in a declaration device code names (a compile
    error of that kind is the user's to see). `hosts`: leave out the host functions even with
    nothing missing here (a header it includes was the one that failed)."""
    if not missing and not errors and not hosts:
        return None
    data = text.encode()
    root = parse(data).root_node
    cut: list[tuple[int, int]] = []
    for node in nodes_of(root, "preproc_include"):
        path = node.child_by_field_name("path")
        name = path.text.decode(errors="replace").strip("<>\"") if path is not None and path.text else ""
        if name in missing:
            cut.append((node.start_byte, node.end_byte))
    hosts = 0
    for node in nodes_of(root, "function_definition"):
        if not _is_device(data, node) and not _inside(node, cut):
            cut.append((node.start_byte, node.end_byte))
            hosts += 1
    device_names = _device_names(data, root)
    declarations = 0
    for line in sorted(errors):
        if any(_on_line(data, s, e, line) for s, e in cut):
            continue
        node = _declaration_on(root, line - 1)
        if node is None or _DEVICE_ANY.search(data[node.start_byte:node.end_byte]):
            return None
        names = _declared_names(node)
        if not names or names & device_names:
            return None
        cut.append((node.start_byte, node.end_byte))
        declarations += 1
    blanked = bytearray(data)
    for start, end in cut:
        blanked[start:end] = bytes(b if b == 0x0A else 0x20 for b in blanked[start:end])
    return DeviceUnit(blanked.decode(errors="replace"), missing, hosts, declarations)


def _is_device(data: bytes, fn: Node) -> bool:
    head = data[fn.start_byte:(fn.child_by_field_name("body") or fn).start_byte]
    return bool(_DEVICE.search(head))


def _device_names(data: bytes, root: Node) -> set[str]:
    """Every name device code uses: kernels', device functions' and device variables' text."""
    names: set[str] = set()
    for node in nodes_of(root, "function_definition", "declaration"):
        head = data[node.start_byte:(node.child_by_field_name("body") or node).end_byte]
        if (node.type == "function_definition" and _is_device(data, node)) or \
                (node.type == "declaration" and _DEVICE_ANY.search(head)):
            names |= {n.text.decode() for n in nodes_of(node, *_NAMES) if n.text}
    return names


def _declaration_on(root: Node, row: int) -> Node | None:
    """The outermost declaration at namespace scope that spans 0-based `row`."""
    for node in root.children:
        if not node.start_point[0] <= row <= node.end_point[0]:
            continue
        if node.type in ("namespace_definition", "linkage_specification"):
            body = node.child_by_field_name("body")
            return _declaration_on(body, row) if body is not None else None
        return node if node.type in _DECLARATIONS else None
    return None


def _declared_names(node: Node) -> set[str]:
    """The names a namespace-scope declaration introduces (its class, variables, functions, types)."""
    if node.type == "template_declaration":
        return set().union(*(_declared_names(c) for c in node.named_children if c.type in _DECLARATIONS))
    names = set()
    for field in ("name", "declarator"):
        for child in node.children_by_field_name(field):
            leaf = child if child.type in _NAMES else next(iter(nodes_of(child, *_NAMES)), None)
            if leaf is not None and leaf.text:
                names.add(leaf.text.decode())
    kind = node.child_by_field_name("type")
    if kind is not None and kind.type in _CLASSES:
        names |= _declared_names(kind)
    return names


def _on_line(data: bytes, start: int, end: int, line: int) -> bool:
    first = data.count(b"\n", 0, start) + 1
    return first <= line <= first + data.count(b"\n", start, end)


def _inside(node: Node, spans: list[tuple[int, int]]) -> bool:
    return any(s <= node.start_byte and node.end_byte <= e for s, e in spans)
