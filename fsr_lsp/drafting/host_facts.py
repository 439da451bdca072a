"""The facts of a host scope (integer values, `dim3`s, allocations, macros, type aliases, lists
of literals), read from tree-sitter's tree as source text: what a launch's arguments and sizes
are made of. `host.py` finds the launches and the scope each one sees."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import MutableMapping
from typing import Iterator

from tree_sitter import Node

from ..kernels.c_types import element_type, without_qualifiers
from ..kernels.lexical import code_only, split_top_level
from ..source import SourceText
from .helpers import one_return_helper

_ALLOC_BYTES = {"cudaMalloc", "cudaMallocManaged", "cudaMallocHost", "cudaMallocAsync", "cudaHostAlloc"}
_CONTAINERS = re.compile(r"^(?:std::vector|thrust::(?:device|host|universal)_vector|std::array)\s*<\s*(.+?)\s*>$")
_TENSOR_FACTORIES = re.compile(r"^(?:torch|at)::(?:empty|zeros|ones|randn|rand|full|empty_like)$")


@dataclass
class Allocation:
    """Where a pointer's memory came from: a count of elements of `elem` or a number of bytes."""

    elem: str  # element type as written ('' when unknown, e.g. cudaMalloc of a void*)
    count: str = ""  # element count expression
    nbytes: str = ""  # byte count expression
    via: str = ""  # "cudaMalloc", "new[]", "std::vector", ...


@dataclass
class Scope:
    values: dict[str, str] = field(default_factory=dict)  # integer-ish names -> initialiser text
    macros: dict[str, tuple[list[str], str]] = field(default_factory=dict)  # function-like macros
    dims: dict[str, list[str]] = field(default_factory=dict)  # dim3 variables -> component texts
    allocations: dict[str, Allocation] = field(default_factory=dict)  # pointer variables
    aliases: dict[str, str] = field(default_factory=dict)  # pointer variable -> the pointer expression it holds
    # typedef / using / #define of a type; a draft reads it in front of the file's and headers' (a ChainMap)
    types: MutableMapping[str, str] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)  # the enclosing host function's parameters (no value known)
    file_names: set[str] = field(default_factory=set)  # names of `values` defined at file scope (macros, globals)
    function: str = ""  # the enclosing host function
    param_order: list[str] = field(default_factory=list)  # its parameters, in order
    pointer_params: set[str] = field(default_factory=set)
    called_from: str = ""  # where its parameters got their values: `line 25`
    lists: dict[str, list[str]] = field(default_factory=dict)  # `int sizes[] = {32, 64, 128}` -> its items
    template_order: list[str] = field(default_factory=list)  # the host function's own template parameters
    floating: set[str] = field(default_factory=set)  # names declared float or double (`ceil(nf / 256)` rounds up)
    declared: set[str] = field(default_factory=set)  # whole numbers declared with no value (`int blocks;`), set later
    pointee: dict[str, str] = field(default_factory=dict)  # pointer variable -> the type it points to, as declared


# `atoi(argv[1])`, `(int)strtol(argv[2], 0, 10)`, `std::stoi(argv[3])`: a size known only when the program runs
FROM_ARGV = re.compile(r"\s*(?:\(\s*\w+\s*\)\s*)?(?:std::)?(?:atoi|atol|atoll|atof|stoi|stol|stoll|stoul|stoull|strtol|"
                       r"strtoul|strtoll|strtoull)\s*\(\s*argv\s*\[")



def collect_file(src: SourceText, root: Node, scope: Scope) -> None:
    for node in _walk(root, "preproc_def", "preproc_function_def", "alias_declaration", "type_definition", "declaration",
                      skip=("function_definition",)):
        collect_item(src, node, scope)
    for node in _walk(root, "function_definition"):
        name, helper = one_return_helper(src, node)
        if name:
            scope.macros.setdefault(name, helper)


