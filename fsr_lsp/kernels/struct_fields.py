"""Structs passed by value whose fields are scalars and pointers: parameter structs.

The CUDA guide's `Matrix A` (`{ int width, height, stride; float* elements; }`) and the params
structs of production kernels (`{ const float* x; float* y; int n; float eps; }`) hand a kernel
its buffers inside one argument. fsr runs such a kernel field by field: each pointer field is a
buffer of its own (filled, guarded and compared as a pointer parameter is), each scalar field a
value, and the evaluator packs them into the struct's bytes at the offsets the C ABI gives.

A struct qualifies when every data member is one scalar of an element type fsr knows (vector
types included) or one pointer to such an element type (`void*` is bytes); member functions and
static members take no room and are skipped. Arrays, bit fields, nested structs, references,
base classes, `alignas` and templates leave it out: its layout would be a guess."""

from __future__ import annotations

import dataclasses
import re

from tree_sitter import Node

from .c_types import element_type, parse_param
from .kernel import Kernel, Param
from .treesitter import nodes_of, parse

def struct_fields(text: str, aliases: dict[str, str] | None = None) -> dict[str, tuple[Param, ...]]:
    """Struct name (its tag and its typedef name) -> its data members, as parameters are read
    (`dtype`, `lanes`, `is_pointer`), for every struct of `text` that qualifies (module
    docstring). Element types named through `aliases` are resolved."""
    if "struct" not in text and "class" not in text:
        return {}
    aliases = aliases or {}
    out: dict[str, tuple[Param, ...]] = {}
    for node in nodes_of(parse(text.encode()).root_node, "struct_specifier", "class_specifier"):
        body = node.child_by_field_name("body")
        if body is None or _unusual(node):
            continue
        fields = _fields(body, aliases)
        if fields:
            for name in _names_of(node):
                out[name] = fields
    return out


def with_struct_fields(kernel: Kernel, text: str, aliases: dict[str, str] | None = None) -> Kernel:
    """The kernel with each by-value struct parameter's members read from `text` (the file, or
    its headers): only where one is still untyped, so a file without one pays nothing."""
    if all(p.is_pointer or p.dtype is not None or p.fields for p in kernel.params):
        return kernel
    found = struct_fields(text, aliases)
    if not found:
        return kernel
    params = tuple(dataclasses.replace(p, fields=found[_bare(p.base_type)])
                   if not p.is_pointer and p.dtype is None and not p.fields and _bare(p.base_type) in found else p
                   for p in kernel.params)
    return dataclasses.replace(kernel, params=params)


def _bare(base: str) -> str:
    """`struct Matrix` and `Matrix` alike."""
    return re.sub(r"^(?:struct|class)\s+", "", base)


def _unusual(node: Node) -> bool:
    """Anything that makes the layout more than its members in order."""
    parent = node.parent
    if parent is not None and parent.type == "template_declaration":
        return True
    return any(c.type in ("base_class_clause", "alignas_qualifier", "attribute_specifier", "ms_declspec_modifier")
               for c in node.children)


def _fields(body: Node, aliases: dict[str, str]) -> tuple[Param, ...] | None:
    out: list[Param] = []
    for member in body.named_children:
        if member.type in ("function_definition", "comment", "access_specifier", "declaration",
                           "template_declaration", "type_definition", "alias_declaration"):
            continue  # member functions, nested type names: no room in the struct
        if member.type != "field_declaration":
            return None
        if any(c.type == "storage_class_specifier" for c in member.children):
            continue  # a static member is not in the struct's bytes
        if any(c.type in ("bitfield_clause", "virtual") for c in member.children):
            return None
        kind = member.child_by_field_name("type")
        declarators = member.children_by_field_name("declarator")
        if kind is None or not declarators or kind.type in ("struct_specifier", "union_specifier", "class_specifier",
                                                             "enum_specifier"):
            return None
        if any(d.type == "function_declarator" for d in declarators):
            continue
        type_text = _text(member)[:declarators[0].start_byte - member.start_byte]
        for d in declarators:
            field = _field(type_text, _text(d), aliases)
            if field is None:
                return None
            out.append(field)
    return tuple(out) or None


def _field(type_text: str, declarator: str, aliases: dict[str, str]) -> Param | None:
    """One member as a parameter would be read, or None when it is no scalar or single pointer
    of a known element type."""
    if re.search(r"[\[\]&()=]", declarator) or declarator.count("*") > 1:
        return None  # arrays, references, function pointers, default member initialisers
    p = parse_param(f"{type_text} {declarator}")
    if not p.name or "<" in p.base_type:
        return None
    dtype, lanes = p.dtype, p.lanes
    if dtype is None and p.base_type in aliases:
        dtype, lanes = element_type(aliases[p.base_type])
    if dtype is None or (not p.is_pointer and lanes != 1):
        return None  # a vector member is no one value a spec can give
    return Param(p.name, p.text, p.type_text, p.base_type, p.is_pointer, p.pointee_const, dtype, lanes)


def _names_of(node: Node) -> list[str]:
    names = []
    tag = node.child_by_field_name("name")
    if tag is not None and tag.text:
        names.append(tag.text.decode())
    parent = node.parent
    if parent is not None and parent.type == "type_definition":
        for d in parent.children_by_field_name("declarator"):
            if d.type == "type_identifier" and d.text:
                names.append(d.text.decode())
    return names


def _text(node: Node) -> str:
    return (node.text or b"").decode()
