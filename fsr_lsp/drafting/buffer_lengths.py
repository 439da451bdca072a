"""A buffer's length in a drafted spec, read from the host code: the allocation the launch's
pointer comes from (`cudaMalloc(&d, N * sizeof(float))`, `new float[N]`, a vector, a tensor), in
elements of the kernel parameter's type, and how far into it the pointer starts."""

from __future__ import annotations

import dataclasses
import re

from ..kernels import Param
from ..kernels.structs import substituted
from ..specs import evaluate, evaluate_int
from ..specs.expr import ExprError
from .cexpr import Translator, Unresolved, itemsize_of, resolve_type
from .host import Scope


def largest(lengths: dict[str, tuple[str, str]], sizes: dict[str, int]) -> int:
    """The longest buffer at `sizes` (0 when none can be evaluated)."""
    out = 0
    for length, _ in lengths.values():
        try:
            out = max(out, evaluate_int(length, sizes, "length"))
        except (ExprError, KeyError, ZeroDivisionError, TypeError, ValueError):
            continue
    return out


def buffer_length(p: Param, arg: str, scope: Scope, t: Translator, grid_names: list[str],
                 subst: dict[str, str], starts: dict[str, str]) -> tuple[str, str]:
    """The argument's length in elements of the parameter's type from the pointer on, and where
    it came from; a pointer into its allocation puts the elements before it in `starts`."""
    elem = substituted(p.base_type, subst)
    try:
        size = itemsize_of(resolve_type(elem, scope), scope)
    except Unresolved:
        size = 0
    root, offset, seen = arg.strip(), "", 0
    while seen < 12:
        seen += 1
        root = _strip(root)
        m = re.fullmatch(r"(.+?)\s*\+\s*(.+)", root)
        if m and not m.group(1).strip().isdigit():
            root, offset = m.group(1), f"{offset} + {m.group(2)}" if offset else m.group(2)
            continue
        m = re.fullmatch(r"&\s*(\w+)\s*\[(.+)\]", root)
        if m:
            root, offset = m.group(1), f"{offset} + {m.group(2)}" if offset else m.group(2)
            continue
        m = re.fullmatch(r"(?:thrust::raw_pointer_cast\s*\()?\s*&?\s*(\w+)\s*(?:\.data\s*\(\s*\)|\[\s*0\s*\])?\s*\)?", root) \
            or re.fullmatch(r"(\w+)\s*\.\s*(?:data_ptr|data|mutable_data_ptr)\s*(?:<[^>]*>)?\s*\(\s*\)", root)
        if m and m.group(1) in scope.allocations:
            alloc = scope.allocations[m.group(1)]
            length = _from_allocation(alloc, size, offset, scope, t)
            if offset:
                starts[p.name] = f"-({t.expr(offset)})"
            return length, f"{alloc.via} of `{m.group(1)}`" + (f", {offset.strip()} elements in" if offset else "")
        if m and m.group(1) in scope.aliases:
            root = scope.aliases[m.group(1)]
            continue
        break
    if grid_names:
        guess = " * ".join(grid_names)
        return guess, f"guessed from the grid ({guess}): no allocation of `{arg.strip()}` found"
    raise Unresolved(f"the length of `{arg.strip()}` (passed as {p.name}): no allocation found")


def _from_allocation(alloc, size: int, offset: str, scope: Scope, t: Translator) -> str:
    if alloc.count:
        count = t.expr(alloc.count)
        if alloc.elem and size:
            try:
                own = itemsize_of(resolve_type(alloc.elem, scope), scope)
            except Unresolved:
                own = size
            if own != size:
                count = f"({count}) * {own} / {size}"
    else:
        nbytes = alloc.nbytes.strip()
        for _ in range(8):  # `size_t bytes = N * sizeof(float); cudaMalloc(&p, bytes);`
            if nbytes in scope.values:
                nbytes = scope.values[nbytes].strip()
        alloc = dataclasses.replace(alloc, nbytes=nbytes)
        bytes_text = _drop_sizeof(alloc.nbytes, size, scope)
        if bytes_text is not None:
            count = t.expr(bytes_text)
        else:
            if not size:
                raise Unresolved("the element size of the parameter")
            count = f"({t.expr(alloc.nbytes)}) / {size}"
    count = f"{count} - ({t.expr(offset)})" if offset else count
    if "/" not in count:
        return count  # `512 * 512` says more than 262144
    try:  # `(4) / 4` from `cudaMalloc(&y, sizeof(real))`: a number, as a person would write it
        value = evaluate(count, {})
    except ExprError:
        return count
    return str(int(value)) if float(value).is_integer() else count


def _drop_sizeof(nbytes: str, size: int, scope: Scope) -> str | None:
    """`N * sizeof(float)` (or `sizeof(float) * N`) -> `N`, when the parameter's elements are
    that size."""
    text = nbytes.strip()
    m = re.fullmatch(r"(.+?)\s*\*\s*sizeof\s*\(\s*([^()]+?)\s*\)", text, re.S)
    count, type_text = (m.group(1), m.group(2)) if m else (None, None)
    if m is None:
        m = re.fullmatch(r"sizeof\s*\(\s*([^()]+?)\s*\)\s*\*\s*(.+)", text, re.S)
        count, type_text = (m.group(2), m.group(1)) if m else (None, None)
    if count is None or type_text is None:
        return None
    try:
        return count if itemsize_of(resolve_type(type_text, scope), scope) == size else None
    except Unresolved:
        return None


def _strip(text: str) -> str:
    text = text.strip()
    while True:
        m = re.fullmatch(r"\(\s*[\w:<>\s]+\*+\s*\)\s*(.+)", text, re.S) or \
            re.fullmatch(r"(?:reinterpret_cast|static_cast)\s*<[^>]*>\s*\((.+)\)", text, re.S) or \
            re.fullmatch(r"\((.+)\)", text, re.S)
        if not m:
            return text
        text = m.group(1).strip()
