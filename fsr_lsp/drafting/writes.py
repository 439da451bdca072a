"""Which pointer parameters a kernel writes and which it reads, from its body's syntax tree.

Writes: an assignment or increment whose target is `p[i]`, `*(p + i)`, `p[i].x`, a store
through a cast (`reinterpret_cast<float4*>(p)[i] = ...`), or a pointer derived from `p` in the
body (`float* row = y + r * cols; row[c] = ...`); an atomic or store intrinsic whose first
argument points into `p`. Reads: any other use. Read-only becomes `in`, written but never read
`out`, both (a compound assignment, an atomic) `inout`. It accumulates (its start value
matters) by an atomic, or by a compound assignment no plain store to it comes before. A body
the parser cannot read whole (macros it cannot see through) has every pointer it may write
taken as written and read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ..kernels.kernel import Kernel
from ..kernels.treesitter import nodes_of, parse
from ..source import SourceText

_WRITING_CALLS = re.compile(r"^(?:atomic\w+|__st\w*|__stcs|__stcg|__stwb|__stwt)$")
_READ_WRITE_CALLS = re.compile(r"^atomic\w+$")
_CAST = re.compile(r"^(?:std::)?(?:reinterpret|static|const)_cast\b")


@dataclass(frozen=True)
class Access:
    written: bool
    read: bool
    accumulates: bool  # written by atomics or compound assignments: its start value matters


def pointer_access(src: SourceText, kernel: Kernel) -> dict[str, Access]:
    """Access per pointer parameter of the kernel, and per pointer member of a struct it takes
    by value (`C.elements`, stored through as `C.elements[i] = ...`)."""
    body = _kernel_body(src, kernel)
    params = pointer_names(kernel)
    if body is None:
        return {p: Access(False, True, False) for p in params}
    roots = {p: p for p in params}
    alias_values = _local_aliases(body, roots)
    written: set[str] = set()
    accumulated: set[str] = set()
    write_sites: set[tuple[int, int]] = set()
    # `out[j] = e; ... out[j] /= s;`: a compound store after a plain one of the same buffer reads
    # what the kernel wrote, not the start value (softmax normalising in place)
    first_plain: dict[str, int] = {}
    for node in nodes_of(body, "assignment_expression"):
        root = _root(node.child_by_field_name("left"), roots)
        if root is not None and _text(node.child_by_field_name("operator")) == "=":
            first_plain[root] = min(first_plain.get(root, node.start_byte), node.start_byte)
    for node in nodes_of(body, "assignment_expression", "update_expression", "call_expression"):
        if node.type == "assignment_expression":
            target = node.child_by_field_name("left")
            root = _root(target, roots)
            if root is not None:
                written.add(root)
                write_sites.add((target.start_byte, target.end_byte))
                if _text(node.child_by_field_name("operator")) != "=" and \
                        node.start_byte < first_plain.get(root, len(src.data) + 1):
                    accumulated.add(root)
        elif node.type == "update_expression":
            root = _root(node.child_by_field_name("argument"), roots)
            if root is not None:
                written.add(root)
                if node.start_byte < first_plain.get(root, len(src.data) + 1):
                    accumulated.add(root)
        elif node.type == "call_expression":
            fn = _text(node.child_by_field_name("function")).split("::")[-1]
            args = node.child_by_field_name("arguments")
            first = args.named_children[0] if args is not None and args.named_children else None
            if first is not None and _WRITING_CALLS.match(fn):
                root = _root(first, roots, pointer_arithmetic=True)
                if root is not None:
                    written.add(root)
                    if _READ_WRITE_CALLS.match(fn):
                        accumulated.add(root)
    read = _reads(body, roots, write_sites | alias_values)
    found = {p: Access(p in written, p in read or p in accumulated, p in accumulated) for p in params}
    if body.has_error:  # macros the parser cannot see through (`MOP20 MOP20 ...`) hide what follows them: a
        # pointer the signature lets the kernel write is taken as written and read, never `in` on a guess
        unsure = {p.name for p in kernel.params if p.is_pointer and p.name and not p.pointee_const}
        found.update({p: Access(True, True, found[p].accumulates) for p in unsure & set(found)})
    return found


def pointer_names(kernel: Kernel) -> set[str]:
    """The kernel's pointer parameters and its by-value structs' pointer members (`A.elements`)."""
    return {p.name for p in kernel.params if p.is_pointer and p.name} | \
        {f"{p.name}.{f.name}" for p in kernel.params for f in p.fields if f.is_pointer}


def index_arrays(src: SourceText, kernel: Kernel) -> dict[str, str]:
    """Pointer parameters whose values index another one (`bins[keys[i]]`): keys -> bins.
    Their random contents must be valid indices."""
    body = _kernel_body(src, kernel)
    params = {p.name for p in kernel.params if p.is_pointer and p.name}
    out: dict[str, str] = {}
    for node in nodes_of(body, "subscript_expression") if body is not None else ():
        base = _root(node.child_by_field_name("argument"), {p: p for p in params}, pointer_arithmetic=True)
        index = node.child_by_field_name("indices") or node.child_by_field_name("index")
        if base is None or index is None:
            continue
        for inner in nodes_of(index, "subscript_expression"):
            arg = inner.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier" and _text(arg) in params and _text(arg) != base:
                out.setdefault(_text(arg), base)
    return out


def merged(uses: list[Access | None]) -> Access:
    """One buffer's access through several parameters (None: not known, so read and written)."""
    known = [u or Access(written=True, read=True, accumulates=False) for u in uses]
    return Access(written=any(u.written for u in known), read=any(u.read for u in known),
                  accumulates=any(u.accumulates for u in known))


