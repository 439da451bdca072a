"""Kernel discovery on tree-sitter-cuda's syntax tree (the main path).

A parse or a query holds Python's GIL until it returns: on a 10 MB file that is a second in
which no other thread runs (the language server's event loop among them, answering hovers on
other documents while such a file's spec is drafted on a thread). So a large text is parsed in
chunks handed over by a callback, and a large tree queried in slices of bytes: between two, the
GIL can pass to another thread. Each thread has its own parser (a parse may now be suspended
in a callback while another thread parses)."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

from ..source import SourceText
from .c_types import parse_param
from .kernel import Kernel
from .text_edits import one_edit
from .word_regex import word_start

_WRAPPERS = ("template_declaration", "linkage_specification")


YIELDING_BYTES = 64 << 10  # texts and trees above this are parsed in chunks and queried in slices
CHUNK_BYTES = 8 << 10  # a chunk parses in about a millisecond
SLICE_BYTES = 64 << 10  # a slice is queried in about a millisecond
_local = threading.local()


@lru_cache(maxsize=1)
def _language() -> Language:
    return Language(tree_sitter_cuda.language())


def _parser() -> Parser:
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = Parser(_language())
    return parser


@lru_cache(maxsize=16)  # trees are only read: one parse per file contents
def parse(data: bytes) -> Tree:
    base = _derived.get(data)
    if base is not None:
        return _reparsed(base, data)
    tree = _edited(data)
    if tree is None:
        tree = _parser().parse(data) if len(data) <= YIELDING_BYTES else \
            _parser().parse(lambda offset, _point: data[offset:offset + CHUNK_BYTES])
    _keep_recent(data, tree)
    return tree


# The last texts parsed whole or edited: a new version of one is reparsed around its edit. As
# many as an editor holds open (a version of a document edited after seven others was parsed
# whole when eight were kept), within a budget of text, the newest always kept.
RECENT_KEPT = 64
RECENT_BYTES = 32 << 20
_recent: list[tuple[bytes, Tree]] = []
_recent_lock = threading.Lock()


def _keep_recent(data: bytes, tree: Tree) -> None:
    with _recent_lock:
        _recent.append((data, tree))
        held = sum(len(text) for text, _ in _recent)
        while len(_recent) > 1 and (len(_recent) > RECENT_KEPT or held > RECENT_BYTES):
            held -= len(_recent.pop(0)[0])


def _edited(data: bytes) -> Tree | None:
    """`data`'s tree from a recent text it is one edit of (a document's next version), reparsed
    only around the edit; None when no recent text is close enough."""
    with _recent_lock:
        recent = list(_recent)
    for old, tree in reversed(recent):
        if abs(len(old) - len(data)) > len(data) // 10 or tree.root_node.has_error:
            continue
        edit = one_edit(old, data)
        if edit is None:
            continue
        edited = tree.copy()
        edited.edit(edit.start, edit.old_end, edit.new_end, edit.start_point, edit.old_end_point, edit.new_end_point)
        tree = _parser().parse(lambda at, _point: data[at:at + CHUNK_BYTES], edited)
        # a text with a syntax error may recover differently from a whole parse's: parsed whole
        return None if tree.root_node.has_error else tree
    return None


_derived: dict[bytes, bytes] = {}  # a text -> the text it was made from by blanking lines, byte for byte
_DERIVED_KEPT = 4


def derived(base: bytes, text: bytes) -> None:
    """`text` is `base` with some lines blanked, every byte of them a space (its active `#if`
    branches: lexical.active_text): its tree is then `base`'s, reparsed where lines changed (a
    10 MB file's second whole-file parse, 1.6 s, took 0.8 s so)."""
    if len(base) != len(text):
        return
    if len(_derived) >= _DERIVED_KEPT:
        _derived.pop(next(iter(_derived)))
    _derived[text] = base


def _reparsed(base: bytes, data: bytes) -> Tree:
    """`data`'s tree from `base`'s, each run of consecutive changed lines one edit (a 10 MB
    file's active text blanks 70,000 lines, most of them in runs: an edit each took 0.5 s)."""
    tree = parse(base).copy()
    offset, run = 0, None  # run: (start offset, start row) of the changed lines met last
    lines = base.split(b"\n")
    for row, (was, now) in enumerate(zip(lines, data.split(b"\n"))):
        if was != now and run is None:
            run = (offset, row)
        elif was == now and run is not None:
            _edit_lines(tree, run, offset - 1, (row - 1, len(lines[row - 1])))
            run = None
        offset += len(was) + 1
    if run is not None:
        _edit_lines(tree, run, offset - 1, (len(lines) - 1, len(lines[-1])))
    return _parser().parse(lambda at, _point: data[at:at + CHUNK_BYTES], tree)


def _edit_lines(tree: Tree, run: tuple[int, int], end: int, end_point: tuple[int, int]) -> None:
    """Lines changed in place (the same length) from `run`'s start to `end`, told to the tree."""
    start, row = run
    tree.edit(start, end, end, (row, 0), end_point, end_point)


@lru_cache(maxsize=32)
def _query(node_types: tuple[str, ...]) -> Query:
    return Query(_language(), "[" + " ".join(f"({t})" for t in node_types) + "] @n")


