"""A captured launch's values, parameter by parameter: each scalar as the run passed it, each
pointer's extent to the end of the allocation it points into (or null), a texture's description,
and a struct passed by value member by member (`A.width`, `A.elements`), read at the offsets the
C ABI gives its members."""

from __future__ import annotations

import dataclasses
import re
import struct

from ..capture import CapturedLaunch, CapturedParam
from ..kernels import Kernel, Param
from ..kernels.brackets import nesting
from ..kernels.c_types import ITEMSIZE, by_value_alignment, element_type, layout, member_size
from ..kernels.lexical import split_top_level
from ..kernels.structs import substituted
from ..specs.param_types import param_dtype
from ..specs.texture import is_texture


class NotCaptured(ValueError):
    """Why a captured launch gives no spec."""


@dataclasses.dataclass
class CapturedValues:
    template: str
    scalars: dict[str, int | float | list]  # by parameter name (a list: the lanes of a vector by value)
    extents: dict[str, int]  # pointer parameter -> elements from the pointer to its allocation's end
    dtypes: dict[str, str]
    textures: dict[str, dict]  # texture parameter -> what the capture read of it
    nulls: set[str] = dataclasses.field(default_factory=set)  # pointers the run passed as null
    before: dict[str, int] = dataclasses.field(default_factory=dict)  # elements of its allocation before a pointer
    opaque: set[str] = dataclasses.field(default_factory=set)  # pointers to memory fsr cannot type: bytes
    as_passed: set[str] = dataclasses.field(default_factory=set)  # values fsr cannot read: the run's bytes
    ends: dict[str, str] = dataclasses.field(default_factory=dict)  # a pointer just past another's buffer: `end(X)`
    sames: dict[str, str] = dataclasses.field(default_factory=dict)  # the pointer another parameter has: `same(X)`
    lanes: dict[str, int] = dataclasses.field(default_factory=dict)  # lanes of a pointer's element (float4: 4)


def values_of(kernel: Kernel, launch: CapturedLaunch) -> CapturedValues:
    if not launch.params and kernel.params:
        raise NotCaptured("the driver gave no parameter layout (cuFuncGetParamInfo needs a CUDA 12.4 driver)")
    if len(launch.params) != len(kernel.params):
        raise NotCaptured(f"the captured `{launch.name}` has {len(launch.params)} parameters, the kernel "
                          f"{len(kernel.params)} (another kernel of the same name?)")
    template = launch.template_args
    if bool(template) != bool(kernel.template_params):
        raise NotCaptured(f"the captured `{launch.name}` is {'a template instantiation' if template else 'no template'}, "
                          f"the kernel {'is none' if template else 'a template'} (another kernel of the same name?)")
    subst = launch_substitution(kernel, launch)
    values = CapturedValues(template, {}, {}, {}, {})
    values.sames = same_pointers(kernel, launch)
    ends = shared_ends(kernel, launch, values.sames)
    compiled = compiled_types(launch.name, len(kernel.params))
    for i, (p, c) in enumerate(zip(kernel.params, launch.params)):
        if p.name in ends or p.name in values.sames:
            continue
        if is_texture(p):
            if c.texture is None:
                raise NotCaptured(f"`{p.name}` is no texture object the driver knows (destroyed before the launch?)")
            values.textures[p.name] = c.texture
            continue
        unreadable = not _readable(p, subst) if p.fields else param_dtype(p, subst)[0] is None
        if i in launch.value_snapshot and not p.is_pointer and not is_texture(p) and unreadable:
            values.as_passed.add(p.name)  # a value fsr cannot read member by member: the run's bytes
            continue
        if p.fields:
            _struct_values(p, c, values, subst)
            continue
        dtype, lanes = (p.dtype, p.lanes) if p.dtype else param_dtype(p, subst)
        if dtype is None and p.is_pointer:  # a struct holding pointers, a table of pointers: the run's bytes
            values.opaque.add(p.name)
            _one_value(p, p.name, "uint8", 1, c, values)
            continue
        if dtype is None:
            raise NotCaptured(f"the element type of `{p.name}` ({p.base_type}) is unknown")
        built = element_type(compiled[i]) if compiled else (None, 1)
        if built[0] is not None and (built[0], built[1]) != (dtype, lanes or 1):
            raise NotCaptured(f"`{p.name}` is `{p.base_type}`, which the run's build compiled as `{compiled[i]}` (the "
                              f"kernel's symbol says so) and fsr reads as {dtype}{'x' + str(lanes) if lanes > 1 else ''} "
                              "(the file as a build without -D flags takes it): a spec from this capture would give "
                              "the kernel the wrong element type")
        _one_value(p, p.name, dtype, lanes, c, values)
    values.ends = _exact_ends(ends, launch, kernel, values)
    return values


