"""Small pieces of a drafted spec's text, shared by the drafts from launch sites and from
captures: test sizes that keep every length positive, and launch dimensions as TOML."""

from __future__ import annotations

import json

from ..specs import evaluate_int


def positive(exprs: list[str], sizes: dict[str, int]) -> bool:
    """Every expression evaluates to at least 1 at these sizes (a length, a grid)."""
    for e in exprs:
        try:
            if evaluate_int(e, sizes, "check") < 1:
                return False
        except Exception:
            return False
    return True


def toml_dims(values: list) -> str:
    """Spec dims as TOML: one entry bare, several a list; numbers plain, expressions quoted."""
    rendered = [str(v) if isinstance(v, int) or str(v).isdigit() else json.dumps(v) for v in values]
    return rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
