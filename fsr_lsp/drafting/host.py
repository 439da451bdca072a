"""What host code says about a kernel launch: the launches themselves, and the scope around one
(integer values, `dim3`s, allocations, macros, type aliases), read from tree-sitter's tree.

Real files launch kernels a few lines after the buffers are allocated from sizes with literal
initialisers or `#define`s. This module collects those facts as source text; `cexpr` turns
the texts into spec expressions.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from ..kernels.treesitter import enclosing_words, nodes_of, parse
from ..source import SourceText
from ..kernels.c_types import without_qualifiers
from .host_facts import FROM_ARGV, Allocation, Scope, collect_file, collect_item, declared_identifier, node_text

__all__ = ["FROM_ARGV", "Allocation", "Launch", "Scope", "find_launches"]


@lru_cache(maxsize=32)
def _headers_scope(headers: tuple[str, ...]) -> Scope:
    """What the headers a file includes say at file scope, the nearest header winning: read once
    per set of header texts (a draft after each edit of a file read its ten headers again;
    a header's tree was not kept among the edited files' trees). Copied before a file adds to it."""
    scope = Scope()
    for text in reversed(headers):
        header = SourceText(text)
        collect_file(header, parse(header.data).root_node, scope)
    return scope


@dataclass(frozen=True)
class Launch:
    """One `kernel<<<grid, block[, smem[, stream]]>>>(args)` in a file."""

    kernel: str
    template_args: str  # "float, 64" ('' when none)
    config: tuple[str, ...]  # grid, block, smem, stream as written
    args: tuple[str, ...]  # the call's arguments as written
    line: int  # 1-based
    byte: int  # where the launch starts
    scope: "Scope"
    file: str = ""  # the file it is in, as the caller named it ('' for the kernel's own file)

    @property
    def where(self) -> str:
        """`file.cu:85`, or `line 85` in the kernel's own file."""
        return f"{self.file}:{self.line}" if self.file else f"line {self.line}"



def find_launches(src: SourceText, file: str = "", headers: tuple[str, ...] = (), only: str | None = None) -> list[Launch]:
    """Every launch in the file (or of the kernel named `only`), in order, each with the scope it
    sees (`#define`s, helpers and types of the `headers` it includes first, its own over them)."""
    tree = parse(src.data)
    file_scope = copy.deepcopy(_headers_scope(tuple(headers))) if headers else Scope()
    collect_file(src, tree.root_node, file_scope)
    out = []
    callers: Mapping[str, Node] | None = None
    scopes = _Scopes(src, file_scope)
    calls = _calls_named(src, tree.root_node, only) if only else nodes_of(tree.root_node, "call_expression")
    for call in calls:
        config = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
        if config is None:
            continue
        callee = call.children[0]
        name, template = _callee(src, callee)
        if only is not None and name != only:
            continue
        args_node = call.child_by_field_name("arguments")
        # A comment in the launch (`<<</*480, 128*/ grid, block>>>`) is no part of it.
        args = tuple(node_text(src, a) for a in args_node.named_children if a.type != "comment") if args_node is not None \
            else ()
        exprs = tuple(node_text(src, c) for c in config.named_children if c.type != "comment")
        scope = scopes.at(call)
        if scope.params:
            if callers is None:  # one kernel's launches: its launchers' callers looked up by name
                callers = _FirstCalls(src, tree.root_node) if only else _first_calls(src, tree.root_node)
            _bind_caller(src, callers, scope, file_scope)
        out.append(Launch(name, template, exprs, args, src.position(call.start_byte).line + 1, call.start_byte, scope,
                          file))
    return out


def _calls_named(src: SourceText, root: Node, name: str) -> list[Node]:
    """The calls around the places of `name` in the text (a draft needs one kernel's launches)."""
    return enclosing_words(root, src.data, re.compile(rb"\b" + re.escape(name.encode()) + rb"\b"), "call_expression")


def _callee(src: SourceText, node: Node) -> tuple[str, str]:
    if node.type == "template_function":
        name = node.child_by_field_name("name")
        targs = node.child_by_field_name("arguments")
        inner = node_text(src, targs)[1:-1].strip() if targs is not None else ""
        return node_text(src, name).split("::")[-1], inner
    return node_text(src, node).split("::")[-1], ""


def _first_calls(src: SourceText, root: Node) -> dict[str, Node]:
    """The first plain (host) call of each function name in the file."""
    out: dict[str, Node] = {}
    for c in nodes_of(root, "call_expression"):
        if not any(ch.type == "kernel_call_syntax" for ch in c.children):
            out.setdefault(_callee(src, c.children[0])[0], c)
    return out


