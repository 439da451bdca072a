"""Structs made of one element type, as element types: `struct naiveStruct { float a; float b; }`
is two float lanes per element, `struct { float a[SIZE]; float b[SIZE]; }` 2*SIZE. Samples and
real code pass arrays of such structs (AoS) and single structs of arrays (SoA) to kernels;
the evaluator fills and compares them as what they hold. A struct with padding, mixed element
types, pointers, bit fields or an array size it cannot read stays unknown: its bytes would not
be what random values of one type make them.

A template struct of one element type (`template <typename T, int N> struct Pack { T elem[N]; }`,
the packs vectorised code loads) is a layout over its parameters (`T[N]`), instantiated where a
kernel names it (`Pack<T, pack_size>*` is `T[pack_size]`, and `half[2]` once the kernel's own
template arguments are known)."""

from __future__ import annotations

import ast
import operator
import re

from tree_sitter import Node

from .brackets import split_top_level
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
        if body is None or _template_of(node) is not None:
            continue  # templates are layouts over their parameters (struct_templates)
        layout = _layout(body, {**known, **out}, macros)
        if layout is None or not _aligned_size(node, layout, macros):
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


def struct_templates(text: str) -> dict[str, str]:
    """`Pack<T, N>` -> `T[N]` for every template struct in `text` whose bytes are one array of
    one element type, its length a literal, a `#define` or a template parameter: keyed by the
    struct's name with its own parameter names, so an instantiation can substitute them."""
    macros = {m.group(1): m.group(2) for m in _DEFINE.finditer(text)}
    out: dict[str, str] = {}
    for node in nodes_of(parse(text.encode()).root_node, "struct_specifier"):
        template, body, tag = _template_of(node), node.child_by_field_name("body"), node.child_by_field_name("name")
        if template is None or body is None or tag is None or not tag.text:
            continue
        layout = _template_layout(body, template, macros)
        if layout is None or not _alignment_fits(node, layout):
            continue
        out[f"{tag.text.decode()}<{', '.join(template)}>"] = layout
    return out


def instantiated(spelling: str, templates: dict[str, str]) -> str | None:
    """The layout a template struct's instantiation has (`Pack<T, pack_size>` -> `T[pack_size]`),
    or None when `spelling` names no template struct of `templates`."""
    m = re.fullmatch(r"\s*(\w+)\s*<(.*)>\s*", spelling)
    if not m:
        return None
    key = next((k for k in templates if k.startswith(m.group(1) + "<")), None)
    if key is None:
        return None
    names = [n.strip() for n in key[len(m.group(1)) + 1:-1].split(",")]
    values = _top_level_args(m.group(2))
    if len(values) != len(names):
        return None
    return substituted(templates[key], dict(zip(names, values)))


def substituted(spelling: str, subst: dict[str, str]) -> str:
    """`spelling` with each whole identifier that `subst` names replaced (`T[N]` -> `half[2]`)."""
    if spelling in subst:
        return subst[spelling]
    return re.sub(r"[A-Za-z_]\w*", lambda m: subst.get(m.group(0), m.group(0)), spelling) if subst else spelling


def _top_level_args(text: str) -> list[str]:
    return [a.strip() for a in split_top_level(text, ",", "<(", ">)") if a.strip()]


def _template_of(struct: Node) -> list[str] | None:
    """The parameter names of the template that declares this struct, or None."""
    parent = struct.parent
    if parent is None or parent.type != "template_declaration":
        return None
    params = parent.child_by_field_name("parameters")
    names = []
    for p in (params.named_children if params is not None else []):
        ident = [c for c in p.named_children if c.type in ("type_identifier", "identifier")]
        if not ident or not ident[-1].text:
            return []
        names.append(ident[-1].text.decode())
    return names


def _template_layout(body: Node, params: list[str], macros: dict[str, str]) -> str | None:
    """`T[N]` for a body that is one field of one type, an array whose length is a literal, a
    macro or a template parameter; None for anything else."""
    fields = [f for f in body.named_children if f.type not in ("function_definition", "comment", "access_specifier",
                                                                "declaration")]
    if len(fields) != 1 or fields[0].type != "field_declaration":
        return None
    field = fields[0]
    kind, declarators = field.child_by_field_name("type"), field.children_by_field_name("declarator")
    if kind is None or len(declarators) != 1 or any(c.type in ("bitfield_clause", "storage_class_specifier")
                                                     for c in field.children):
        return None
    base = " ".join((kind.text or b"").decode().split())
    if base not in params and element_type(base)[0] is None:
        return None
    lengths, d = [], declarators[0]
    while d.type == "array_declarator":
        size = d.child_by_field_name("size")
        text = (size.text or b"").decode().strip() if size is not None else ""
        if text not in params and (_integer(text, macros) or 0) <= 0:
            return None
        lengths.append(text if text in params else str(_integer(text, macros)))
        d = d.child_by_field_name("declarator")
    if d.type != "field_identifier" or not lengths:
        return None
    return f"{base}[{' * '.join(lengths)}]"


def _aligned_size(struct: Node, layout: str, macros: dict[str, str]) -> bool:
    """No `alignas`, or one (a constant) that the struct's size is a multiple of: no padding."""
    node = _alignment(struct)
    if node is None:
        return True
    inner = (node.text or b"").decode().strip()[len("alignas"):].strip()
    align = _integer(inner[1:-1], macros) if inner.startswith("(") and inner.endswith(")") else None
    dtype, lanes = element_type(layout)
    return align is not None and align > 0 and dtype is not None and (ITEMSIZE[dtype] * lanes) % align == 0


def _alignment(struct: Node) -> Node | None:
    return next((c for c in struct.children if c.type == "alignas_qualifier"), None)


def _alignment_fits(struct: Node, layout: str) -> bool:
    """No `alignas`, or `alignas(sizeof(T) * N)` for a layout `T[N]`: the struct's own size,
    so no padding follows its elements."""
    node = _alignment(struct)
    if node is None:
        return True
    said = re.sub(r"\s+", "", (node.text or b"").decode())
    base, length = layout[:-1].split("[", 1)
    sizes = {f"alignas(sizeof({base})*{length.replace(' ', '')})", f"alignas({length.replace(' ', '')}*sizeof({base}))"}
    return said in sizes
