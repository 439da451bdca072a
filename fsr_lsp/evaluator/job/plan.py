"""Spec + kernel -> concrete run plans: every size evaluated, every buffer sized."""

from __future__ import annotations

import dataclasses
import re

from ...kernels import Kernel
from ...kernels.c_types import by_value_alignment, element_type
from ...specs import BufferArg, Spec, default_init, evaluate, evaluate_int, tolerance
from ...kernels.kernel import Param
from ...kernels.structs import substituted
from ...kernels.device_variables import PREFIX, DeviceVariable, element_count
from ...specs.model import Arg, CapturedValueArg, AtArg, Init, NullArg, SizeSet, StructArg, TextureArg
from ...specs.param_types import param_dtype, template_substitution
from ..records import ArgPlan, LaunchPlan, SizePlan, TexturePlan

EDGE_MULTIPLE = 32  # sizes that are all multiples of this get an extra edge size


def build_plans(kernel: Kernel, spec: Spec, candidate_spec: Spec | None = None) -> list[SizePlan]:
    """Test sizes (smallest first), an edge size when every size is a multiple of 32, then
    the bench size last: cheap failures come first."""
    cand = candidate_spec or spec
    if len(spec.args) != len(kernel.params):  # a spec of the kernel as instantiated (kernels/packs.py `expanded`)
        raise ValueError(f"{kernel.name}: the spec gives {len(spec.args)} arguments, the kernel as passed has "
                         f"{len(kernel.params)} parameters (expand a variadic kernel for the spec's template first)")
    subst = template_substitution(kernel, spec.template)
    sized: list[tuple[str, SizeSet]] = [("test", s) for s in sorted(spec.tests, key=_volume)]
    edge = edge_size(spec)
    if edge is not None:
        sized.append(("edge", edge))
    sized.append(("bench", spec.bench))
    plans = []
    for role, sizes in sized:
        plans.append(SizePlan(
            label=", ".join(f"{k}={v}" for k, v in sizes.items()),
            role=role,
            sizes=dict(sizes),
            args=[plan for i in range(len(kernel.params)) for plan in _arg_plans(kernel, spec, i, sizes, subst)],
            original=launch_plan(spec, sizes),
            candidate=launch_plan(cand, sizes),
        ))
    return plans


def edge_size(spec: Spec) -> SizeSet | None:
    """Sizes that are not block multiples catch missing bounds checks; when the spec has none,
    take the smallest size set and add 1 to each size."""
    all_sets = [*spec.tests, spec.bench]
    if not spec.edge or any(v % EDGE_MULTIPLE for s in all_sets for v in s.values()):
        return None
    smallest = min(all_sets, key=_volume)
    return {k: v + 1 for k, v in smallest.items()}


def launch_plan(spec: Spec, sizes: SizeSet) -> LaunchPlan:
    grid = [evaluate_int(g, sizes, "grid") for g in spec.grid]
    block = [int(b) for b in spec.block]
    return LaunchPlan(grid=_dim3(grid), block=_dim3(block), smem=evaluate_int(spec.smem, sizes, "smem"))


def _dim3(values: list[int]) -> tuple[int, int, int]:
    padded = (values + [1, 1, 1])[:3]
    return padded[0], padded[1], padded[2]


def _arg_plans(kernel: Kernel, spec: Spec, index: int, sizes: SizeSet, subst: dict[str, str]) -> list[ArgPlan]:
    """One parameter's plan; a struct passed by value is a head and its members (`A.elements`),
    each planned as a parameter of the member's type would be."""
    param, arg = kernel.params[index], spec.args[index]
    if not isinstance(arg, StructArg):
        return [_arg_plan(param, arg, spec, sizes, subst)]
    members = []
    for field, value in zip(param.fields, arg.fields):
        name = f"{arg.name}.{field.name}"
        plan = _arg_plan(dataclasses.replace(field, name=name), dataclasses.replace(value, name=name), spec, sizes, subst)
        members.append(dataclasses.replace(plan, member=arg.name))
    return [ArgPlan(name=arg.name, kind="struct", dtype="struct"), *members]


