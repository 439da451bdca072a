"""Kernels that keep a result in a `__device__` or `__managed__` variable of the file (a
reduction's `atomicAdd(&dResult, x)`, a counter the host reads back). fsr compares buffers, so
such a variable is made one: each is declared as a pointer (`__device__ float dResult;` becomes
`__device__ float (*__fsr_dv_dResult);`, every use `(*__fsr_dv_dResult)`, line for line), and
the evaluator points it at a buffer of its own before each launch, compared as any output (a
rewrite that skipped the write is wrong). Where that cannot be done safely (a namespace, a
local or parameter of the same name, a type fsr cannot fill) fsr says so by name instead."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from ..source import SourceText
from .c_types import element_type
from .callees import reachable_bodies
from .kernel import Kernel
from .lexical import lex
from .treesitter import nodes_of, parse

PREFIX = "__fsr_dv_"  # the pointer a redirected variable becomes (a module symbol the evaluator sets)
_SPACES = re.compile(r"\b(__device__|__managed__)\b")
_SKIP = re.compile(r"\b(__constant__|const|constexpr|extern)\b")  # read-only, or defined elsewhere
_DECLARING = ("init_declarator", "array_declarator", "pointer_declarator", "reference_declarator",
              "parameter_declaration", "declaration", "field_declaration", "optional_parameter_declaration")


@dataclass(frozen=True)
class DeviceVariable:
    name: str
    type_text: str  # its element type as written (`unsigned int`)
    dims: tuple[str, ...]  # array extents as written (`[256][2]` -> ("256", "2"))
    at_file_scope: bool  # False: inside a namespace (`inner::total` cannot be redirected)


def device_variables(text: str) -> list[DeviceVariable]:
    """The file's writable `__device__`/`__managed__` variables (not `__constant__`, not const,
    not functions), at file scope or in a namespace."""
    return list(_device_variables(text))


@lru_cache(maxsize=8)  # asked once per kernel of a file: read once per file contents
def _device_variables(text: str) -> tuple[DeviceVariable, ...]:
    found = []
    for decl in nodes_of(parse(text.encode()).root_node, "declaration"):
        if decl.parent is None or decl.parent.type not in ("translation_unit", "declaration_list"):
            continue
        head = (decl.text or b"").decode(errors="replace")
        if not _SPACES.search(head) or _SKIP.search(head.split("=", 1)[0]):
            continue
        type_node = decl.child_by_field_name("type")
        type_text = (type_node.text or b"").decode() if type_node is not None else ""
        for declarator in decl.children_by_field_name("declarator"):
            name, dims = _name_and_dims(declarator)
            if name:
                found.append(DeviceVariable(name, type_text, dims, decl.parent.type == "translation_unit"))
    return tuple(found)


def _name_and_dims(node: Node) -> tuple[str, tuple[str, ...]]:
    dims: list[str] = []
    while node is not None and node.type != "identifier":
        if node.type == "function_declarator" or node.type == "pointer_declarator":
            return "", ()
        if node.type == "array_declarator":
            size = node.child_by_field_name("size")
            dims.insert(0, (size.text or b"").decode() if size is not None else "")
        node = node.child_by_field_name("declarator")
    return ((node.text or b"").decode() if node is not None else ""), tuple(dims)


def _writes(name: str) -> re.Pattern[str]:
    n = re.escape(name)
    index = r"(?:\s*\[(?:[^\[\]]|\[[^\[\]]*\])*\])*"  # hist[x[i] & 255][0]: one level of nesting
    return re.compile(rf"\b{n}\b{index}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"  # dResult = x, hist[i] += 1
                      rf"|\b{n}\b{index}\s*(?:\+\+|--)|(?:\+\+|--)\s*{n}\b"  # count++
                      rf"|&\s*{n}\b"  # atomicAdd(&dResult, x): its address, taken to write through
                      rf"|\batomic\w*\s*\(\s*{n}\b")  # atomicAdd(hist + bin, 1)


def written_variables(src: SourceText, kernel: Kernel) -> list[DeviceVariable]:
    """The `__device__`/`__managed__` variables the kernel (or a function it calls) writes."""
    variables = device_variables(src.text)
    if not variables:
        return []
    bodies = [lex(b.encode()).masked.decode(errors="replace") for b in reachable_bodies(src.text, kernel.name)]
    return [v for v in variables if any(_writes(v.name).search(body) for body in bodies)]


def phrase(variables: list[DeviceVariable]) -> str:
    names = [f"`{v.name}`" for v in variables]
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def not_redirectable(text: str, variables: list[DeviceVariable]) -> str:
    """Why these variables cannot be made buffers ('' when they can)."""
    for v in variables:
        if not v.at_file_scope:
            return f"`{v.name}` is declared in a namespace"
        dtype, lanes = element_type(v.type_text)
        if dtype is None:
            return f"`{v.name}` is a `{v.type_text}`, not a type fsr can fill"
        if not all(d.strip().isdigit() for d in v.dims):
            return f"`{v.name}`'s extents {''.join(f'[{d}]' for d in v.dims)} are not numbers"
        if _declared_again(text, v.name):
            return f"another declaration in the file is named `{v.name}` too (a local, a parameter or a member)"
    return ""


def _declared_again(text: str, name: str) -> bool:
    """Whether `name` is declared anywhere but at file scope: redirected, it would be another thing."""
    for node in nodes_of(parse(text.encode()).root_node, "identifier"):
        if node.text != name.encode():
            continue
        parent = node.parent
        if parent is not None and parent.type in _DECLARING and parent.child_by_field_name("declarator") == node:
            scope = parent
            while scope is not None and scope.type not in ("declaration", "parameter_declaration", "field_declaration"):
                scope = scope.parent
            if scope is None or scope.type != "declaration" or scope.parent is None \
                    or scope.parent.type != "translation_unit":
                return True
    return False


def element_count(v: DeviceVariable) -> int:
    count = 1
    for d in v.dims:
        count *= int(d)
    return count * (element_type(v.type_text)[1] or 1)


def redirected(text: str, names: tuple[str, ...]) -> str:
    """`text` with each named variable a pointer (`PREFIX` + name) and every use through it, line
    for line. Uses a candidate's kernel adds to an already redirected text are redirected too."""
    if not names:
        return text
    data = text.encode()
    edits: list[tuple[int, int, bytes]] = []
    wanted = {n.encode() for n in names}
    tree = parse(data).root_node
    first: dict[str, str] = {}  # name -> the declaration's type and extents, as the first one has them
    for decl in nodes_of(tree, "declaration"):
        if decl.parent is None or decl.parent.type != "translation_unit":
            continue
        for declarator in decl.children_by_field_name("declarator"):
            name, dims = _name_and_dims(declarator)
            if name.encode() not in wanted:
                continue
            shape = f"{decl.child_by_field_name('type').text!r}{dims}"
            if name not in first:
                first[name] = shape
                edits.append(_pointer_declaration(decl, declarator, name, dims))
            elif first[name] == shape:  # a rewrite that repeats the file's declaration: one variable
                edits.append((decl.start_byte, decl.end_byte, b"\n" * decl.text.count(b"\n")))
    for node in nodes_of(tree, "identifier"):
        if node.text in wanted and not any(s <= node.start_byte < e for s, e, _ in edits):
            edits.append((node.start_byte, node.end_byte, f"(*{PREFIX}{node.text.decode()})".encode()))
    for m in re.finditer(rb"^[ \t]*#[ \t]*define\b[^\n]*", data, re.M):  # a macro's body names it too
        for w in re.finditer(rb"\b(" + b"|".join(re.escape(n) for n in wanted) + rb")\b", m.group()):
            at = m.start() + w.start()
            if not any(s <= at < e for s, e, _ in edits):
                edits.append((at, m.start() + w.end(), b"(*" + PREFIX.encode() + w.group() + b")"))
    out, at = bytearray(), 0
    for start, end, new in sorted(edits):
        out += data[at:start] + new
        at = end
    return (out + data[at:]).decode()


def _pointer_declaration(decl: Node, declarator: Node, name: str, dims: tuple[str, ...]) -> tuple[int, int, bytes]:
    """The declaration as a pointer to what it held, without its initializer or `static` (the
    evaluator finds the symbol by name), on its own line(s)."""
    head = decl.text.decode()[:declarator.start_byte - decl.start_byte]  # `static __device__ float `
    head = re.sub(r"\bstatic\b", "", head).rstrip()
    extents = "".join(f"[{d}]" for d in dims)
    lines = decl.text.decode().count("\n")
    return decl.start_byte, decl.end_byte, f"{head} (*{PREFIX}{name}){extents};{chr(10) * lines}".encode()


DEVICE_VARIABLE_WRITER = ("it keeps results in the file's {what} (`__device__`/`__managed__`), which fsr cannot "
                          "compare here ({why}): a rewrite that skipped those writes would pass every check, so no "
                          "spec can verify it (give the kernel a buffer to write them to)")