def collect_item(src: SourceText, node: Node, scope: Scope) -> None:
    t = node.type
    if t == "preproc_def":
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is not None and value is not None:
            text = code_only(node_text(src, value))  # `#define N 256  // columns of B`: the comment is no value
            if element_type(text)[0] is not None or text in scope.types:
                scope.types[node_text(src, name)] = text
            else:
                scope.values[node_text(src, name)] = text
    elif t == "preproc_function_def":
        name, params, value = (node.child_by_field_name(k) for k in ("name", "parameters", "value"))
        if name is not None and params is not None and value is not None:
            scope.macros[node_text(src, name)] = ([node_text(src, p) for p in params.named_children],
                                                  code_only(node_text(src, value)))
    elif t in ("alias_declaration", "type_definition"):
        text = " ".join(node_text(src, node).split())
        m = re.fullmatch(r"using (\w+) = (.+);", text) or None
        if m:
            scope.types[m.group(1)] = m.group(2)
        m = re.fullmatch(r"typedef (.+?) (\w+);", text)
        if m:
            scope.types[m.group(2)] = m.group(1)
    elif t == "declaration":
        _collect_declaration(src, node, scope)
    elif t == "expression_statement":
        # Nested too: real host code allocates inside an error-check macro,
        # `CUDA_CHECK(cudaMalloc(&d, bytes))`, `checkCudaErrors(cudaMalloc(...))`.
        for call in _walk(node, "call_expression", nested=True):
            _collect_call(src, call, scope)
        for assign in _walk(node, "assignment_expression"):
            _collect_assignment(src, assign, scope)


def _collect_declaration(src: SourceText, node: Node, scope: Scope) -> None:
    type_node = node.child_by_field_name("type")
    type_text = " ".join(node_text(src, type_node).split()) if type_node is not None else ""
    for d in node.children_by_field_name("declarator"):
        if d.type == "function_declarator" and type_text == "dim3":  # `dim3 threads(bs, bs);`
            name, params = d.child_by_field_name("declarator"), d.child_by_field_name("parameters")
            if name is not None and params is not None:
                scope.dims[node_text(src, name)] = [node_text(src, a) for a in params.named_children]
            continue
        if d.type == "function_declarator" and _CONTAINERS.match(type_text.replace(" ", "")):
            # `std::vector<float> h(n);` parses as a function declaration
            name = d.child_by_field_name("declarator")
            params = d.child_by_field_name("parameters")
            args = node_text(src, params)[1:-1] if params is not None else ""
            elem = _CONTAINERS.match(type_text.replace(" ", "")).group(1)
            scope.allocations[node_text(src, name)] = Allocation(elem, count=_first_arg(args), via=type_text.split("<")[0])
            continue
        if d.type == "identifier" and type_text == "dim3":  # `dim3 threads;`, its members set below it
            scope.dims[node_text(src, d)] = ["1"]
            continue
        pointer = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        if pointer is not None and pointer.type == "pointer_declarator" and type_text:
            named = declared_identifier(pointer)  # `float *d_x;`: what a template kernel launched with it is instantiated for
            if named is not None and node_text(src, pointer).count("*") == 1:
                scope.pointee[node_text(src, named)] = without_qualifiers(type_text)
        if d.type == "identifier" and type_text and _WHOLE.fullmatch(type_text):  # `int blocks_x;`, set below
            scope.declared.add(node_text(src, d))
            continue
        if d.type != "init_declarator":
            continue
        target = d.child_by_field_name("declarator")
        value = d.child_by_field_name("value")
        if target is None or value is None:
            continue
        name_node = declared_identifier(target)
        if name_node is None:
            continue
        name = node_text(src, name_node)
        value_text = node_text(src, value)
        container = _CONTAINERS.match(type_text.replace(" ", ""))
        if container and value.type == "argument_list":
            scope.allocations[name] = Allocation(container.group(1), count=_first_arg(value_text[1:-1]),
                                                 via=type_text.split("<")[0])
        elif type_text == "dim3" and value.type == "argument_list":
            scope.dims[name] = [node_text(src, a) for a in value.named_children]
        elif type_text == "dim3":
            scope.dims[name] = [value_text]
        elif target.type == "pointer_declarator" or "*" in node_text(src, target):
            _collect_pointer(src, name, type_text, value, scope)
        elif value.type == "initializer_list" and target.type == "array_declarator":
            items = [node_text(src, c) for c in value.named_children]
            if items and all(c.type == "number_literal" for c in value.named_children):
                scope.lists[name] = items
        elif value.type == "subscript_expression" and _listed(src, value, scope) is not None:
            scope.values[name] = _listed(src, value, scope)
        elif value.type == "call_expression" and _TENSOR_FACTORIES.match(node_text(src, value.children[0])):
            args = value.child_by_field_name("arguments")
            first = args.named_children[0] if args is not None and args.named_children else None
            dims = [node_text(src, c) for c in first.named_children] if first is not None and first.type == "initializer_list" \
                else [node_text(src, first)] if first is not None else []
            scope.allocations[name] = Allocation("", count=" * ".join(x if re.fullmatch(r"[\w.]+", x) else f"({x})"
                                                                     for x in dims), via="torch tensor")
        else:
            scope.values[name] = value_text
            if " ".join(type_text.replace("const", "").split()) in ("float", "double", "long double"):
                scope.floating.add(name)


