"""What every structural transform reads first: the kernel definition's body, parsed."""

from __future__ import annotations

from tree_sitter import Node

from ....kernels.treesitter import parse


def kernel_body(data: bytes) -> Node | None:
    """The body of the one function defined in `data`; None when it does not parse cleanly."""
    root = parse(data).root_node
    fn = next((n for n in root.named_children if n.type == "function_definition"), None)
    body = fn.child_by_field_name("body") if fn is not None else None
    return None if body is None or root.has_error else body


def walk(node: Node):
    """`node` and everything under it, in order."""
    yield node
    for child in node.children:
        yield from walk(child)


def dims(values) -> tuple:
    """A launch dimension without its trailing ones: `[256, 1]` is a 1-D block of 256."""
    out = list(values)
    while len(out) > 1 and str(out[-1]).strip() == "1":
        out.pop()
    return tuple(out)


def single_statement(node: Node) -> Node | None:
    """`{ x += y; }` or `x += y;`: the one statement (comments aside); None for a block of more."""
    if node.type != "compound_statement":
        return node
    kept = [n for n in node.named_children if n.type != "comment"]
    return kept[0] if len(kept) == 1 else None


_BLOCK_BASE = {"blockIdx.x*blockDim.x", "blockDim.x*blockIdx.x"}


def is_global_index(text: str) -> bool:
    """`blockIdx.x * blockDim.x + threadIdx.x` in any of the orders people write it (the terms
    and the product's factors swapped, parenthesised)."""
    t = "".join(text.split())
    while t.startswith("(") and t.endswith(")") and t.count("(") == 1:
        t = t[1:-1]
    terms = t.split("+")
    if len(terms) != 2:
        return False
    terms = [x[1:-1] if x.startswith("(") and x.endswith(")") else x for x in terms]
    return "threadIdx.x" in terms and (set(terms) - {"threadIdx.x"}) <= _BLOCK_BASE and len(set(terms)) == 2
