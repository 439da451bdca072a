"""Structs made of one element type, as element types: `struct naiveStruct { float a; float b; }`
is two float lanes per element, `struct { float a[SIZE]; float b[SIZE]; }` 2*SIZE. Samples and
real code pass arrays of such structs (AoS) and single structs of arrays (SoA) to kernels;
the evaluator fills and compares them as what they hold. A struct with padding, mixed element
types, pointers, bit fields or an array size it cannot read stays unknown: its bytes would not
be what random values of one type make them.

A template struct of one element type (`template <typename T, int N> struct Pack { T elem[N]; }`,
the packs vectorised code loads) is a layout over its parameters (`T[N]`), instantiated where a
kernel names it (`Pack<T, pack_size>*` is `T[pack_size]`, and `half[2]` once the kernel's own
template arguments are known).

A union is the layout every member gives its bytes: a single-member union is its member's
layout, and one whose members are all the same lanes (`union { float2 v; float a[2]; }`) is
those lanes. Members are resolved as struct fields are (scalars, arrays, CUDA vector types, the
file's aliases and structs); named by its tag or its typedef, a union serves kernel parameters
and struct fields alike, and an anonymous struct or union inside another is its members in place.
Members of different sizes, or any member fsr cannot read, leave it unknown: its size would be
its largest member's, and the bytes past a smaller member are no value of its type.

Members of one size but different lanes are one layout only when every member is integer data
(`union { uint64_t a; uint2 b; }`): then the union is the widest integer lane any member reads,
tiled over its bytes (`unsigned long[1]` here, `int[3]` for `union { int a[3]; short b[6]; }`),
signed only when every member is. Integers are compared exactly, as bits (their storage is a
signed integer of the same width), so two buffers of lanes are equal exactly when their bytes
are, and then every integer view of those bytes (the uint2's halves, the uint64_t whole) is
equal too: nothing a kernel reads through another member is hidden. The widest lane keeps the
member that reads most bytes at once a value of the spec's range. A float member among
different lanes stays unknown: compared as floats, integer bit patterns that are NaNs or
denormals would be judged by a tolerance, not exactly, and compared as integers, a float result
that differs only by rounding would fail."""

from __future__ import annotations

import ast
import operator
import re

from tree_sitter import Node

from .brackets import split_top_level
from .c_types import C_SPELLING, ITEMSIZE, element_type
from .treesitter import aggregates_of

DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(.+?)[ \t]*$", re.M)
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
        ast.BitAnd: operator.and_}


def struct_types(text: str, known: dict[str, str] | None = None) -> dict[str, str]:
    """Struct or union name -> an element type spelling (`float[2]`) for every struct in `text`
    whose layout is its lanes of one type and nothing else, and every union whose members give
    its bytes one such layout; `known` aliases serve its field types."""
    known = dict(known or {})
    macros = {m.group(1): m.group(2) for m in DEFINE_LINE.finditer(text)}
    out: dict[str, str] = {}
    aligns: dict[str, int] = {}  # the alignment of each struct or union of `out`, for fields of its type
    for node in aggregates_of(text.encode(), "struct_specifier", "union_specifier"):
        body = node.child_by_field_name("body")
        if body is None or _template_of(node) is not None:
            continue  # templates are layouts over their parameters (struct_templates)
        found = _aggregate(node, body, {**known, **out}, aligns, macros)
        align = _aligned_size(node, found, macros) if found is not None else None
        if found is None or align is None:
            continue
        dtype, lanes, _ = found
        for name in names_of(node):
            out[name] = f"{C_SPELLING[dtype]}[{lanes}]"
            aligns[name] = align
    return out


def names_of(struct: Node) -> list[str]:
    """The struct's (or union's) tag, and the name a `typedef struct {...} Name;` gives it."""
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


# (dtype, lanes, alignment in bytes): a member's layout, or a whole struct's or union's
_Layout = tuple[str, int, int]
_INTEGERS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def _aggregate(node: Node, body: Node, known: dict[str, str], aligns: dict[str, int],
               macros: dict[str, str]) -> _Layout | None:
    if node.type == "union_specifier":
        return _union_layout(body, known, aligns, macros)
    return _layout(body, known, aligns, macros)


def _layout(body: Node, known: dict[str, str], aligns: dict[str, int], macros: dict[str, str]) -> _Layout | None:
    """A struct's fields one after another: lanes of one type with no padding between them or
    at the end."""
    members = _members(body, known, aligns, macros)
    if not members or len({dtype for dtype, _, _ in members}) != 1:
        return None
    dtype, offset, widest = members[0][0], 0, 1
    for _, lanes, align in members:
        if offset % align:
            return None  # padding before this field
        widest = max(widest, align)
        offset += ITEMSIZE[dtype] * lanes
    if offset % widest:
        return None  # padding at the end (sizeof rounds up to the widest alignment)
    return dtype, offset // ITEMSIZE[dtype], widest