PREFERRED_ITEM = 256  # the usual default block size


def _listed(src: SourceText, subscript: Node, scope: Scope) -> str | None:
    """`block_sizes[j]` of a list of literals the program loops over: the item a draft uses, the
    one nearest PREFERRED_ITEM (a program that tries every block size runs them all; the spec
    needs one, and the search tunes it anyway)."""
    array = subscript.child_by_field_name("argument")
    items = scope.lists.get(node_text(src, array)) if array is not None else None
    if not items:
        return None
    try:
        numbers = [int(x.rstrip("uUlL"), 0) for x in items]
    except ValueError:
        return items[0]
    return items[min(range(len(items)), key=lambda i: (abs(numbers[i] - PREFERRED_ITEM), i))]


def _collect_pointer(src: SourceText, name: str, type_text: str, value: Node, scope: Scope) -> None:
    inner = _strip_casts(value)
    if inner.type == "new_expression":
        declarator = inner.child_by_field_name("declarator")
        size = declarator.named_children[0] if declarator is not None and declarator.named_children else None
        elem = inner.child_by_field_name("type")
        if size is not None:
            scope.allocations[name] = Allocation(node_text(src, elem) if elem is not None else type_text,
                                                 count=node_text(src, size), via="new[]")
        return
    if inner.type == "call_expression" and node_text(src, inner.children[0]) in ("malloc", "std::malloc"):
        args = inner.child_by_field_name("arguments")
        if args is not None and args.named_children:
            scope.allocations[name] = Allocation(type_text, nbytes=node_text(src, args.named_children[0]), via="malloc")
        return
    scope.aliases[name] = node_text(src, value)


def _collect_call(src: SourceText, call: Node, scope: Scope) -> None:
    fn = node_text(src, call.children[0]).split("::")[-1]
    args = call.child_by_field_name("arguments")
    if fn == "cudaMallocPitch" and args is not None and len(args.named_children) == 4:
        # cudaMallocPitch(&p, &pitch, width_bytes, height): a pitch of at least the row, rows of it
        ptr, pitch, row, rows = (_strip_casts(a) for a in args.named_children)
        names = [node_text(src, n.child_by_field_name("argument")) if n.type == "pointer_expression" else "" for n in (ptr, pitch)]
        if all(names):
            scope.values.setdefault(names[1], node_text(src, row))
            scope.allocations[names[0]] = Allocation("", nbytes=f"({names[1]}) * ({node_text(src, rows)})", via=fn)
        return
    if fn not in _ALLOC_BYTES or args is None or len(args.named_children) < 2:
        return
    target = _strip_casts(args.named_children[0])
    if target.type == "pointer_expression":  # &d_x
        ident = target.child_by_field_name("argument")
        if ident is not None and ident.type == "identifier":
            name = node_text(src, ident)
            elem = scope.allocations[name].elem if name in scope.allocations else ""
            scope.allocations[name] = Allocation(elem, nbytes=node_text(src, args.named_children[1]), via=fn)


