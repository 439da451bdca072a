"""A struct passed by value, packed: its members' values (buffer pointers, scalars) written
into the struct's bytes at the offsets the C ABI gives (kernels/struct_fields.py), and the
launch's parameter format padded so the struct starts at its alignment.

A plan holds such a parameter as a head (`kind == "struct"`, its name) followed by its
members (`member` naming the head, `A.elements`), each an ordinary buffer or scalar: filled,
guarded and compared as any other. Only the launch sees the struct. Offsets follow from the
members' types, so the double-precision build (float members promoted to double) gets its own
layout from its own plan. Pure Python and numpy: the sanitizer's runner packs the same way."""

from __future__ import annotations

import struct
from typing import Any, Sequence

import numpy as np

from ...kernels.c_types import ITEMSIZE
from ..job.struct_layout import member_layout, members_of
from ..records import ArgPlan

_PREFIX = "struct:"
# Scalar dtype -> struct format letter. 16-bit floats travel as their bit patterns.
SCALAR_FORMAT = {"float32": "f", "float64": "d", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q",
                 "int16": "h", "uint16": "H", "int8": "b", "uint8": "B", "bool": "B",
                 "float16": "H", "bfloat16": "H"}


def struct_dtype(size: int, align: int) -> str:
    """How a launch names a struct parameter's type (in place of a scalar's dtype)."""
    return f"{_PREFIX}{size}:{align}"


def is_struct(dtype: str | None) -> bool:
    return dtype is not None and dtype.startswith(_PREFIX)


def struct_extent(dtype: str) -> tuple[int, int]:
    """(size, alignment) of a struct dtype."""
    size, align = dtype[len(_PREFIX):].split(":")
    return int(size), int(align)


def launch_dtypes(args: Sequence[ArgPlan]) -> list[str | None]:
    """How a launch passes each kernel parameter: None for a pointer (a buffer's), a struct's
    dtype for a struct, else the scalar's type. Members are the struct's, not parameters."""
    out: list[str | None] = []
    for i, a in enumerate(args):
        if a.member or a.hidden:  # a struct's member, or memory reached through pointers: no parameter
            continue
        if a.kind == "struct":
            _, size, align = member_layout(members_of(args, i))
            out.append(struct_dtype(size, align))
        elif a.kind == "bytes":  # a value as a captured run passed it: struct:SIZE:ALIGN already
            out.append(a.dtype)
        elif a.kind == "scalar" and a.lanes > 1:  # `float4 c` by value: its lanes' bytes
            out.append(struct_dtype(ITEMSIZE[a.dtype] * a.lanes, a.align or ITEMSIZE[a.dtype]))
        else:
            out.append(None if a.kind == "buffer" else a.dtype)
    return out


class LaunchValues(list):
    """One value per kernel parameter, and `symbols`: the module pointers to set before the
    launch (a redirected `__device__` variable's pointer -> its buffer's address)."""

    symbols: dict[str, int]


def launch_values(args: Sequence[ArgPlan], values: Sequence[Any]) -> list[Any]:
    """One value per kernel parameter from one per plan argument (pointers, scalars): each
    struct's members packed into its bytes; the buffers standing for `__device__` variables
    as `symbols`."""
    out = LaunchValues()
    out.symbols = {a.symbol: int(v) for a, v in zip(args, values) if a.symbol}
    for i, a in enumerate(args):
        if a.member or a.hidden:
            continue
        if a.kind == "scalar" and a.lanes > 1:
            out.append(lanes_bytes(values[i], a))
            continue
        if a.kind != "struct":  # a pointer, a scalar, a captured value's bytes
            out.append(values[i])
            continue
        members = members_of(args, i)
        out.append(pack(members, values[i + 1:i + 1 + len(members)]))
    return out


def pack(members: Sequence[ArgPlan], values: Sequence[Any]) -> bytes:
    offsets, size, _ = member_layout(members)
    data = bytearray(size)  # padding is zeros
    for a, at, value in zip(members, offsets, values):
        raw = int(value or 0).to_bytes(8, "little") if a.kind == "buffer" else lanes_bytes(value, a)
        data[at:at + len(raw)] = raw
    return bytes(data)


def lanes_bytes(value: Any, a: ArgPlan) -> bytes:
    """A scalar's bytes, or each lane's of a vector or array (`float4 c`, `int sizes[4]`)."""
    if a.lanes > 1:
        return b"".join(scalar_bytes(v, a.dtype) for v in value)
    return scalar_bytes(value, a.dtype)


def scalar_bytes(value: Any, dtype: str) -> bytes:
    """A scalar's bytes as the kernel reads them (a 16-bit float rounded as torch rounds it)."""
    if dtype == "float16":
        return np.float32(value).astype(np.float16).tobytes()
    if dtype == "bfloat16":
        return bfloat16_bits(np.float32(value)).tobytes()
    return struct.pack("<" + SCALAR_FORMAT[dtype], float(value) if dtype.startswith("float") else int(value))


def bfloat16_bits(values: Any) -> np.ndarray:
    """The bfloat16 nearest each value (ties to even), as bits: the top 16 bits of its float32,
    rounded as torch rounds (plain truncation would differ from the torch path's bits by one unit
    in the last place); NaN is 0x7FC0, as torch gives."""
    f = np.asarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded).astype(np.uint16)


def param_format(dtypes: Sequence[str | None]) -> str:
    """pycuda's format of a launch's parameters (native alignment, as the kernel's parameter
    buffer is laid out): P for a pointer, a scalar's letter, and a struct as its bytes after the
    padding that aligns it (a format's `Ns` is aligned to one byte)."""
    fmt = ""
    for d in dtypes:
        if is_struct(d):
            size, align = struct_extent(d)  # type: ignore[arg-type]
            at = struct.calcsize("@" + fmt) if fmt else 0
            fmt += "x" * (-at % align) + f"{size}s"
        else:
            fmt += "P" if d is None else SCALAR_FORMAT[d]
    return fmt
