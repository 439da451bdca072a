"""Element types named through the file's own aliases: `typedef float real;`,
`using floatX = __nv_bfloat16;`, `#define DTYPE float`. Training code and samples name their
element types this way; a kernel `f(const real* x)` is a float kernel."""

from __future__ import annotations

import dataclasses
import re

from .ctypes import element_type
from .model import Kernel, Param

_TYPEDEF = re.compile(r"\btypedef\s+([\w\s:]+?)\s+(\w+)\s*;")
_USING = re.compile(r"\busing\s+(\w+)\s*=\s*([\w\s:]+?)\s*;")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([\w \t:]+?)[ \t]*$", re.M)


def type_aliases(text: str) -> dict[str, str]:
    """Alias name -> the element type it stands for, for aliases that end in one fsr knows."""
    raw: dict[str, str] = {}
    for m in _TYPEDEF.finditer(text):
        raw[m.group(2)] = " ".join(m.group(1).split())
    for m in _USING.finditer(text):
        raw[m.group(1)] = " ".join(m.group(2).split())
    for m in _DEFINE.finditer(text):
        raw.setdefault(m.group(1), " ".join(m.group(2).split()))
    out = {}
    for name in raw:
        target, seen = raw[name], 0
        while target in raw and seen < 10:
            target, seen = raw[target], seen + 1
        if element_type(target)[0] is not None:
            out[name] = target
    return out


def with_aliases(kernel: Kernel, aliases: dict[str, str]) -> Kernel:
    """The kernel with parameters of aliased types given their element types."""
    if not aliases or all(p.dtype is not None or p.base_type not in aliases for p in kernel.params):
        return kernel
    params = tuple(_resolved(p, aliases) for p in kernel.params)
    return dataclasses.replace(kernel, params=params)


def _resolved(p: Param, aliases: dict[str, str]) -> Param:
    if p.dtype is not None or p.base_type not in aliases:
        return p
    dtype, lanes = element_type(aliases[p.base_type])
    if p.type_text.count("*") > 1:
        return p
    return dataclasses.replace(p, dtype=dtype, lanes=lanes)
