"""A texture parameter's spec value read and checked at every size (`"texture[W, H] uchar"`):
its extents must evaluate to a positive number of texels at the bench and every test."""

from __future__ import annotations

from typing import Any

from ..kernels.kernel import Param
from .expr import ExprError, evaluate_int
from .inits import read_init
from .model import SizeSet, TextureArg
from .texture import read_texture, texture_arg


def texture_param(ctx: Any, p: Param, value: Any, sizes: list[SizeSet]) -> TextureArg:
    """`ctx`: the spec parser's context (its `fail` places a problem on the parameter's line)."""
    try:
        parts = read_texture(value)
    except ValueError as e:
        raise ctx.fail(f"{p.name}: {e}", p.name, "args", code="spec-bad-arg") from None
    for extent in parts.shape:
        for s in sizes:
            try:
                n = evaluate_int(extent, s, f"size of {p.name}")
            except ExprError as e:
                raise ctx.fail(f"{p.name}: size {extent!r} does not evaluate: {e}", p.name, "args",
                               code="spec-bad-arg") from None
            if n <= 0:
                shown = ", ".join(f"{k}={v}" for k, v in s.items())
                raise ctx.fail(f"{p.name}: size {extent!r} gives {n} at {shown}", p.name, "args", code="spec-bad-arg")
    return texture_arg(p.name, parts, read_init(ctx, p, parts.init, parts.dtype))
