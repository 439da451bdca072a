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
from .treesitter import YIELDING_BYTES, enclosing_words, nodes_of, parse
from .word_regex import word_start

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
    alone: bool = True  # False: declared with others (`__device__ int a, b;`)


def device_variables(text: str) -> list[DeviceVariable]:
    """The file's writable `__device__`/`__managed__` variables (not `__constant__`, not const,
    not functions), at file scope or in a namespace."""
    return list(_device_variables(text))


@lru_cache(maxsize=8)  # asked once per kernel of a file: read once per file contents
def _device_variables(text: str) -> tuple[DeviceVariable, ...]:
    found = []
    for decl in _declarations_with_spaces(text.encode()):
        if decl.parent is None or decl.parent.type not in ("translation_unit", "declaration_list"):
            continue
        head = (decl.text or b"").decode(errors="replace")
        if not _SPACES.search(head) or _SKIP.search(head.split("=", 1)[0]):
            continue
        type_node = decl.child_by_field_name("type")
        type_text = (type_node.text or b"").decode() if type_node is not None else ""
        declarators = decl.children_by_field_name("declarator")
        for declarator in declarators:
            name, dims = _name_and_dims(declarator)
            if name:
                found.append(DeviceVariable(name, type_text, dims, decl.parent.type == "translation_unit",
                                            len(declarators) == 1))
    return tuple(found)


def _declarations_with_spaces(data: bytes) -> list[Node]:
    """The declarations whose text names `__device__` or `__managed__`, found from those words'
    places in the text, not by a query over every declaration of the tree (a 10 MB file's took
    0.5 s of its first draft); a declaration met twice is kept once, in source order."""
    root = parse(data).root_node
    if len(data) <= YIELDING_BYTES:  # a small tree: the query is as quick, and sees what the words' places would
        return nodes_of(root, "declaration")
    return enclosing_words(root, data, _SPACES_BYTES, "declaration")


_SPACES_BYTES = re.compile(word_start("__device__", "__managed__").encode() + rb"\b")


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


_DEFINES = re.compile(r"^[ \t]*#[ \t]*define\b(?:[^\n\\]|\\.|\\\n)*", re.M)  # with continued lines


def _writes(v: DeviceVariable) -> re.Pattern[str]:
    """A mention that may write the variable: an assignment or increment (of an element, of a
    member), its address taken, an atomic on it, a reference bound to it, or (an array) passed on
    or kept in a pointer, where what receives it may write it."""
    n = re.escape(v.name)
    index = r"(?:\s*\[(?:[^\[\]]|\[[^\[\]]*\])*\])*(?:\s*\.\s*\w+)*"  # hist[x[i] & 255][0], acc.x
    forms = [rf"\b{n}\b{index}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)", rf"\b{n}\b{index}\s*(?:\+\+|--)",
             rf"(?:\+\+|--)\s*\(*\s*{n}\b", rf"&\s*\(*\s*{n}\b", rf"\batomic\w*\s*\(\s*\(*\s*{n}\b",
             rf"&\s*\w+\s*=\s*{n}\b"]
    if v.dims:
        forms.append(rf"[(,=]\s*{n}\s*(?:[-+]\s*[^,;)]+)?\s*[,;)]")
    return re.compile("|".join(forms))


def _used_macros(text: str, bodies: list[str]) -> list[str]:
    """The `#define`s the code in `bodies` uses, and those they use in turn."""
    defined = {m.group(1): m.group() for m in re.finditer(_DEFINES.pattern.replace(r"define\b", r"define\s+(\w+)"), text, re.M)}
    used: dict[str, str] = {}
    todo = list(bodies)
    while todo:
        code = todo.pop()
        for name in set(re.findall(r"[A-Za-z_]\w*", code)) & defined.keys() - used.keys():
            used[name] = defined[name]
            todo.append(defined[name])
    return list(used.values())


def written_variables(src: SourceText, kernel: Kernel) -> list[DeviceVariable]:
    """The `__device__`/`__managed__` variables the kernel (or a function it calls, or a macro)
    may write: any it mentions that some code may write through."""
    variables = device_variables(src.text)
    if not variables:
        return []
    masked = lex(src.data).masked.decode(errors="replace")
    bodies = [lex(b.encode()).masked.decode(errors="replace") for b in reachable_bodies(src.text, kernel.name)]
    macros = _used_macros(src.text, bodies)
    kept = []
    for v in variables:
        mention = re.compile(rf"\b{re.escape(v.name)}\b")
        if not any(mention.search(b) for b in bodies + macros):
            continue
        writes = _writes(v)
        if any(writes.search(b) for b in bodies + macros) or re.search(rf"&\s*\(*\s*{re.escape(v.name)}\b", masked):
            kept.append(v)
    return kept


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
        if not v.alone:
            return f"`{v.name}` is declared together with others in one declaration"
        if _declared_again(text, v.name):
            return f"another declaration in the file is named `{v.name}` too (a local, a parameter or a member)"
        n = re.escape(v.name)
        if re.search(rf"::\s*{n}\b|\bdecltype\s*\(\s*{n}\b", text):
            return f"`{v.name}` is named as `::{v.name}` or in `decltype`"
        if re.search(rf"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|undef)\b[^\n]*\b{n}\b", text, re.M) or \
                any(re.search(rf"#\s*define\s+\w+\s*\([^)]*\b{n}\b", m.group()) for m in _DEFINES.finditer(text)):
            return f"`{v.name}` is named in a preprocessor condition or as a macro's parameter"
    return ""


def shadowed(text: str, names: tuple[str, ...]) -> str:
    """The first of `names` that `text` (a rewrite's file) declares again, as a local, a parameter
    or a member ('' where none): made a pointer, that one would be another thing."""
    return next((n for n in names if _declared_again(text, n)), "")


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
    """Elements of its C type (a `float4 acc[8]` has 8)."""
    count = 1
    for d in v.dims:
        count *= int(d)
    return count


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
    for m in re.finditer(_DEFINES.pattern.encode(), data, re.M):  # a macro's body names it too
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


def compared_variables(src: SourceText, kernel: Kernel) -> tuple[list[DeviceVariable], str]:
    """The variables the kernel may write, to be made buffers, and why no spec can verify the
    kernel where they cannot be ('' where they can): the drafts and the evaluator say the same."""
    kept = written_variables(src, kernel)
    why = not_redirectable(src.text, kept) if kept else ""
    return kept, DEVICE_VARIABLE_WRITER.format(what=phrase(kept), why=why) if why else ""
