"""Which of an operand's two indices is adjacent in memory: `A[row * K + k]` walks memory with
`k`, `A[k * M + row]` (column-major) with `row`.

Only the speed depends on this: a tile is loaded with its adjacent index across neighbouring
threads, four elements at a time. Correctness never does: every element is loaded through the
kernel's own index expression, and a 128-bit load is taken only where the four addresses are
found adjacent and aligned at run time. So an expression this module cannot read (a call, a
division) gets no preference, not a refusal.
"""

from __future__ import annotations

import ast
import re
from typing import Literal

Fast = Literal["index", "k"]

_CAST = re.compile(r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long\s+long|long|size_t|int64_t|uint64_t|"
                   r"int32_t|uint32_t|uint|ptrdiff_t)\s*\)|static_cast\s*<[^<>]*>")
_ARITHMETIC = re.compile(r"^[\w\s+\-*()]*$")


def subscript(factor: str) -> str:
    """`A[row * K + k]` -> `row * K + k`."""
    return factor[factor.index("[") + 1:factor.rindex("]")]


def adjacent(factor: str, index: str, k: str) -> Fast | None:
    """"k" where neighbouring `k` are neighbouring elements, "index" where neighbouring values
    of the thread index are, None where neither (or the expression is not plain arithmetic)."""
    text = _CAST.sub(" ", subscript(factor)).strip()
    if not _ARITHMETIC.match(text):
        return None
    names = sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text)))
    # distinct odd values, far apart: a stride of one cannot come from the other names by chance
    values = {name: 1_000_003 + 7_919 * i for i, name in enumerate(names)}
    values[index], values[k] = 37, 53
    try:
        tree = ast.parse(re.sub(r"\b[A-Za-z_]\w*\b", lambda m: f"v_{m.group(0)}", text), mode="eval")
    except SyntaxError:
        return None

    def at(**moved: int) -> int | None:
        env = {f"v_{n}": v + moved.get(n, 0) for n, v in values.items()}
        return _evaluate(tree.body, env)

    base, step_k, step_index = at(), at(**{k: 1}), at(**{index: 1})
    if base is None or step_k is None or step_index is None:
        return None
    if step_k - base == 1:
        return "k"
    if step_index - base == 1:
        return "index"
    return None


def _evaluate(node: ast.AST, env: dict[str, int]) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _evaluate(node.operand, env)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        left, right = _evaluate(node.left, env), _evaluate(node.right, env)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        return left - right if isinstance(node.op, ast.Sub) else left * right
    return None
