"""Structs passed by value whose fields are scalars and pointers: parameter structs.

The CUDA guide's `Matrix A` (`{ int width, height, stride; float* elements; }`) and the params
structs of production kernels (`{ const float* x; float* y; int n; float eps; }`) hand a kernel
its buffers inside one argument. fsr runs such a kernel field by field: each pointer field is a
buffer of its own (filled, guarded and compared as a pointer parameter is), each scalar field a
value, and the evaluator packs them into the struct's bytes at the offsets the C ABI gives.

A struct qualifies when every data member is one scalar of an element type fsr knows (vector
types included) or one pointer to such an element type (`void*` is bytes); member functions and
static members take no room and are skipped. A template struct (`Lmha_params<float>`) is its
members with the arguments substituted; a member typed by the kernel's own template parameter
waits for the spec's `template`. Arrays, bit fields, nested structs, references, base classes and
`alignas` leave it out: its layout would be a guess."""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache

from tree_sitter import Node

from .brackets import split_top_level
from .c_types import element_type, parse_param
from .kernel import Kernel, Param
from .lexical import active_text, defined_macros
from .structs import DEFINE_LINE, integer_constant, names_of, substituted
from .treesitter import aggregates_of
from .word_regex import word_start


# `constexpr int MAX_DIMS = 8;`, `static const int N = 4;`: array sizes as a #define gives them
_CONSTANT = re.compile(r"(?:" + word_start("static") + r"\s+(?:constexpr|const)|" + word_start("constexpr", "const") +
                       r")\s+(?:unsigned\s+|signed\s+)?(?:int|long|short|size_t|unsigned)\s+(\w+)\s*=\s*([^;]+);")


@dataclasses.dataclass(frozen=True)
class StructDecl:
    """A struct's data members as written (type text, declarator), and the names of its template
    parameters when it is a template (`template <typename T> struct Lmha_params { T* out; ... }`)."""

    members: tuple[tuple[str, str], ...]
    template: tuple[str, ...] = ()
    macros: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)  # the text's #defines (array sizes)


def struct_fields(text: str, aliases: dict[str, str] | None = None) -> dict[str, tuple[Param, ...]]:
    """Struct name (its tag and its typedef name) -> its data members, as parameters are read
    (`dtype`, `lanes`, `is_pointer`), for every struct of `text` that qualifies (module
    docstring) and is no template. Element types named through `aliases` are resolved."""
    out = {}
    for name, decl in struct_declarations(text).items():
        fields = None if decl.template else resolved(decl, [], aliases or {})
        if fields:
            out[name] = fields
    return out


@lru_cache(maxsize=8)  # one parse per text and build: a 10 MB file's 2,464 kernels each asked it again (1 s a time)
def struct_declarations(text: str, defined: frozenset[str] = frozenset()) -> dict[str, StructDecl]:
    """Every struct of `text` whose members could qualify, templates included, unresolved: read
    from the `#if` branches the text takes with its own `#define`s and `defined` (a build's -D);
    a name declared twice otherwise (two namespaces) is left out, as is every struct of a text
    that packs them (`#pragma pack`). The answer is shared between callers: read it, never change it."""
    if "struct" not in text and "class" not in text or re.search(r"#\s*pragma\s+pack\b", text):
        return {}
    text = active_text(text, defined_macros(text.encode()) | set(defined))
    out: dict[str, StructDecl] = {}
    twice: set[str] = set()
    macros = {m.group(1): m.group(2) for m in DEFINE_LINE.finditer(text)}
    macros.update({m.group(1): m.group(2) for m in _CONSTANT.finditer(text)})
    for node in aggregates_of(text.encode(), "struct_specifier", "class_specifier"):
        body = node.child_by_field_name("body")
        if body is None or _unusual(node):
            continue
        members = _members(body, node.type == "class_specifier")
        for name in names_of(node):
            if name in out and out[name].members != members:
                twice.add(name)
            if members:
                out[name] = StructDecl(members, _template_names(node), macros)
    return {k: v for k, v in out.items() if k not in twice}


def resolved(decl: StructDecl, args: list[str], aliases: dict[str, str],
             open_names: frozenset[str] = frozenset()) -> tuple[Param, ...] | None:
    """The struct's members with its template arguments substituted (`T*` of `Lmha_params<float>`
    is a float buffer); a member whose type is one of `open_names` (the kernel's own template
    parameters, known once a spec names them) stays untyped. None when a member does not qualify."""
    if len(args) != len(decl.template):
        return None
    subst = dict(zip(decl.template, args))
    out = []
    for type_text, declarator in decl.members:
        field = _field(substituted(type_text, subst), substituted(declarator, subst), aliases, open_names, decl.macros)
        if field is None:
            return None
        out.append(field)
    return tuple(out) or None