def _union_layout(body: Node, known: dict[str, str], aligns: dict[str, int],
                  macros: dict[str, str]) -> _Layout | None:
    """A union's members over the same bytes: their common layout, or integer lanes when every
    member is integer data of the same size (the module's docstring says why that is exact)."""
    members = _members(body, known, aligns, macros)
    if not members:
        return None
    sizes = {ITEMSIZE[dtype] * lanes for dtype, lanes, _ in members}
    align = max(a for _, _, a in members)
    if len(sizes) != 1:
        return None  # sizeof is the largest member's: the smaller ones leave bytes no value of theirs covers
    size = sizes.pop()
    if size % align:
        return None  # padding at the end
    views = {(dtype, lanes) for dtype, lanes, _ in members}
    if len(views) == 1:
        dtype, lanes = views.pop()
        return dtype, lanes, align
    dtypes = {dtype for dtype, _, _ in members}
    if not dtypes <= _INTEGERS:
        return None  # a float view beside another: neither float nor integer comparison fits both
    lane = max(ITEMSIZE[d] for d in dtypes)
    signed = all(not d.startswith("u") for d in dtypes)
    return f"{'int' if signed else 'uint'}{8 * lane}", size // lane, align


def _members(body: Node, known: dict[str, str], aligns: dict[str, int],
             macros: dict[str, str]) -> list[_Layout] | None:
    """Each data member of a struct or union body, in order, as (dtype, lanes, alignment) with
    its array sizes multiplied in; None when one is not lanes of an element type fsr knows."""
    out: list[_Layout] = []
    for field in body.named_children:
        if field.type in ("function_definition", "comment", "access_specifier", "declaration"):
            continue  # member functions and their declarations take no room
        if field.type != "field_declaration" or any(c.type == "bitfield_clause" for c in field.children):
            return None
        if any(c.type == "storage_class_specifier" for c in field.children):
            continue  # a static member is not in the struct's bytes
        kind = field.child_by_field_name("type")
        declarators = field.children_by_field_name("declarator")
        if kind is None:
            return None
        if any(d.type == "function_declarator" for d in declarators):
            continue
        member = _member_type(kind, known, aligns, macros)
        if member is None:
            return None
        dtype, lanes, align = member
        if not declarators:
            if _inline_body(kind) is None or kind.child_by_field_name("name") is not None:
                return None
            out.append(member)  # an anonymous struct or union: its members are the outer one's, in place
            continue
        for d in declarators:
            count = _count(d, macros)
            if count is None:
                return None
            out.append((dtype, lanes * count, align))
    return out


def _inline_body(kind: Node) -> Node | None:
    return kind.child_by_field_name("body") if kind.type in ("struct_specifier", "union_specifier") else None


def _member_type(kind: Node, known: dict[str, str], aligns: dict[str, int],
                 macros: dict[str, str]) -> _Layout | None:
    """The layout of one member's type: a struct or union written in place, or a name (an
    element type, an alias, a struct or union of the file: `union benchtype` or `benchtype`)."""
    body = _inline_body(kind)
    if body is not None:
        return None if _alignment(kind) is not None else _aggregate(kind, body, known, aligns, macros)
    base = re.sub(r"^(?:struct|union)\s+", "", " ".join((kind.text or b"").decode().split()))
    dtype, lanes = element_type(known.get(base, base))
    if dtype is None:
        return None
    if base in aligns:
        return dtype, lanes, aligns[base]
    return dtype, lanes, ITEMSIZE[dtype] * (lanes if lanes in (2, 4) else 1)  # float2/float4 align to their size


def _count(declarator: Node, macros: dict[str, str]) -> int | None:
    """How many elements a field declarator holds: 1, or its array sizes multiplied."""
    count = 1
    while declarator.type == "array_declarator":
        size = declarator.child_by_field_name("size")
        value = integer_constant((size.text or b"").decode(), macros) if size is not None else None
        if value is None or value <= 0:
            return None
        count *= value
        declarator = declarator.child_by_field_name("declarator")
    return count if declarator.type == "field_identifier" else None


def integer_constant(text: str, macros: dict[str, str], depth: int = 0) -> int | None:
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
        return integer_constant(macros[node.id], macros, depth + 1)
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
    macros = {m.group(1): m.group(2) for m in DEFINE_LINE.finditer(text)}
    out: dict[str, str] = {}
    for node in aggregates_of(text.encode(), "struct_specifier"):
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
    inner = kind.child_by_field_name("body") if kind is not None and not declarators and kind.type in (
        "union_specifier", "struct_specifier") and kind.child_by_field_name("name") is None else None
    if inner is not None:  # `union { T elem[N]; };`: an anonymous member is its members in place
        return _template_layout(inner, params, macros)
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
        if text not in params and (integer_constant(text, macros) or 0) <= 0:
            return None
        lengths.append(text if text in params else str(integer_constant(text, macros)))
        d = d.child_by_field_name("declarator")
    if d.type != "field_identifier" or not lengths:
        return None
    return f"{base}[{' * '.join(lengths)}]"


def _aligned_size(struct: Node, layout: _Layout, macros: dict[str, str]) -> int | None:
    """The struct's alignment: its own, or an `alignas` (a constant) that its size is a multiple
    of; None for an alignas that pads it or that fsr cannot read."""
    dtype, lanes, align = layout
    node = _alignment(struct)
    if node is None:
        return align
    inner = (node.text or b"").decode().strip()[len("alignas"):].strip()
    said = integer_constant(inner[1:-1], macros) if inner.startswith("(") and inner.endswith(")") else None
    if said is None or said <= 0 or (ITEMSIZE[dtype] * lanes) % said:
        return None
    return max(said, align)


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