MAX_CALL_DEPTH = 4  # main -> a dispatcher -> a launcher -> ...: how far up the calls a size is followed


class _FirstCalls(Mapping[str, Node]):
    """`_first_calls`' answer for the names asked, each found from the name's places in the text
    (a whole-tree query for every call took 0.8 s of a 10 MB file's draft of one kernel)."""

    def __init__(self, src: SourceText, root: Node) -> None:
        self.src, self.root, self.found = src, root, {}  # type: dict[str, Node | None]

    def __getitem__(self, name: str) -> Node:
        if name not in self.found:
            plain = [c for c in _calls_named(self.src, self.root, name)
                     if not any(ch.type == "kernel_call_syntax" for ch in c.children)
                     and _callee(self.src, c.children[0])[0] == name]
            self.found[name] = plain[0] if plain else None
        node = self.found[name]
        if node is None:
            raise KeyError(name)
        return node

    def __iter__(self) -> Iterator[str]:
        return iter(k for k, v in self.found.items() if v is not None)

    def __len__(self) -> int:
        return sum(v is not None for v in self.found.values())


def _bind_caller(src: SourceText, callers: Mapping[str, Node], scope: Scope, file_scope: Scope,
                 seen: frozenset[str] = frozenset()) -> None:
    """A launch inside a launcher (`void gelu_forward(float* out, ..., int N, int block_size)`):
    its parameters take the arguments of the launcher's first call in the file, read in the
    caller's scope, so sizes and allocations come from where the launcher is called. A caller
    that is itself called with its sizes (`main` -> a dispatcher over kernel versions -> the
    launcher) is bound first, up to MAX_CALL_DEPTH calls."""
    caller = callers.get(scope.function)
    if caller is None or scope.function in seen or len(seen) >= MAX_CALL_DEPTH:
        return
    args_node = caller.child_by_field_name("arguments")
    if args_node is None or len(args_node.named_children) != len(scope.param_order):
        return
    outer = _scope_at(src, caller, file_scope)
    if outer.params:
        _bind_caller(src, callers, outer, file_scope, seen | {scope.function})
    own_allocations = set(scope.allocations)  # the launcher's own, before the caller's are merged in
    for table in ("values", "macros", "dims", "allocations", "aliases", "types", "lists", "pointee"):
        merged = dict(getattr(outer, table))
        merged.update(getattr(scope, table))  # the launcher's own names win
        setattr(scope, table, merged)
    for param, arg in zip(scope.param_order, args_node.named_children):
        text = node_text(src, arg).strip()
        if param not in own_allocations and not (text == param and param not in outer.aliases):
            # the parameter names what the caller passes, never the caller's own variable of that name
            # (main's host `out` beside the `d_out` it passes as `out`)
            scope.allocations.pop(param, None)
        if text == param:
            scope.values.pop(param, None) if param not in outer.values else None
            if param in outer.aliases and param in scope.pointer_params:
                scope.aliases[param] = outer.aliases[param]
        elif param in scope.pointer_params:
            scope.aliases[param] = text
        elif text in outer.dims:  # `launch(grid, threads)` into `const dim3 num_threads`: its components
            scope.dims[param] = list(outer.dims[text])
        else:
            scope.values[param] = text if re.fullmatch(r"[\w.]+", text) else f"({text})"
        scope.params.discard(param)
        if param in scope.pointer_params:
            _deduce(scope, param, outer.pointee.get(text, ""))
    _bind_template(src, caller, scope)
    where = f"line {src.position(caller.start_byte).line + 1}"
    scope.called_from = f"{where} (from {outer.called_from})" if outer.called_from else where
    scope.params |= outer.params


def _deduce(scope: Scope, param: str, passed: str) -> None:
    """`template <typename T> void bs(const T* d_a)` called with a `float*`: T is float, as the
    compiler deduces it (an explicit `bs<double>(...)` is bound after, and wins)."""
    declared = scope.pointee.get(param, "")
    if passed and declared in scope.template_order and declared not in scope.types:
        scope.types[declared] = passed
        scope.params.discard(declared)


def _bind_template(src: SourceText, caller: Node, scope: Scope) -> None:
    """`launch_scale<256>(...)`: the launcher's template parameters take the call's arguments."""
    callee = caller.children[0]
    targs = callee.child_by_field_name("arguments") if callee.type == "template_function" else None
    if targs is None:
        return
    for name, arg in zip(scope.template_order, targs.named_children):
        text = node_text(src, arg).strip()
        if arg.type == "type_descriptor":
            scope.types[name] = text
        else:
            scope.values[name] = text if re.fullmatch(r"[\w.]+", text) else f"({text})"
        scope.params.discard(name)