def same_pointers(kernel: Kernel, launch: CapturedLaunch) -> dict[str, str]:
    """Pointer parameters the run passed the same address as an earlier one (`scale(a, a, n)`, an
    in-place launch), each with that earlier one: as two buffers apart, a write through one
    would not be seen through the other, and a rewrite would be verified for a call the program
    never makes."""
    first: dict[tuple[int, int], str] = {}
    sames = {}
    for p, c in zip(kernel.params, launch.params):
        a = c.alloc
        if not p.is_pointer or a is None or not a.base or a.offset >= a.size:
            continue
        key = (a.base, a.offset)
        if key in first:
            sames[p.name] = first[key]
        else:
            first[key] = p.name
    return sames


def shared_ends(kernel: Kernel, launch: CapturedLaunch, sames: dict[str, str] | None = None) -> dict[str, str]:
    """Pointers one past the end of an allocation another parameter points into (`end` of
    `begin, end`; an elementwise launcher's tail after its packs, `r + n` with nothing left), each
    with that parameter (the one nearest the allocation's start). Such a pointer is no buffer of its
    own: null, or a buffer apart, would change what the kernel does with it (a loop to `end`)."""
    ends = {}
    for p, c in zip(kernel.params, launch.params):
        a = c.alloc
        if a is None or a.offset != a.size or not a.base:
            continue
        sharing = [(d.alloc.offset, i, q.name) for i, (q, d) in enumerate(zip(kernel.params, launch.params))
                   if q is not p and q.name not in (sames or {}) and d.alloc is not None and d.alloc.base == a.base
                   and d.alloc.offset < d.alloc.size]
        if sharing:
            ends[p.name] = min(sharing)[2]
    return ends


def _exact_ends(ends: dict[str, str], launch: CapturedLaunch, kernel: Kernel, values: CapturedValues) -> dict[str, str]:
    """`ends` where the other's buffer, as the spec sizes it (whole elements from its pointer),
    ends exactly where the run's pointer was; otherwise the launch gives no spec."""
    params = {p.name: c for p, c in zip(kernel.params, launch.params)}
    for name, of in ends.items():
        a = params[of].alloc
        dtype = values.dtypes.get(of)
        reach = values.extents.get(of, 0) * ITEMSIZE.get(dtype or "", 0) * values.lanes.get(of, 1)
        if of not in values.extents or a is None or a.offset + reach != a.size:
            raise NotCaptured(f"`{name}` points one past the end of the allocation `{of}` points into, which is not "
                              f"a whole number of `{of}`'s elements from it: no spec can place `{name}` there")
    return ends


def _readable(p: Param, subst: dict[str, str]) -> bool:
    """Whether a struct passed by value can be read member by member at the run's layout."""
    try:
        struct_offsets(p, subst)
    except NotCaptured:
        return False
    return True


def _one_value(p: Param, name: str, dtype: str, lanes: int, c: CapturedParam, values: "CapturedValues") -> None:
    """A pointer's extent (or null) or a scalar's value, as the run passed it, under `name`."""
    values.dtypes[name] = dtype
    if not p.is_pointer:
        values.scalars[name] = _scalar(dataclasses.replace(p, name=name), dtype, c.raw)
        return
    if c.alloc is None and c.raw is not None and len(c.raw) == 8 and not any(c.raw):
        values.nulls.add(name)  # an optional buffer left out: the kernel gets null, as in the run
        return
    if c.alloc is None:
        raise NotCaptured(f"`{name}` points to no allocation the run made")
    if c.alloc.offset >= c.alloc.size:  # `r + n` with nothing left (a tail of none): no byte it may touch
        values.nulls.add(name)
        return
    values.extents[name] = (c.alloc.size - c.alloc.offset) // (ITEMSIZE[dtype] * lanes)
    values.lanes[name] = lanes
    if c.alloc.offset and c.alloc.offset % (ITEMSIZE[dtype] * lanes) == 0:
        values.before[name] = c.alloc.offset // (ITEMSIZE[dtype] * lanes)  # `d_in + RADIUS`: a halo before it
    if values.extents[name] < 1:
        raise NotCaptured(f"`{name}` points to the end of its allocation")