def direction(access: Access, pointee_const: bool) -> str:
    if pointee_const or not access.written:
        return "in"
    return "inout" if access.read else "out"


def _kernel_body(src: SourceText, kernel: Kernel) -> Node | None:
    """The kernel's body in the file's own (cached) tree; a definition the file's parse got
    wrong (an edit in progress, a macro) is parsed alone."""
    d = kernel.definition_span
    node = parse(src.data).root_node.descendant_for_byte_range(d.start_byte, d.end_byte)
    while node is not None and node.type not in ("function_definition", "translation_unit") \
            and node.start_byte >= d.start_byte and node.end_byte <= d.end_byte:
        found = next((c for c in node.children if c.type == "function_definition"), None)
        if found is not None:
            node = found
            break
        node = node.parent
    if node is not None and node.type == "function_definition" and not node.has_error \
            and node.start_byte >= d.start_byte and node.end_byte <= d.end_byte:
        return node.child_by_field_name("body")
    return _body(parse(src.data[d.start_byte:d.end_byte]).root_node)


def _body(root: Node) -> Node | None:
    for node in nodes_of(root, "function_definition"):
        return node.child_by_field_name("body")
    return None


def _local_aliases(body: Node, roots: dict[str, str]) -> set[tuple[int, int]]:
    """`T* q = p + k;`, `auto q = reinterpret_cast<float4*>(p);`: q stores to and loads from p.
    Returns where those initialisers are (naming p there is neither a load nor a store)."""
    sites = set()
    for node in nodes_of(body, "init_declarator"):
        value = node.child_by_field_name("value")
        target = node.child_by_field_name("declarator")
        if value is None or target is None or value.type in ("subscript_expression", "argument_list"):
            continue
        pointer = target.type == "pointer_declarator" or value.type in ("cast_expression", "call_expression")
        root = _root(value, roots, pointer_arithmetic=True) if pointer else None
        if root is None:
            continue
        while target is not None and target.type != "identifier":
            target = target.child_by_field_name("declarator")
        if target is not None:
            roots[_text(target)] = root
            sites.add((value.start_byte, value.end_byte))
            sites.add((target.start_byte, target.end_byte))
    return sites


def _root(node: Node | None, roots: dict[str, str], pointer_arithmetic: bool = False) -> str | None:
    """The parameter a target expression stores through, if any."""
    while node is not None:
        t = node.type
        if t == "identifier":
            return roots.get(_text(node)) if pointer_arithmetic else None
        if t == "subscript_expression":
            node = node.child_by_field_name("argument")
            pointer_arithmetic = True
        elif t == "pointer_expression":
            op = _text(node.child_by_field_name("operator"))
            node = node.child_by_field_name("argument")
            pointer_arithmetic = op in ("*", "&")
        elif t == "field_expression":
            if _member(node) in roots:  # `C.elements`: a struct's pointer member
                return roots[_member(node)] if pointer_arithmetic else None
            node = node.child_by_field_name("argument")
        elif t in ("parenthesized_expression", "cast_expression"):
            node = node.child_by_field_name("value") or (node.named_children[-1] if node.named_children else None)
        elif t == "call_expression" and _CAST.match(_text(node.child_by_field_name("function"))):
            args = node.child_by_field_name("arguments")  # reinterpret_cast<float4*>(p)
            node = args.named_children[0] if args is not None and args.named_children else None
        elif t == "binary_expression" and pointer_arithmetic:
            left = _root(node.child_by_field_name("left"), roots, True)
            return left if left is not None else _root(node.child_by_field_name("right"), roots, True)
        else:
            return None
    return None


def _reads(body: Node, roots: dict[str, str], sites: set[tuple[int, int]]) -> set[str]:
    """Parameters used anywhere but as the pointer of a plain store or in an alias's initialiser."""
    out = set()
    for node in nodes_of(body, "identifier"):
        if _text(node) in roots and not _inside_store(node, sites):
            out.add(roots[_text(node)])
    if any("." in name for name in roots):
        for node in nodes_of(body, "field_expression"):
            if _member(node) in roots and not _inside_store(node, sites):
                out.add(roots[_member(node)])
    return out


def _member(node: Node) -> str:
    """`C.elements` as written, spaces left out (`C . elements`)."""
    return "".join(_text(node).split())


def _inside_store(node: Node, sites: set[tuple[int, int]]) -> bool:
    for start, end in sites:
        if start <= node.start_byte and node.end_byte <= end:
            # the index of a store (`y[x[i]] = ...` reads x) is a read unless it is the stored-to pointer
            return _is_store_base(node, start, end)
    return False


def _is_store_base(node: Node, start: int, end: int) -> bool:
    parent = node.parent
    while parent is not None and parent.start_byte >= start and parent.end_byte <= end:
        if parent.type == "subscript_expression":
            index = parent.child_by_field_name("indices") or parent.child_by_field_name("index")
            if index is not None and index.start_byte <= node.start_byte < index.end_byte:
                return False
        parent = parent.parent
    return True


def _text(node: Node | None) -> str:
    return node.text.decode() if node is not None and node.text is not None else ""