def with_struct_fields(kernel: Kernel, text: str, aliases: dict[str, str] | None = None,
                       defined: frozenset[str] = frozenset()) -> Kernel:
    """The kernel with each by-value struct parameter's members read from `text` (the file, or
    its headers) as a build defining `defined` reads them: only where one is still untyped, so a
    file without one pays nothing."""
    if all(p.is_pointer or p.dtype is not None or p.fields for p in kernel.params):
        return kernel
    found = struct_declarations(text, defined)
    if not found:
        return kernel
    open_names = frozenset(n for n in kernel.template_names if n)
    params = []
    for p in kernel.params:
        name, args = _instance(p.base_type)
        fields = resolved(found[name], args, aliases or {}, open_names) \
            if not p.is_pointer and p.dtype is None and not p.fields and name in found else None
        params.append(dataclasses.replace(p, fields=fields) if fields else p)
    return dataclasses.replace(kernel, params=tuple(params))


def instance_name(base: str) -> str:
    """The struct a by-value parameter's type names: `Matrix` of `const struct Matrix`, `P` of `a::P<float>`."""
    return _instance(" ".join(w for w in base.split() if w not in ("const", "volatile")))[0]


def _instance(base: str) -> tuple[str, list[str]]:
    """`struct Matrix` -> (Matrix, []); `Lmha_params<float>` -> (Lmha_params, [float])."""
    base = re.sub(r"^(?:struct|class)\s+", "", base.strip())
    m = re.fullmatch(r"([\w:]+)\s*<(.*)>", base)
    if not m:
        return base.split("::")[-1], []
    args = [a.strip() for a in split_top_level(m.group(2), ",", "<(", ">)") if a.strip()]
    return m.group(1).split("::")[-1], args


def _template_names(node: Node) -> tuple[str, ...]:
    parent = node.parent
    if parent is None or parent.type != "template_declaration":
        return ()
    params = parent.child_by_field_name("parameters")
    names = []
    for p in (params.named_children if params is not None else []):
        ident = [c for c in p.named_children if c.type in ("type_identifier", "identifier")]
        names.append(_text(ident[-1]) if ident else "?")
    return tuple(names)


def _unusual(node: Node) -> bool:
    """Anything that makes the layout more than its members in order."""
    return any(c.type in ("base_class_clause", "alignas_qualifier", "attribute_specifier", "ms_declspec_modifier")
               for c in node.children)


def _members(body: Node, private: bool = False) -> tuple[tuple[str, str], ...] | None:
    """Each data member as (type text, declarator), in order; None for a member that cannot be
    one, or that is not public (the build's layout check names each member: `private` for a class)."""
    out: list[tuple[str, str]] = []
    for member in body.named_children:
        if member.type == "access_specifier":
            private = _text(member).strip().rstrip(":").strip() != "public"
            continue
        if member.type in ("function_definition", "comment", "declaration",
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
        if private:
            return None
        type_text = _text(member)[:declarators[0].start_byte - member.start_byte]
        out += [(type_text, _text(d)) for d in declarators]
    return tuple(out) or None


def _field(type_text: str, declarator: str, aliases: dict[str, str], open_names: frozenset[str],
           macros: dict[str, str]) -> Param | None:
    """One member as a parameter would be read, or None when it is no scalar, vector, array of
    scalars or single pointer of a known element type (or of one of `open_names`). An array
    (`int sizes[4]`, `int strides[MAX_DIMS]`) is its lanes, as a vector passed by value is."""
    count, declarator = _array_count(declarator, macros)
    if count is None or re.search(r"[\[\]&()=]", declarator) or declarator.count("*") > 1:
        return None  # arrays fsr cannot size, references, function pointers, default member initialisers
    p = parse_param(f"{type_text} {declarator}")
    if not p.name or "<" in p.base_type:
        return None
    dtype, lanes = p.dtype, p.lanes
    if dtype is None and p.base_type in aliases:
        dtype, lanes = element_type(aliases[p.base_type])
    if dtype is None and p.base_type in open_names and count == 1:
        return Param(p.name, p.text, p.type_text, p.base_type, p.is_pointer, p.pointee_const, None, 1)
    if dtype is None or (count > 1 and (p.is_pointer or lanes != 1)):
        return None  # arrays of pointers or of vectors: not read
    return Param(p.name, p.text, p.type_text, p.base_type, p.is_pointer, p.pointee_const, dtype, lanes * count)


def _array_count(declarator: str, macros: dict[str, str]) -> tuple[int | None, str]:
    """(elements, the declarator without its array sizes): `sizes[4][2]` -> (8, `sizes`); a size
    fsr cannot evaluate gives None."""
    m = re.fullmatch(r"\s*([^\[]*?)\s*((?:\[[^\[\]]*\]\s*)+)", declarator)
    if not m:
        return 1, declarator
    count = 1
    for size in re.findall(r"\[([^\[\]]*)\]", m.group(2)):
        value = integer_constant(size, macros)
        if value is None or value <= 0:
            return None, declarator
        count *= value
    return count, m.group(1)


def _text(node: Node) -> str:
    return (node.text or b"").decode()
