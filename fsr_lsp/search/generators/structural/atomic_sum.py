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
Where the GPU is known and the body is just `i = <global index>; if (i < n) atomicAdd(p, v);`, a
third rewrite also strides each thread over the elements (one wave of resident blocks, each
thread summing its elements in a register first), then sums the block and adds once a block:
a block per 256 elements still sends tens of thousands of atomics to one address.
Summing a warp first adds floats in another order: the result rounds differently, which the
accuracy check against the original judges like any candidate's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ....evaluator.records import GpuInfo
from ....kernels import Kernel
from ....specs import Spec
from .syntax import dims, indent_of, is_global_index, kernel_body, shuffle_sum, single_statement, walk, warps_sum

_TYPES = {"float32": ("float", "0.0f"), "float64": ("double", "0.0"), "int32": ("int", "0"),
          "uint32": ("unsigned int", "0u")}
_FORBIDDEN = re.compile(r"\b(__shfl\w*|cooperative_groups|asm|fsr_\w+|goto)\b")
_ONE_THREAD = re.compile(r"\b\w+(?:\.x)?\s*==\s*0\b|\b0\s*==\s*\w+")


@dataclass(frozen=True)
class AtomicSum:
    definition: str
    note: str
    pointer: str
    scope: str  # "warp", "block" or "grid" (a grid-stride loop, then the block's)
    launch: str = ""  # an @fsr block with the new launch, when it changes


def atomic_sums(kernel: Kernel, spec: Spec, definition: str, gpu: GpuInfo | None = None) -> list[AtomicSum]:
    """The rewrites (a warp's atomic, then a block's, then, where the GPU is known, a block's
    over a grid-stride loop), or [] when the kernel has no atomic sum into one address by every
    thread."""
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
            strided = _grid_stride(body, st, text, data, spec, _Add(kind, guard, address, value), threads, gpu)
            if strided is not None:
                out.append(strided)
        return out
    return []


_THREAD = r"\b(threadIdx|blockIdx|blockDim|gridDim|warpSize)\b"  # what a grid-stride loop changes the meaning of
_DECLARED = re.compile(r"((?:const\s+)?(?:unsigned\s+|signed\s+)?(?:long\s+long|long|int|size_t|unsigned|"
                       r"int64_t|uint64_t|int32_t|uint32_t)(?:\s+int)?)\s+(\w+)\s*=\s*(.+);")


@dataclass(frozen=True)
class _Add:
    """The kernel's `if (guard) atomicAdd(address, value);`, its value of element type `kind`."""

    kind: str
    guard: str | None
    address: str
    value: str


def _grid_stride(body: Node, st: Node, text, data: bytes, spec: Spec, add: _Add, threads: int,
                 gpu: GpuInfo | None) -> AtomicSum | None:
    """The block form over a grid-stride loop, for a body of exactly `T i = <global index>;`
    then `if (i < bound) atomicAdd(p, v);`: the grid capped at one wave of resident blocks,
    each thread adding its elements (`v` at each `i`) in a register before the block's sum."""
    kind, guard, address, value = add.kind, add.guard, add.address, add.value
    statements = [n for n in body.named_children if n.type != "comment"]
    if gpu is None or not gpu.sm_count or guard is None or len(dims(spec.grid)) != 1:
        return None
    if len(statements) != 2 or statements[1].id != st.id or statements[0].type != "declaration":
        return None
    declared = _DECLARED.fullmatch(text(statements[0]))
    if declared is None or not is_global_index(declared.group(3)):
        return None
    index_type, var = declared.group(1), declared.group(2)
    bounded = re.fullmatch(rf"{re.escape(var)}\s*<\s*([\w\s.*+/()-]+)", guard)  # arithmetic only: no &&, ||, ?:
    if bounded is None or re.search(rf"\b{re.escape(var)}\b|\+\+|--|{_THREAD}", bounded.group(1)) or \
            re.search(_THREAD, value):
        return None  # a bound that moves with the index or the thread, or a value that depends on the launch
    ctype, zero = _TYPES[kind]
    resident = max(1, min(32, (gpu.max_threads_per_sm or 2048) // threads))
    blocks = gpu.sm_count * resident
    grid = spec.grid[0] if isinstance(spec.grid, (list, tuple)) else spec.grid
    indent = indent_of(data, statements[0])
    i = indent
    definition = (data[:statements[0].start_byte].decode()
                  + f"{{  // fsr: each thread sums its elements over a grid-stride loop, then one atomicAdd a block\n"
                  f"{i}    __shared__ {ctype} fsr_warp_sums[{threads // 32}];\n"
                  f"{i}    {ctype} fsr_sum = {zero};\n"
                  f"{i}    for (long long fsr_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                  f"fsr_i < (long long)({bounded.group(1)}); fsr_i += (long long)blockDim.x * gridDim.x) {{\n"
                  f"{i}        {index_type} {var} = ({index_type})fsr_i;\n"
                  f"{i}        fsr_sum += ({ctype})({value});\n"
                  f"{i}    }}\n"
                  + shuffle_sum("fsr_sum", i + "    ")
                  + warps_sum("fsr_warp_sums", zero, threads // 32, f"atomicAdd({address}, fsr_sum);", i + "    ")
                  + f"{i}}}" + data[st.end_byte:].decode())
    launch = f'/* @fsr\ngrid = "min({grid}, {blocks})"\nblock = {threads}\n*/\n'
    note = (f"one atomicAdd a block into `{address}` over a grid-stride loop: at most {blocks} blocks (one wave), "
            "each thread summing its elements in a register, then warp shuffles and the warps' sums")
    return AtomicSum(definition, note, address, "grid", launch)


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