def _arg_plan(param: Param, arg: Arg, spec: Spec, sizes: SizeSet, subst: dict[str, str]) -> ArgPlan:
    if isinstance(arg, TextureArg):
        return _texture_plan(arg, sizes)
    if isinstance(arg, CapturedValueArg):  # the run's bytes: dtype and source once they are found
        return ArgPlan(name=arg.name, kind="bytes", dtype="bytes", init=Init("captured"))
    if isinstance(arg, NullArg):  # the pointer's 8 bytes, all zero
        return ArgPlan(name=arg.name, kind="scalar", dtype="uint64", value=0)
    if isinstance(arg, AtArg):  # a pointer's 8 bytes, once `of` has its address (job/linked_memory.py `late_values`)
        return ArgPlan(name=arg.name, kind="scalar", dtype="uint64", value=0, at=(arg.of, arg.at))
    bytes_of = isinstance(arg, BufferArg) and arg.unit == "bytes"  # memory fsr cannot type: the run's bytes
    dtype, lanes = ("uint8", 1) if bytes_of else param_dtype(param, subst)
    assert dtype is not None, f"{param.name}: unknown element type (the spec check should have refused it)"
    if isinstance(arg, BufferArg):
        rtol, atol = tolerance(dtype, spec.rtol, spec.atol)
        return ArgPlan(name=arg.name, kind="buffer", dtype=dtype, lanes=lanes,
                       length=evaluate_int(arg.length, sizes, f"length of {arg.name}"),
                       direction=arg.direction, init=arg.init, rtol=rtol, atol=atol,
                       tolerance="spec" if spec.rtol is not None or spec.atol is not None else "default",
                       offset=-evaluate_int(arg.start, sizes, f"start of {arg.name}"), pointers=bytes_of)
    is_int = dtype.startswith(("int", "uint", "bool"))
    one = (lambda v: evaluate_int(v, sizes, arg.name)) if is_int else (lambda v: float(evaluate(v, sizes)))
    if lanes > 1:  # a vector type or a struct of one type, by value: a value per lane (one number: every lane)
        given = arg.value if isinstance(arg.value, (list, tuple)) else [arg.value] * lanes
        return ArgPlan(name=arg.name, kind="scalar", dtype=dtype, lanes=lanes, value=tuple(one(v) for v in given),
                       align=param.align or by_value_alignment(substituted(param.base_type, subst), dtype, lanes))
    return ArgPlan(name=arg.name, kind="scalar", dtype=dtype, value=one(arg.value),
                   free=not is_int and not _over_sizes(arg.value, sizes))  # `alpha = 1.0`, not `inv_n = "1.0 / n"`


def _over_sizes(value: object, sizes: SizeSet) -> bool:
    """Whether a scalar's expression names a size (a relation the spec states)."""
    return isinstance(value, str) and any(re.search(rf"\b{re.escape(k)}\b", value) for k in sizes)


def _texture_plan(arg: TextureArg, sizes: SizeSet) -> ArgPlan:
    texel, channels = element_type(arg.texel)
    assert texel is not None, f"{arg.name}: texel type {arg.texel} (the spec check should have refused it)"
    dims = tuple(evaluate_int(d, sizes, f"size of {arg.name}") for d in arg.shape)
    return ArgPlan(name=arg.name, kind="texture", dtype="uint64", init=arg.init,
                   texture=TexturePlan(dims, texel, channels, arg.linear, arg.address, arg.filter, arg.normalized,
                                       arg.read))


def _volume(sizes: SizeSet) -> int:
    v = 1
    for x in sizes.values():
        v *= x
    return v


def variable_plans(variables: list[DeviceVariable], spec: Spec) -> list[ArgPlan]:
    """A buffer for each `__device__` variable the kernel writes (kernels/device_variables.py): no
    parameter (`hidden`), the module's pointer set to it before each launch (`symbol`), drawn afresh
    at each input set as an inout buffer is (a start of zero would let a rewrite that skipped an
    `atomicMin` or a flag's reset match the original), and compared as any output."""
    plans = []
    for v in variables:
        dtype, lanes = element_type(v.type_text)
        assert dtype is not None, f"{v.name}: {v.type_text} (not_redirectable should have refused it)"
        rtol, atol = tolerance(dtype, spec.rtol, spec.atol)
        plans.append(ArgPlan(name=v.name, kind="buffer", dtype=dtype, lanes=lanes or 1,
                             length=element_count(v), direction="inout", init=default_init(dtype),
                             rtol=rtol, atol=atol, hidden=True, symbol=PREFIX + v.name,
                             tolerance="spec" if spec.rtol is not None or spec.atol is not None else "default"))
    return plans
