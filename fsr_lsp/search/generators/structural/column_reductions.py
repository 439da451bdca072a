"""Which outer variables a row's column loop reduces, and how (a sum, a max or min by call or by
comparison): the warp per row (rows.py) gives each lane part of the columns, so every such
variable must be combined across the lanes afterwards, and anything else the loop assigns
outside its own locals (a prefix sum, a value read mid-way, a write two lanes would share)
makes it no column loop."""

from __future__ import annotations

import re
from typing import Callable

from tree_sitter import Node

from .syntax import walk as _walk

_MINMAX = {"fmaxf", "fminf", "fmax", "fmin", "max", "min"}


class NotApplicable(Exception):
    """The kernel is not of the shape the rewrite knows."""


def column_reductions(s: Callable[[Node], str], body: Node, j: str) -> dict[str, str]:
    """Outer variables the loop reduces, with how; anything else assigned outside the loop's
    own locals makes the loop no column loop."""
    local = {s(d) for n in _walk(body) if n.type == "init_declarator"
             for d in [n.child_by_field_name("declarator")] if d is not None and d.type == "identifier"}
    local |= {s(n.child_by_field_name("declarator")) for n in _walk(body) if n.type == "declaration"
              and n.child_by_field_name("declarator") is not None
              and n.child_by_field_name("declarator").type == "identifier"}
    out: dict[str, str] = {}
    mentions: dict[str, int] = {}  # of each reduced variable, by its own reduction statements
    handled: set[int] = set()  # assignments that are the body of a conditional max or min
    for n in _walk(body):
        found = conditional(s, n, local)
        if found is not None:
            v, how, assignment = found
            out[v] = how if out.get(v, how) == how else _conflict()
            mentions[v] = mentions.get(v, 0) + 2
            handled.add(assignment.id)
    for n in _walk(body):
        if n.type in ("for_statement", "while_statement", "do_statement", "return_statement", "break_statement",
                      "goto_statement"):
            raise NotApplicable
        if n.type == "update_expression":
            target = n.named_children[0] if n.named_children else None
            if target is None or target.type != "identifier" or s(target) not in local:
                raise NotApplicable
        if n.type != "assignment_expression" or n.id in handled:
            continue
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        op = n.child_by_field_name("operator")
        if left is None or right is None or op is None:
            raise NotApplicable
        if left.type == "subscript_expression":
            index = left.child_by_field_name("indices") or left.named_children[-1]
            if not re.search(rf"\b{re.escape(j)}\b", s(index)):
                raise NotApplicable  # two lanes would write one element
            continue
        if left.type != "identifier":
            raise NotApplicable
        v = s(left)
        if v in local:
            continue
        if v == j:
            raise NotApplicable
        uses = re.compile(rf"\b{re.escape(v)}\b")
        if s(op) == "+=" and not uses.search(s(right)):
            out[v] = out.get(v, "+") if out.get(v, "+") == "+" else _conflict()
            mentions[v] = mentions.get(v, 0) + 1
        elif s(op) == "=" and right.type == "call_expression":
            fn = s(right.child_by_field_name("function"))
            args = [a for a in right.child_by_field_name("arguments").named_children]
            texts = [s(a).strip() for a in args]
            if fn not in _MINMAX or len(args) != 2 or texts.count(v) != 1 or \
                    uses.search(texts[1 - texts.index(v)]):
                raise NotApplicable
            out[v] = fn if out.get(v, fn) == fn else _conflict()
            mentions[v] = mentions.get(v, 0) + 2
        else:
            raise NotApplicable
    for v, count in mentions.items():  # a partial value read in the loop (a prefix sum) is no reduction
        if sum(1 for n in _walk(body) if n.type == "identifier" and s(n) == v) != count:
            raise NotApplicable
    return out

def conditional(s: Callable[[Node], str], node: Node, local: set[str]) -> tuple[str, str, Node] | None:
    """`if (e > v) v = e;` (a max) or `if (e < v) v = e;` (a min), in any of their spellings:
    (variable, "if>" or "if<", the assignment)."""
    if node.type != "if_statement" or node.child_by_field_name("alternative") is not None:
        return None
    cond, then = node.child_by_field_name("condition"), node.child_by_field_name("consequence")
    if cond is None or then is None:
        return None
    if then.type == "compound_statement" and len(then.named_children) == 1:
        then = then.named_children[0]
    if then.type != "expression_statement" or not then.named_children:
        return None
    assignment = then.named_children[0]
    operator = assignment.child_by_field_name("operator")
    if assignment.type != "assignment_expression" or operator is None or s(operator) != "=":
        return None
    left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier" or s(left) in local:
        return None
    v, e = s(left), " ".join(s(right).split())
    m = re.fullmatch(r"\(\s*(.+?)\s*(<=|>=|<|>)\s*(.+?)\s*\)", " ".join(s(cond).split()))
    if m is None or re.search(rf"\b{re.escape(v)}\b", e):
        return None
    a, op, b = m.groups()
    if (a, b) == (e, v):
        return v, "if>" if op in (">", ">=") else "if<", assignment
    if (a, b) == (v, e):
        return v, "if>" if op in ("<", "<=") else "if<", assignment
    return None


def _conflict() -> str:
    raise NotApplicable
