"""A spec's `ref`: torch expressions that give an output a second oracle (and a library
baseline), checked for what has no business in them before they ever run."""

from __future__ import annotations

import ast
from typing import Any

from .expr import ExprError
from .model import Arg, BufferArg


def read_ref(ctx: Any, table: Any, args: tuple[Arg, ...] | None) -> dict[str, str]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        ctx.add('ref must be a table of output = "torch expression"', "ref")
        return {}
    outputs = {a.name for a in args or () if isinstance(a, BufferArg) and a.direction != "in"}
    ref: dict[str, str] = {}
    for name, expr in table.items():
        if args is not None and name not in outputs:
            ctx.add(f"ref names {name!r}, which is not an out or inout buffer", "ref")
            continue
        if not isinstance(expr, str):
            ctx.add(f"ref.{name} must be a string with a torch expression", "ref")
            continue
        try:
            check_ref_expr(expr)
        except ExprError as e:
            ctx.add(f"ref.{name}: {e}", "ref")
            continue
        ref[name] = expr
    return ref


def check_ref_expr(expr: str) -> None:
    """A `ref` is the user's own torch code; refuse what has no business in it."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"invalid expression: {e.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ExprError(f"attribute {node.attr!r} is not allowed")
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise ExprError(f"name {node.id!r} is not allowed")
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            raise ExprError(f"{type(node).__name__} is not allowed")
