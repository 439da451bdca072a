"""No statement follows a `return`, `raise`, `continue` or `break` in the same block anywhere in
the package. Much of the GPU session runs only on a GPU, where CI cannot reach it; a method
pasted into the middle of `__init__` once left the rest of `__init__` unreachable, and every
GPU job failed ('GpuSession' object has no attribute 'vetted')."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fsr_lsp"
ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def unreachable(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, statement in enumerate(block[:-1]):
                if isinstance(statement, ENDS):
                    lines.append(block[i + 1].lineno)
    return lines


def test_no_code_after_a_return_in_the_package():
    found = {str(path.relative_to(PACKAGE)): lines for path in sorted(PACKAGE.rglob("*.py"))
             if (lines := unreachable(ast.parse(path.read_text(), str(path))))}
    assert found == {}


def test_the_check_finds_what_it_looks_for():
    assert unreachable(ast.parse("def f():\n    return 1\n    x = 2\n")) == [3]
    assert unreachable(ast.parse("for a in b:\n    if a:\n        continue\n    y()\n")) == []