def struct_offsets(p: Param, subst: dict[str, str]) -> tuple[list[int], int, list[tuple[str, int]]]:
    """Each member's byte offset in a struct passed by value, its size, and each member's
    (dtype, lanes), with the launch's template arguments `subst`."""
    types = []
    for f in p.fields:
        dtype, lanes = (f.dtype, f.lanes) if f.dtype else element_type(substituted(f.base_type, subst))
        if dtype is None:
            raise NotCaptured(f"the element type of `{p.name}.{f.name}` ({f.base_type}) is unknown")
        types.append((dtype, lanes or 1))
    offsets, size, _ = layout([member_size(d, 1, True) if f.is_pointer else
                               (ITEMSIZE[d] * n, by_value_alignment(f.base_type, d, n))
                               for f, (d, n) in zip(p.fields, types)])
    return offsets, size, types


def launch_substitution(kernel: Kernel, launch: CapturedLaunch) -> dict[str, str]:
    """The kernel's template parameter names -> the arguments the captured launch instantiated."""
    return dict(zip(kernel.template_names,
                    [a.strip() for a in split_top_level(launch.template_args)]))


def _struct_values(p: Param, c: CapturedParam, values: "CapturedValues", subst: dict[str, str]) -> None:
    """A struct passed by value, member by member (`A.width`, `A.elements`): each at the offset
    the C ABI gives it in the captured bytes, a pointer member with the allocation the capture
    found at that word; a member typed by the kernel's template parameter, as the launch instantiated it."""
    offsets, size, types = struct_offsets(p, subst)
    if c.size != size:
        raise NotCaptured(f"`{p.name}` is {c.size} bytes in the run's build, {p.base_type} as fsr reads it "
                          f"{size}: its members are laid out otherwise")
    words = dict(c.words)
    if c.raw is None and c.alloc is not None and c.size == 8:  # `{ float* p; }`: recorded as the pointer it is
        c, words = dataclasses.replace(c, raw=bytes(8)), {0: c.alloc}
    if c.raw is None or len(c.raw) < size:
        raise NotCaptured(f"the bytes of `{p.name}` were not recorded (a capture records 256 bytes of a struct)")
    for f, at, (dtype, lanes) in zip(p.fields, offsets, types):
        step = member_size(dtype, 1, True)[0] if f.is_pointer else ITEMSIZE[dtype] * lanes
        member = CapturedParam(at, step, c.raw[at:at + step], words.get(at) if f.is_pointer else None)
        _one_value(f, f"{p.name}.{f.name}", dtype, lanes, member, values)


_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict)\b|[*&]")


def compiled_types(demangled: str, count: int) -> list[str]:
    """The element type of each parameter as the build compiled it, read from the kernel's
    demangled symbol (`void K<16>(__nv_bfloat16*, float const*, int)`); [] when it says nothing
    (a C-linkage kernel's symbol is its bare name) or another count of parameters."""
    if not demangled.endswith(")") or "(" not in demangled:
        return []
    # the parameter list: the last `(` at the top level (a template argument may hold one)
    start = max((i for i, (ch, depth) in enumerate(nesting(demangled, "(", ")")) if ch == "(" and depth == 0), default=-1)
    if start < 0:
        return []
    inner = demangled[start + 1:-1].strip()
    types = [" ".join(_QUALIFIERS.sub(" ", t).split()) for t in split_top_level(inner)] if inner and inner != "void" else []
    return types if len(types) == count else []


def _scalar(p: Param, dtype: str, raw: bytes | None) -> int | float | list:
    if raw is None:
        raise NotCaptured(f"the value of `{p.name}` was not recorded")
    lanes = p.lanes or 1
    if lanes > 1 and dtype in ITEMSIZE and len(raw) == ITEMSIZE[dtype] * lanes:  # `float4 c` by value: each lane
        step = ITEMSIZE[dtype]
        one = dataclasses.replace(p, lanes=1)
        return [_scalar(one, dtype, raw[i * step:(i + 1) * step]) for i in range(lanes)]
    formats = {"float32": "<f", "float64": "<d", "float16": "<e"}
    if dtype in formats:
        if len(raw) != struct.calcsize(formats[dtype]):
            raise NotCaptured(f"`{p.name}` is {len(raw)} bytes, a {dtype} is {struct.calcsize(formats[dtype])}")
        return struct.unpack(formats[dtype], raw)[0]
    if dtype in ITEMSIZE and not dtype.startswith(("float", "bfloat")) and len(raw) == ITEMSIZE[dtype]:
        return int.from_bytes(raw, "little", signed=dtype.startswith("int"))
    raise NotCaptured(f"`{p.name}` ({dtype}) cannot be read from {len(raw)} captured bytes")
