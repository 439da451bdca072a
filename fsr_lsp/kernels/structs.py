"""Structs made of one element type, as element types: `struct naiveStruct { float a; float b; }`
is two float lanes per element, `struct { float a[SIZE]; float b[SIZE]; }` 2*SIZE. Samples and
real code pass arrays of such structs (AoS) and single structs of arrays (SoA) to kernels;
the evaluator fills and compares them as what they hold. A struct with padding, mixed element
types, pointers, bit fields or an array size it cannot read stays unknown: its bytes would not
be what random values of one type make them."""

from __future__ import annotations

import ast
import operator
import re

from tree_sitter import Node

from .c_types import C_SPELLING, ITEMSIZE, element_type
from .treesitter import nodes_of, parse

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(.+?)[ \t]*$", re.M)
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
        ast.BitAnd: operator.and_}


def struct_types(text: str, known: dict[str, str] | None = None) -> dict[str, str]:
    """Struct name -> an element type spelling (`float[2]`) for every struct in `text` whose
    layout is its lanes of one type and nothing else; `known` aliases serve its field types."""
    known = dict(known or {})
    macros = {m.group(1): m.group(2) for m in _DEFINE.finditer(text)}
    out: dict[str, str] = {}
    for node in nodes_of(parse(text.encode()).root_node, "struct_specifier"):
        body = node.child_by_field_name("body")
        if body is None:
            continue
        layout = _layout(body, {**known, **out}, macros)
        if layout is None:
            continue
        for name in _names_of(node):
            out[name] = layout
    return out


def _names_of(struct: Node) -> list[str]:
    """The struct's tag, and the name a `typedef struct {...} Name;` gives it."""
    names = []
    tag = struct.child_by_field_name("name")
    if tag is not None and tag.text:
        names.append(tag.text.decode())
    parent = struct.parent
    if parent is not None and parent.type == "type_definition":
        for d in parent.children_by_field_name("declarator"):
            if d.type == "type_identifier" and d.text:
                names.append(d.text.decode())
    return names


def _layout(body: Node, known: dict[str, str], macros: dict[str, str]) -> str | None:
    dtype, lanes, offset, widest = None, 0, 0, 1
    for field in body.named_children:
        if field.type in ("function_definition", "comment", "access_specifier", "declaration"):
            continue  # member functions and their declarations take no room
        if field.type != "field_declaration" or any(c.type == "bitfield_clause" for c in field.children):
            return None
        if any(c.type == "storage_class_specifier" for c in field.children):
            continue  # a static member is not in the struct's bytes
        kind = field.child_by_field_name("type")
        declarators = field.children_by_field_name("declarator")
        if kind is None or not declarators:
            return None
        if any(d.type == "function_declarator" for d in declarators):
            continue
        base = " ".join((kind.text or b"").decode().split())
        fdtype, flanes = element_type(known.get(base, base))
        if fdtype is None or (dtype is not None and fdtype != dtype):
            return None
        dtype = fdtype
        align = ITEMSIZE[fdtype] * (flanes if flanes in (2, 4) else 1)  # float2/float4 align to their size
        if offset % align:
            return None  # padding before this field
        widest = max(widest, align)
        for d in declarators:
            count = _count(d, macros)
            if count is None:
                return None
            lanes += flanes * count
            offset += ITEMSIZE[fdtype] * flanes * count
    if dtype is None or lanes == 0 or offset % widest:
        return None  # nothing, or padding at the end (sizeof rounds up to the widest alignment)
    return f"{C_SPELLING[dtype]}[{lanes}]"


def _count(declarator: Node, macros: dict[str, str]) -> int | None:
    """How many elements a field declarator holds: 1, or its array sizes multiplied."""
    count = 1
    while declarator.type == "array_declarator":
        size = declarator.child_by_field_name("size")
        value = _integer((size.text or b"").decode(), macros) if size is not None else None
        if value is None or value <= 0:
            return None
        count *= value
        declarator = declarator.child_by_field_name("declarator")
    return count if declarator.type == "field_identifier" else None


def _integer(text: str, macros: dict[str, str], depth: int = 0) -> int | None:
    """An integer constant expression of literals, `#define`d names and + - * / << >> | &."""
    text = re.sub(r"(?<=\d)[uUlL]+\b", "", text.strip()).replace("/", "//")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    return _eval(tree, macros, depth)


def _eval(node: ast.AST, macros: dict[str, str], depth: int) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in macros and depth < 8:
        return _integer(macros[node.id], macros, depth + 1)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _eval(node.left, macros, depth), _eval(node.right, macros, depth)
        if left is None or right is None or (isinstance(node.op, ast.FloorDiv) and right == 0):
            return None
        return _OPS[type(node.op)](left, right)
    return None