def _collect_assignment(src: SourceText, assign: Node, scope: Scope) -> None:
    left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    op = assign.child_by_field_name("operator")
    if left is not None and right is not None and left.type == "field_expression":
        _collect_dim(src, left, right, op, scope)
        return
    if left is None or right is None or left.type != "identifier":
        return
    name = node_text(src, left)
    if op is not None and node_text(src, op) != "=":
        scope.values.pop(name, None)  # `n += 3`: no longer the literal it started as
        return
    while right.type == "assignment_expression" and right.child_by_field_name("right") is not None:
        _collect_assignment(src, right, scope)  # `N = M = K = 2048;`
        right = right.child_by_field_name("right")
    value = _dims_now(node_text(src, right), scope)
    if FROM_ARGV.match(value):
        scope.values.setdefault(name, value)  # `if (argc > 1) n = atoi(argv[1]);`: the default stays
    elif name in scope.values and re.search(rf"\b{re.escape(name)}\b", value):
        # `blocks = blocks + 1`: the new value in terms of the one before (never a definition of itself)
        scope.values[name] = re.sub(rf"\b{re.escape(name)}\b", lambda _: f"({scope.values[name]})", value)
    elif name in scope.values or name in scope.declared or right.type == "number_literal":
        scope.values[name] = value
    else:
        inner = _strip_casts(right)
        if inner.type in ("new_expression", "call_expression"):
            _collect_pointer(src, name, "", right, scope)


def _dims_now(value: str, scope: Scope) -> str:
    """`blocks.x / 2` with the member's value as it is at this point of the code: the member may
    be set from the name being assigned later (`blocks.x = blocks_x`), never a cycle then."""
    def member(m: re.Match) -> str:
        parts = scope.dims.get(m.group(1))
        if parts is None:
            return m.group(0)
        index = "xyz".index(m.group(2))
        return f"({parts[index]})" if index < len(parts) else "1"

    return re.sub(r"\b(\w+)\.([xyz])\b", member, value)


def _collect_dim(src: SourceText, left: Node, right: Node, op: Node | None, scope: Scope) -> None:
    """`threads.x = NUMBER_THREADS;`: a member of a `dim3` set after its declaration (`dim3
    threads;`, every member 1 until then). Any other update makes it unknown."""
    arg, member = left.child_by_field_name("argument"), left.child_by_field_name("field")
    name = node_text(src, arg) if arg is not None else ""
    field_ = node_text(src, member) if member is not None else ""
    if name not in scope.dims or field_ not in ("x", "y", "z"):
        return
    if op is not None and node_text(src, op) != "=":
        del scope.dims[name]  # `threads.x *= 2`: no longer what was written
        return
    parts = list(scope.dims[name])
    index = "xyz".index(field_)
    parts += ["1"] * (index + 1 - len(parts))
    value = node_text(src, right)
    if value in scope.values and re.search(r"[A-Za-z_]", scope.values[value]):
        # `blocks.x = blocks_x`: its definition now, as `blocks_x` may be reassigned from `blocks.x` below
        # (a name with a literal value stays a name: it becomes a size of the spec)
        value = scope.values[value]
    value = _dims_now(value, scope)
    parts[index] = value if re.fullmatch(r"[\w.]+", value) else f"({value})"
    while len(parts) > 1 and parts[-1] == "1":
        parts.pop()
    scope.dims[name] = parts


_WHOLE = re.compile(r"(?:const\s+)?(?:(?:unsigned|signed|long|short)\s+)*(?:int|long|size_t|unsigned|"
                    r"u?int(?:8|16|32|64)_t|std::size_t)?")


_CXX_CASTS = re.compile(r"(?:static|reinterpret|const)_cast\s*<")


def _strip_casts(node: Node) -> Node:
    """`(void**)&p`, `(p)`, `reinterpret_cast<void**>(&p)`: the `&p` inside."""
    while True:
        if node.type in ("cast_expression", "parenthesized_expression"):
            node = node.child_by_field_name("value") or node.named_children[-1]
        elif node.type == "call_expression" and _CXX_CASTS.match(node.children[0].text.decode(errors="replace")):
            args = node.child_by_field_name("arguments")
            if args is None or len(args.named_children) != 1:
                return node
            node = args.named_children[0]
        else:
            return node


def declared_identifier(node: Node) -> Node | None:
    while node is not None and node.type not in ("identifier", "field_identifier"):
        node = node.child_by_field_name("declarator")
    return node


def _first_arg(text: str) -> str:
    return split_top_level(text)[0].strip()


def _walk(node: Node, *types: str, skip: tuple[str, ...] = (), nested: bool = False) -> Iterator[Node]:
    """Nodes of `types` under `node`, in order; inside a match too when `nested`."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in types:
            yield n
            if not nested:
                continue
        if n.type in skip:
            continue
        stack.extend(reversed(n.children))


def node_text(src: SourceText, node: Node) -> str:
    return src.slice(node.start_byte, node.end_byte)

