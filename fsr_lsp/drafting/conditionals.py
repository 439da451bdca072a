"""The host code's ternaries that read as sizes: `a < b ? a : b` is `min(a, b)`, `n % B ? 1 : 0`
is a remainder counted as one block, and a condition of constants picks its branch. The spec's
expressions have no branches, so these are the forms that translate; cexpr.py asks."""

from __future__ import annotations

import operator
from typing import Callable

from tree_sitter import Node

_COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
                "!=": operator.ne}
_ZERO = ("0", "0u", "0U")


def extreme(condition: Node, yes: Node, no: Node) -> tuple[str, Node, Node] | None:
    """`a < b ? a : b` as ("min", a, b), `a > b ? a : b` as ("max", a, b), and the mirrors with
    the branches swapped; None for any other conditional."""
    condition = unwrapped(condition)
    op = _operator(condition)
    if op not in ("<", "<=", ">", ">="):
        return None
    left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
    if left is None or right is None:
        return None
    sides, taken = (spelled(left), spelled(right)), (spelled(yes), spelled(no))
    if taken not in (sides, sides[::-1]):
        return None
    smaller = (op in ("<", "<=")) == (taken == sides)
    return ("min" if smaller else "max"), unwrapped(left), unwrapped(right)


def remainder_flag(condition: Node, yes: Node, no: Node) -> tuple[Node, bool] | None:
    """`n % B == 0 ? 0 : 1`, `n % B != 0 ? 1 : 0`, `n % B ? 1 : 0` (a block more for a
    remainder): the remainder, and whether the value is 1 when it is not zero; None otherwise."""
    test = remainder_test(condition)
    if test is None or {spelled(yes), spelled(no)} != {"0", "1"}:
        return None
    remainder, nonzero = test
    return remainder, (spelled(yes) == "1") == nonzero


def remainder_test(node: Node) -> tuple[Node, bool] | None:
    """`n % B != 0`, `n % B > 0` or a bare `n % B` (true where the remainder is not zero), or
    `n % B == 0` (true where it is): the remainder, and which of the two; None otherwise."""
    node = unwrapped(node)
    op = _operator(node)
    if op == "%":
        return node, True
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if op not in ("==", "!=", ">") or left is None or spelled(right) not in _ZERO:
        return None
    left = unwrapped(left)
    return (left, op != "==") if _operator(left) == "%" else None


def truth(node: Node | None, value: Callable[[Node], int | float]) -> bool:
    """A condition's truth, `value` giving each operand's number (raising where it has none):
    comparisons, `&&`, `||`, `!`, `true`, `false`, and a number that is not zero. ValueError
    for a condition the parser left incomplete."""
    if node is None:
        raise ValueError("an incomplete condition")
    node = unwrapped(node)
    if node.type in ("true", "false"):
        return node.type == "true"
    if node.type == "unary_expression" and _text(node.child_by_field_name("operator")) == "!":
        return not truth(node.child_by_field_name("argument"), value)
    op = _operator(node)
    if op in ("&&", "||"):
        first = truth(node.child_by_field_name("left"), value)
        return first if first == (op == "||") else truth(node.child_by_field_name("right"), value)
    if op in _COMPARISONS:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            raise ValueError("an incomplete comparison")
        return bool(_COMPARISONS[op](value(left), value(right)))
    return value(node) != 0


def unwrapped(node: Node) -> Node:
    """The expression inside its parentheses."""
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def spelled(node: Node | None) -> str:
    """An expression's text without its spaces and outer parentheses: `( n )` and `n` alike."""
    return "".join(_text(unwrapped(node)).split()) if node is not None else ""


def _operator(node: Node) -> str:
    return _text(node.child_by_field_name("operator")) if node.type == "binary_expression" else ""


def _text(node: Node | None) -> str:
    return node.text.decode() if node is not None and node.text is not None else ""
