"""Host helper functions read like function-like macros: a function whose body is one
`return EXPR;` (`cdiv`, `ceil_div`, `iDivUp`, a project's `intCeilDiv`) is how launch
configurations compute grids more often than a macro."""

from __future__ import annotations

from tree_sitter import Node

from ..source import SourceText


def one_return_helper(src: SourceText, node: Node) -> tuple[str, tuple[list[str], str]]:
    """(name, (parameter names, the returned expression)) of a one-return function definition;
    ('', ...) for any other."""
    none: tuple[str, tuple[list[str], str]] = ("", ([], ""))
    body, declarator = node.child_by_field_name("body"), node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if body is None or declarator is None:
        return none
    statements = [c for c in body.named_children if c.type != "comment"]
    if len(statements) != 1 or statements[0].type != "return_statement" or not statements[0].named_children:
        return none
    name, params = declarator.child_by_field_name("declarator"), declarator.child_by_field_name("parameters")
    if name is None or params is None or name.type != "identifier":
        return none
    names = []
    for p in params.named_children:
        ident = p
        while ident is not None and ident.type not in ("identifier", "field_identifier"):
            ident = ident.child_by_field_name("declarator")
        if ident is None:
            return none
        names.append(_text(src, ident))
    returned = statements[0].named_children[0]
    return _text(src, name), (names, _text(src, returned).strip())


def _text(src: SourceText, node: Node) -> str:
    return src.slice(node.start_byte, node.end_byte)