def _template_parameter(src: SourceText, node: Node) -> str:
    """The name a template parameter declares (`int BLOCK`, `typename T`, `int N = 4`)."""
    if node.type in ("type_parameter_declaration", "optional_type_parameter_declaration"):
        name = node.child_by_field_name("name") or next((c for c in node.named_children if c.type == "type_identifier"), None)
        return node_text(src, name) if name is not None else ""
    ident = declared_identifier(node.child_by_field_name("declarator")) if node.child_by_field_name("declarator") else None
    return node_text(src, ident) if ident is not None else ""


class _Scopes:
    """The scope at each launch of a file, each function's body read once: launches come in
    source order, so the scope at the next launch of a function continues from the last one's
    (a generated file's function with hundreds of launches was read again for each)."""

    def __init__(self, src: SourceText, file_scope: Scope) -> None:
        self.src, self.file_scope = src, file_scope
        self._open: dict[int, tuple[Scope, _BodyWalk]] = {}  # function start -> its scope so far, its walk

    def at(self, call: Node) -> Scope:
        fn = _enclosing_function(call)
        if fn is None:
            return _scope_at(self.src, call, self.file_scope)
        state = self._open.get(fn.start_byte)
        if state is None:
            state = self._open[fn.start_byte] = (_scope_at(self.src, call, self.file_scope, fn, body=False),
                                                 _BodyWalk(fn))
        scope, walk = state
        walk.read_to(self.src, call.start_byte, scope)
        return _copied(scope)


class _BodyWalk:
    """A function body's declarations and statements, read into a scope up to a point, and later
    on from there."""

    def __init__(self, fn: Node) -> None:
        body = fn.child_by_field_name("body")
        self.items = nodes_of(body, *_ITEMS) if body is not None else []
        self.next, self.taken_to = 0, -1

    def read_to(self, src: SourceText, end: int, scope: Scope) -> None:
        while self.next < len(self.items) and self.items[self.next].start_byte < end:
            node = self.items[self.next]
            self.next += 1
            if node.start_byte < self.taken_to:  # inside one already read (a lambda's body)
                continue
            self.taken_to = node.end_byte
            collect_item(src, node, scope)


_ITEMS = ("declaration", "expression_statement", "preproc_def", "preproc_function_def", "alias_declaration",
          "type_definition")


def _enclosing_function(node: Node) -> Node | None:
    fn = node.parent
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    return fn


def _copied(scope: Scope) -> Scope:
    """A copy a launch may change (binding its launcher's parameters) without changing the next's."""
    return Scope(**{f.name: copy.copy(getattr(scope, f.name)) for f in dataclasses.fields(scope)})


def _scope_at(src: SourceText, call: Node, file_scope: Scope, fn: Node | None = None, body: bool = True) -> Scope:
    """File scope plus what the enclosing host function declares before the launch (`body`
    false: its parameters only, the body to be read by the caller)."""
    scope = Scope(dict(file_scope.values), dict(file_scope.macros), dict(file_scope.dims), dict(file_scope.allocations),
                  dict(file_scope.aliases), dict(file_scope.types), file_names=set(file_scope.values),
                  pointee=dict(file_scope.pointee))
    fn = fn or _enclosing_function(call)
    if fn is None:
        return scope
    declarator = fn.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if fn.parent is not None and fn.parent.type == "template_declaration":  # template <int BLOCK> void launch(...)
        for tp in (fn.parent.child_by_field_name("parameters") or fn.parent).named_children:
            ident = _template_parameter(src, tp)
            if ident:
                scope.template_order.append(ident)
                scope.params.add(ident)
    if declarator is not None:
        name = declarator.child_by_field_name("declarator")
        scope.function = node_text(src, name) if name is not None else ""
        params = declarator.child_by_field_name("parameters")
        for p in params.named_children if params is not None else ():
            ident = declared_identifier(p)
            if ident is not None:
                scope.params.add(node_text(src, ident))
                scope.param_order.append(node_text(src, ident))
                if "*" in node_text(src, p) or "[" in node_text(src, p):
                    scope.pointer_params.add(node_text(src, ident))
                    kind = p.child_by_field_name("type")
                    if kind is not None and node_text(src, p).count("*") == 1:
                        scope.pointee[node_text(src, ident)] = without_qualifiers(node_text(src, kind))
    if body:
        _BodyWalk(fn).read_to(src, call.start_byte, scope)
    return scope