def nodes_of(root: Node, *node_types: str) -> list[Node]:
    """Every node of the types under `root` (`root` and nested ones too), in source order; the
    query runs in C, where a Python walk over a 2,000-line file costs tens of milliseconds. A
    large node is queried a slice of bytes at a time (a node that crosses slices is met in
    each: it is kept once)."""
    query = _query(node_types)
    if root.end_byte - root.start_byte <= YIELDING_BYTES:
        found = QueryCursor(query).captures(root).get("n", [])
    else:
        seen: dict[int, Node] = {}
        for start in range(root.start_byte, root.end_byte, SLICE_BYTES):
            cursor = QueryCursor(query)
            cursor.set_byte_range(start, min(start + SLICE_BYTES, root.end_byte))
            for node in cursor.captures(root).get("n", []):
                seen.setdefault(node.id, node)
        found = list(seen.values())
    return sorted(found, key=lambda n: (n.start_byte, -n.end_byte))


_AGGREGATES = {"struct": "struct_specifier", "union": "union_specifier", "class": "class_specifier"}
_AGGREGATE_WORD = re.compile(word_start(*_AGGREGATES).encode() + rb"\b")


@lru_cache(maxsize=8)  # as parse's: a few texts, each asked by several readers
def _aggregates(data: bytes) -> tuple[Node, ...]:
    """Every struct, union and class specifier. Of a large text, found from the places of their
    keywords (each specifier's first token), where the query over a 10 MB tree took 0.6 s."""
    root = parse(data).root_node
    if len(data) <= YIELDING_BYTES:
        return tuple(nodes_of(root, *_AGGREGATES.values()))
    found: dict[int, Node] = {}
    for m in _AGGREGATE_WORD.finditer(data):
        keyword = root.descendant_for_byte_range(m.start(), m.end())
        if keyword is None or keyword.type != m.group().decode():
            continue
        parent = keyword.parent
        if parent is not None and parent.type == _AGGREGATES[keyword.type]:
            found.setdefault(parent.id, parent)
    return tuple(sorted(found.values(), key=lambda n: (n.start_byte, -n.end_byte)))


def aggregates_of(data: bytes, *node_types: str) -> list[Node]:
    """The text's struct, union or class specifiers of `node_types`, in source order: one query
    over the tree serves every reader of layouts (struct types, their fields, templates, the
    structs a kernel takes), where each queried a 10 MB file's tree on its own (0.5 s a time)."""
    return [n for n in _aggregates(data) if n.type in node_types]


def enclosing_words(root: Node, data: bytes, word: re.Pattern[bytes], node_type: str) -> list[Node]:
    """The nodes of `node_type` nearest around each match of `word` in `data` (none where a function
    definition comes first), once each, in source order: where a reader wants what surrounds a few
    names, found from their places in the text rather than by a query over every node of that type
    (a 10 MB tree's calls took 1.2 s, its declarations 0.5 s)."""
    found: dict[int, Node] = {}
    for m in word.finditer(data):
        node: Node | None = root.descendant_for_byte_range(m.start(), m.end())
        while node is not None and node.type not in (node_type, "function_definition", "translation_unit"):
            node = node.parent
        if node is not None and node.type == node_type:
            found.setdefault(node.start_byte, node)
    return [found[k] for k in sorted(found)]


def kernels_from_tree(src: SourceText, tree: Tree) -> list[Kernel]:
    return [k for node in _global_definitions(tree.root_node, src.data) if (k := _kernel(src, node)) is not None]


_GLOBAL_WORD = re.compile(word_start("__global__").encode() + rb"\b")


def _global_definitions(root: Node, data: bytes) -> list[Node]:
    """The function definitions with a `__global__` among their children, in source order. Each
    such child is the word itself in the text: the definitions are found around each place of
    the word (comments' and strings' too, which lead to none), where a query over every
    function of a 10 MB tree took 1.7 s."""
    return [n for n in enclosing_words(root, data, _GLOBAL_WORD, "function_definition")
            if any(c.type == "__global__" for c in n.children)]


def _kernel(src: SourceText, fn: Node) -> Kernel | None:
    declarator = _function_declarator(fn)
    if declarator is None:
        return None
    name_node = declarator.child_by_field_name("declarator")
    params_node = declarator.child_by_field_name("parameters")
    if name_node is None or params_node is None:
        return None
    outer = fn
    while outer.parent is not None and outer.parent.type in _WRAPPERS:
        outer = outer.parent
    template_params: tuple[str, ...] = ()
    if fn.parent is not None and fn.parent.type == "template_declaration":
        plist = fn.parent.child_by_field_name("parameters")
        if plist is not None:
            template_params = tuple(_text(src, c) for c in plist.named_children if c.type != "comment")
    bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
    bounds_text = None
    if bounds is not None:
        inner = _text(src, bounds)
        bounds_text = inner[inner.find("(") + 1 : inner.rfind(")")].strip()
    params = tuple(
        parse_param(_text(src, c))
        for c in params_node.named_children
        if c.type in ("parameter_declaration", "optional_parameter_declaration")
    )
    body = fn.child_by_field_name("body")
    complete = body is not None and not fn.has_error and _text(src, body).rstrip().endswith("}")
    return Kernel(
        name=_text(src, name_node),
        params=params,
        template_params=template_params,
        launch_bounds=bounds_text,
        span=src.span(outer.start_byte, outer.end_byte),
        definition_span=src.span(outer.start_byte, outer.end_byte),
        name_span=src.span(name_node.start_byte, name_node.end_byte),
        spec=None,
        complete=complete,
        found_by="tree-sitter",
    )


def _function_declarator(fn: Node) -> Node | None:
    node = fn.child_by_field_name("declarator")
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    return node


def _text(src: SourceText, node: Node) -> str:
    return src.slice(node.start_byte, node.end_byte)
