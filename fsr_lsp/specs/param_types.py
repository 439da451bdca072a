"""A parameter's element type under a spec's template arguments: `T*` with `template = "float"`
is a float buffer, `Pack<T, 4>*` four float lanes. The spec's check, the evaluator's plans and
the preparation of a kernel read it the same way."""

from __future__ import annotations

from ..kernels.c_types import element_type
from ..kernels.kernel import Kernel, Param
from ..kernels.lexical import split_top_level
from ..kernels.structs import substituted


def template_substitution(kernel: Kernel, template: str | None) -> dict[str, str]:
    """Template parameter name -> argument text, from `template = "float, 256"`."""
    if not template or not kernel.template_params:
        return {}
    values = [v.strip() for v in split_top_level(template)]  # `DirectLoad<float, float>, 4`: two
    names = kernel.template_names
    return dict(zip(names, values))


def param_dtype(p: Param, subst: dict[str, str]) -> tuple[str | None, int]:
    if p.dtype is not None:
        return p.dtype, p.lanes
    if p.is_pointer and p.pointee.endswith("*"):  # `float** rows`: pointers, no floats to fill
        return None, 1
    return element_type(substituted(p.base_type, subst))
