"""Every thread adding into one address with an atomic -> one atomic a warp, or a block.

Naive sums, dot products and loss accumulations end with `atomicAdd(out, value)` in every
thread: millions of atomics on one address, serialised in L2. The rewrite sums each warp's
values in registers with shuffles first, and the warp's first lane adds that (32x fewer
atomics); the block form also meets the warps' sums in shared memory and adds once a block.

The recogniser is strict, because a shuffle needs every lane of the warp:
- the atomic is a statement of the kernel's body itself, bare or under an `if` without `else`
  (the guard becomes a select: a lane that would not add contributes zero, and the select
  evaluates the value only where the guard holds, so a guarded read stays guarded);
- nothing before it can leave early: no `return`, `break` or `goto` anywhere in the body, and it
  is the body's only atomic on that pointer;
- the address is the same for every thread: a pointer parameter, `&p[0]` or `p + 0`, nothing
  that depends on the thread;
- the element type is float, double, int or unsigned int, and the block one dimension of a
  multiple of 32 (the block form: up to 1024);
- a guard that picks one thread a block (`threadIdx.x == 0`) already adds once a block: no rewrite.
Summing a warp first adds floats in another order: the result rounds differently, which the
accuracy check against the original judges like any candidate's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ....kernels import Kernel
from ....specs import Spec
from .syntax import dims, indent_of, kernel_body, shuffle_sum, single_statement, walk, warps_sum

_TYPES = {"float32": ("float", "0.0f"), "float64": ("double", "0.0"), "int32": ("int", "0"),
          "uint32": ("unsigned int", "0u")}
_FORBIDDEN = re.compile(r"\b(__shfl\w*|cooperative_groups|asm|fsr_\w+|goto)\b")
_ONE_THREAD = re.compile(r"\b\w+(?:\.x)?\s*==\s*0\b|\b0\s*==\s*\w+")


@dataclass(frozen=True)
class AtomicSum:
    definition: str
    note: str
    pointer: str
    scope: str  # "warp" or "block"


def atomic_sums(kernel: Kernel, spec: Spec, definition: str) -> list[AtomicSum]:
    """The rewrites (a warp's atomic, then a block's), or [] when the kernel has no atomic sum
    into one address by every thread."""
    block = dims(spec.block)
    if len(block) != 1 or not isinstance(block[0], int) or block[0] % 32 or _FORBIDDEN.search(definition):
        return []
    threads = block[0]
    data = definition.encode()
    body = kernel_body(data)
    if body is None or any(n.type in ("return_statement", "break_statement") and _outside_loops(n, body)
                           for n in walk(body)):
        return []

    def text(node: Node) -> str:
        return " ".join(data[node.start_byte:node.end_byte].decode().split())

    for st in (n for n in body.named_children if n.type != "comment"):
        found = _atomic(st, text)
        if found is None:
            continue
        guard, pointer, address, value = found
        kind = _element(kernel, pointer)
        if kind is None or len(re.findall(rf"\batomic\w*\s*\(\s*&?\s*{re.escape(pointer)}\b", definition)) != 1:
            return []
        if guard is not None and _ONE_THREAD.search(guard):
            return []
        head, tail = data[:st.start_byte].decode(), data[st.end_byte:].decode()
        indent = indent_of(data, st)
        out = [AtomicSum(head + _warp(kind, guard, address, value, indent) + tail,
                         f"one atomicAdd a warp into `{pointer}` (was one a thread): each warp's values summed by "
                         "shuffles first", pointer, "warp")]
        if threads <= 1024:
            out.append(AtomicSum(head + _block(kind, guard, address, value, threads, indent) + tail,
                                 f"one atomicAdd a block into `{pointer}` (was one a thread): warp shuffles, then the "
                                 "warps' sums in shared memory", pointer, "block"))
        return out
    return []


def _outside_loops(node: Node, body: Node) -> bool:
    """A `return` anywhere leaves early; a `break` only when it is not inside a loop or switch
    of the body (that one ends its loop, not the thread)."""
    if node.type == "return_statement":
        return True
    parent = node.parent
    while parent is not None and parent.id != body.id:
        if parent.type in ("for_statement", "while_statement", "do_statement", "switch_statement"):
            return False
        parent = parent.parent
    return True


def _atomic(statement: Node, text) -> tuple[str | None, str, str, str] | None:
    """(guard, pointer, address, value) of `atomicAdd(address, value);` or
    `if (guard) atomicAdd(address, value);`, the address the same for every thread."""
    guard = None
    if statement.type == "if_statement":
        if statement.child_by_field_name("alternative") is not None:
            return None
        condition = statement.child_by_field_name("condition")
        inner = single_statement(statement.child_by_field_name("consequence"))
        if condition is None or inner is None:
            return None
        guard = text(condition)
        guard = guard[1:-1].strip() if guard.startswith("(") and guard.endswith(")") else guard
        statement = inner
    m = re.fullmatch(r"atomicAdd\s*\((.+?),(.+)\)\s*;", text(statement))
    if statement.type != "expression_statement" or m is None:
        return None
    address, value = m.group(1).strip(), m.group(2).strip()
    pointer = re.fullmatch(r"(?:&\s*(\w+)\s*\[\s*0\s*\]|(\w+)\s*(?:\+\s*0)?)", address)
    if pointer is None or value.count("(") != value.count(")"):
        return None
    return guard, pointer.group(1) or pointer.group(2), address, value


def _element(kernel: Kernel, pointer: str) -> str | None:
    param = next((p for p in kernel.params if p.name == pointer and p.is_pointer), None)
    if param is None or (param.lanes or 1) != 1 or param.dtype not in _TYPES:
        return None
    return param.dtype


def _contribution(kind: str, guard: str | None, value: str) -> str:
    ctype, zero = _TYPES[kind]
    return f"({ctype})({value})" if guard is None else f"({guard}) ? ({ctype})({value}) : {zero}"


def _warp(kind: str, guard: str | None, address: str, value: str, i: str) -> str:
    ctype, _ = _TYPES[kind]
    return (f"{{  // fsr: one atomicAdd a warp (was one a thread): the warp's values summed by shuffles first\n"
            f"{i}    {ctype} fsr_sum = {_contribution(kind, guard, value)};\n"
            + shuffle_sum("fsr_sum", i + "    ") +
            f"{i}    if ((threadIdx.x & 31) == 0) atomicAdd({address}, fsr_sum);\n"
            f"{i}}}")


def _block(kind: str, guard: str | None, address: str, value: str, threads: int, i: str) -> str:
    ctype, zero = _TYPES[kind]
    warps = threads // 32
    return (f"{{  // fsr: one atomicAdd a block (was one a thread): warp shuffles, then the warps' sums\n"
            f"{i}    __shared__ {ctype} fsr_warp_sums[{warps}];\n"
            f"{i}    {ctype} fsr_sum = {_contribution(kind, guard, value)};\n"
            + shuffle_sum("fsr_sum", i + "    ")
            + warps_sum("fsr_warp_sums", zero, warps, f"atomicAdd({address}, fsr_sum);", i + "    ") +
            f"{i}}}")
