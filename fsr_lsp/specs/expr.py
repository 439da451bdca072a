"""Size expressions (`cdiv(n, 256)`, `M*K`, `max(1, n // 2)`), evaluated without `eval`.

Python's `ast` parses the text; only a whitelist of nodes is evaluated. `/` divides like C:
two integers give a truncated integer, so `n/4` means what a CUDA engineer expects.
"""

from __future__ import annotations

from functools import lru_cache

import ast
import math
import re
from typing import Callable, Mapping

Number = int | float


class ExprError(ValueError):
    """An expression that is malformed or cannot be evaluated; `col` is 0-based in the text."""

    def __init__(self, message: str, col: int = 0) -> None:
        super().__init__(message)
        self.col = col


def _cdiv(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError
        return -(-a // b)
    return math.ceil(a / b)


_FUNCS: dict[str, tuple[Callable[..., Number], int, int]] = {
    "min": (min, 2, 8),
    "max": (max, 2, 8),
    "cdiv": (_cdiv, 2, 2),
}


def _c_div(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def _c_mod(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        return a - b * _c_div(a, b)
    return math.fmod(a, b)


def _shift(op: Callable[[int, int], int]) -> Callable[[Number, Number], Number]:
    def apply(a: Number, b: Number) -> Number:
        if not isinstance(a, int) or not isinstance(b, int):
            raise TypeError("shifts need integers")
        if b < 0 or b > 63:
            raise ValueError("shift count out of range")
        return op(a, b)

    return apply


_BINOPS: dict[type, Callable[[Number, Number], Number]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: _c_div,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: _c_mod,
    ast.LShift: _shift(lambda a, b: a << b),
    ast.RShift: _shift(lambda a, b: a >> b),
}

_MAX_MAGNITUDE = 1 << 62


def _literal(n: int) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){n}(?![\w.])")


def has_literal(text: str | int, n: int) -> bool:
    """Whether an expression (or C text) spells the whole number `n` (not as part of 2560 or x1)."""
    return isinstance(text, str) and _literal(n).search(text) is not None


def replace_literal(text: str | int, old: int, new: int) -> str | int:
    """`text` with every whole-number `old` replaced by `new`; plain numbers pass through."""
    return _literal(old).sub(str(new), text) if isinstance(text, str) else text


@lru_cache(maxsize=4096)  # drafting evaluates the same few expressions at every size; trees are never changed
def parse_expr(text: str) -> ast.expr:
    """Parse and whitelist-check an expression; raises ExprError."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"invalid expression {text!r}: {e.msg}", max(0, (e.offset or 1) - 1)) from None
    _check(tree.body)
    return tree.body


def names_in(text: str) -> set[str]:
    return {n.id for n in ast.walk(parse_expr(text)) if isinstance(n, ast.Name) and n.id not in _FUNCS}


def evaluate(expr: str | Number, env: Mapping[str, Number]) -> Number:
    """Value of an expression (or a plain number) given the size names in `env`."""
    if isinstance(expr, bool):
        raise ExprError("expected a number or an expression, got a boolean")
    if isinstance(expr, (int, float)):
        return expr
    node = parse_expr(expr)
    try:
        return _eval(node, env)
    except ZeroDivisionError:
        raise ExprError(f"division by zero in {expr!r}") from None
    except (TypeError, ValueError, OverflowError) as e:
        raise ExprError(f"cannot evaluate {expr!r}: {e}") from None


def evaluate_int(expr: str | Number, env: Mapping[str, Number], what: str) -> int:
    value = evaluate(expr, env)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprError(f"{what} = {expr!r} gives {value}, not an integer (use // or cdiv)")
        value = int(value)
    return value


def _check(node: ast.AST) -> None:
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise ExprError(f"operator {type(node.op).__name__} is not allowed", node.col_offset)
        _check(node.left)
        _check(node.right)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.UAdd, ast.USub)):
            raise ExprError("only unary + and - are allowed", node.col_offset)
        _check(node.operand)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
            raise ExprError("only min, max and cdiv may be called", node.col_offset)
        _, lo, hi = _FUNCS[node.func.id]
        if node.keywords or not lo <= len(node.args) <= hi:
            raise ExprError(f"{node.func.id} takes {lo} to {hi} positional arguments", node.col_offset)
        for a in node.args:
            _check(a)
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExprError(f"only numbers are allowed, not {node.value!r}", node.col_offset)
    elif isinstance(node, ast.Name):
        pass
    else:
        raise ExprError(f"{type(node).__name__} is not allowed in a size expression", getattr(node, "col_offset", 0))


def _eval(node: ast.expr, env: Mapping[str, Number]) -> Number:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"unknown size name {node.id!r} (known: {', '.join(sorted(env)) or 'none'})", node.col_offset)
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        value = _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
        if isinstance(value, int) and abs(value) > _MAX_MAGNITUDE:
            raise OverflowError("value too large")
        return value
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return _FUNCS[node.func.id][0](*(_eval(a, env) for a in node.args))
