"""Where a struct parameter's members lie, as fsr packs them (gpu/packing.py), and the
compiler's word on it: `static_assert`s appended to each build the evaluator runs, so that a
layout fsr computes otherwise than nvcc (a typedef'd vector's alignment, `#pragma pack`, a
struct chosen by `#if`, a member type a `-D` changes) fails the build with a message saying so,
and never packs values where the kernel does not read them."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Sequence

from ...kernels.c_types import ITEMSIZE, layout, member_size
from ...kernels.kernel import Kernel
from ...kernels.structs import substituted
from ...specs import CapturedValueArg, Spec
from ...specs.param_types import param_dtype, template_substitution
from ..records import ArgPlan, SizePlan
from .captured_buffers import with_captured_sources
from .plan import build_plans
from .widening import wide_args

_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|struct|class)\b")


def members_of(args: Sequence[ArgPlan], head: int) -> list[ArgPlan]:
    """The members that follow the struct head at `head`, in order."""
    name = args[head].name
    out = []
    for a in args[head + 1:]:
        if a.member != name:
            break
        out.append(a)
    return out


def member_layout(members: Sequence[ArgPlan]) -> tuple[list[int], int, int]:
    """Offsets, size and alignment of a struct of these members (a buffer member is a pointer; an
    array or vector member its lanes, aligned as the plan says)."""
    return layout([_extent(a) for a in members])


def _extent(a: ArgPlan) -> tuple[int, int]:
    if a.kind == "buffer":
        return member_size(a.dtype, 1, True)
    size, natural = member_size(a.dtype, a.lanes, False)
    return size, a.align or natural


def layout_assertions(kernel: Kernel, plan: SizePlan, subst: dict[str, str]) -> str:
    """`static_assert`s of the size, alignment and member offsets fsr packs each by-value struct
    and vector parameter with ('' when the kernel takes none)."""
    lines = []
    i = 0
    for p in kernel.params:
        a = plan.args[i]
        name = " ".join(_QUALIFIERS.sub(" ", substituted(p.type_text, subst)).split())
        if a.kind == "struct":
            members = members_of(plan.args, i)
            offsets, size, align = member_layout(members)
            conds = [f"sizeof({name}) == {size}", f"alignof({name}) == {align}"]
            conds += [f"__builtin_offsetof({name}, {f.name}) == {o}" for f, o in zip(p.fields, offsets)]
            i += 1 + len(members)
        else:
            if a.kind == "scalar" and a.lanes > 1:
                conds = [f"sizeof({name}) == {ITEMSIZE[a.dtype] * a.lanes}", f"alignof({name}) == {a.align}"]
            elif a.kind == "bytes" and a.dtype.startswith("struct:"):  # the run's bytes: as many as this build's
                conds = [f"sizeof({name}) == {a.dtype.split(':')[1]}"]
            else:
                conds = []
            i += 1
        if conds:
            lines.append(f'static_assert({" && ".join(conds)}, "fsr lays out `{p.name}` ({name}) otherwise than this '
                         f'build: it cannot pass this parameter");')
    return ("\n\n// fsr: the parameter layouts it packs\n" + "\n".join(lines) + "\n") if lines else ""


def layout_checks(kernel: Kernel, spec: Spec, real_inputs: dict[str, str] | None = None) -> tuple[str, str]:
    """The assertions for the kernel's build and for its build with float promoted to double
    (whose struct and vector layouts are the double ones); ('', '') for a kernel that takes no
    struct or vector by value (a `T` the spec's template makes `float4` is one). A value passed
    as a captured run passed it (`real_inputs` holds its bytes) must be as large in this build."""
    subst = template_substitution(kernel, spec.template)
    captured = any(isinstance(a, CapturedValueArg) for a in spec.args)
    if not captured and not any(p.fields or (not p.is_pointer and param_dtype(p, subst)[1] > 1) for p in kernel.params):
        return "", ""
    plan = build_plans(kernel, spec)[0]
    if captured:
        found, _ = with_captured_sources([plan], real_inputs or {})
        if not found:
            return "", ""  # the bytes are missing: the job says so
        plan = found[0]
    wide = layout_assertions(kernel, replace(plan, args=wide_args(plan)), subst)
    return layout_assertions(kernel, plan, subst), re.sub(r"\bfloat([1-4]?)\b", r"double\1", wide)
