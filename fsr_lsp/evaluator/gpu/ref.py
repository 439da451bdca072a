"""The spec's `ref`: torch expressions that compute the expected outputs.

They are the user's own code from their own file, like the kernel itself; they run with a
namespace holding torch, the argument tensors and the sizes, and no builtins beyond a few
harmless ones. `specs.ref.check_ref_expr` already refused dunder access.
"""

from __future__ import annotations

import math
from typing import Any

from ..records import ArgPlan, SizePlan
from .buffers import storage_dtype

_BUILTINS = {"min": min, "max": max, "abs": abs, "float": float, "int": int, "len": len, "range": range}


class RefError(RuntimeError):
    pass


def eval_ref(torch: Any, exprs: dict[str, str], plan: SizePlan, inputs: dict[str, Any]) -> dict[str, Any]:
    """Outputs by name, flat and in the buffer's storage dtype."""
    env: dict[str, Any] = {"torch": torch, "F": torch.nn.functional, "math": math, **plan.sizes}
    args = {a.name: a for a in plan.args}
    for a in plan.args:
        if a.kind == "scalar":
            env[a.name] = a.value
        elif a.name in inputs:
            env[a.name] = inputs[a.name].clone()
    out = {}
    for name, expr in exprs.items():
        try:
            value = eval(compile(expr, f"<ref {name}>", "eval"), {"__builtins__": _BUILTINS}, env)  # noqa: S307
        except Exception as e:  # the user's expression: report, never crash the worker
            raise RefError(f"ref.{name} = {expr!r} failed: {type(e).__name__}: {e}") from None
        out[name] = _as_output(torch, value, args[name], name)
    return out


def _as_output(torch: Any, value: Any, arg: ArgPlan, name: str) -> Any:
    if not isinstance(value, torch.Tensor):
        raise RefError(f"ref.{name} did not give a tensor")
    flat = value.reshape(-1)
    if flat.numel() != arg.numel:
        raise RefError(f"ref.{name} has {flat.numel()} elements; buffer {name} has {arg.numel}")
    return flat.to(storage_dtype(torch, arg.dtype))
