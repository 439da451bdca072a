"""A shared-memory tree that sums a block -> warp shuffles.

The textbook block reduction stores one value a thread in a shared array, then halves the
active threads log2(block) times, each step a pass through shared memory and a barrier for the
whole block; the interleaved form (`tid % (2*s) == 0`) also leaves most lanes of every warp
idle. The rewrite sums the array with shuffles instead: each warp adds its 32 values in
registers, the warps' sums meet in shared memory once, and the first warp adds those; the block's
sum lands in element 0 of the array, where the kernel's own code after the tree reads it.

The recogniser is strict: a `__shared__` array of float, double or int; a loop, right after a
`__syncthreads()`, that doubles `s` from 1 below the block size or halves it from half the block
size to 1, whose body is one guarded `a[..] += a[..];` and a `__syncthreads()`; and after it,
the array read at element 0 only. The launch's block must be one dimension, a power of two from
64 to 1024. What it writes is verified like any candidate: a tree that summed something else
would be caught there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ....kernels import Kernel
from ....specs import Spec
from .syntax import dims, indent_of, kernel_body, shuffle_sum, single_statement, walk, warps_sum

_TYPES = {"float": "0.0f", "double": "0.0", "int": "0", "unsigned int": "0u", "unsigned": "0u"}
_FORBIDDEN = re.compile(r"\b(__shfl\w*|cooperative_groups|asm|fsr_\w+)\b")


@dataclass(frozen=True)
class BlockSum:
    definition: str
    note: str
    array: str


def block_sum(kernel: Kernel, spec: Spec, definition: str) -> BlockSum | None:
    """The rewrite, or None when the kernel has no shared-memory tree summing its block."""
    block = dims(spec.block)  # `dim3 block(256, 1)` is one dimension
    if len(block) != 1 or not isinstance(block[0], int):
        return None
    threads = block[0]
    if threads < 64 or threads > 1024 or threads & (threads - 1) or _FORBIDDEN.search(definition):
        return None
    data = definition.encode()
    body = kernel_body(data)
    if body is None:
        return None

    def text(node: Node) -> str:
        return " ".join(data[node.start_byte:node.end_byte].decode().split())

    arrays = _shared_arrays(body, text, _aliases(kernel))
    statements = [n for n in body.named_children if n.type != "comment"]
    for i, st in enumerate(statements):
        if st.type != "for_statement" or i == 0 or text(statements[i - 1]) != "__syncthreads();":
            continue
        array = _tree(st, text, arrays, threads)
        if array is None:
            continue
        if not _only_element_zero_after(statements[i + 1:], array, text):
            return None
        kind = arrays[array]
        snippet = _shuffles(array, kind, threads, indent_of(data, st))
        out = data[:st.start_byte].decode() + snippet + data[st.end_byte:].decode()
        note = (f"block sum by warp shuffles: the shared-memory tree over `{array}` ({threads.bit_length() - 1} "
                f"barriers, most lanes idle) becomes shuffles within each warp and one pass over the warps' sums")
        return BlockSum(out, note, array)
    return None


def _aliases(kernel: Kernel) -> dict[str, str]:
    """`real` -> `float` where a parameter of that type is known as float32 (`typedef float
    real;` in the file): a shared array of `real` is one of float."""
    spelled = {"float32": "float", "float64": "double", "int32": "int", "uint32": "unsigned int"}
    return {p.base_type: spelled[p.dtype] for p in kernel.params
            if p.dtype in spelled and (p.lanes or 1) == 1 and p.base_type not in _TYPES}


def _shared_arrays(body: Node, text, aliases: dict[str, str]) -> dict[str, str]:
    """`__shared__ float sdata[256];` and `extern __shared__ float sdata[];`: name -> element type."""
    out = {}
    for node in walk(body):
        if node.type != "declaration" or "__shared__" not in text(node):
            continue
        m = re.fullmatch(r"(?:extern\s+)?__shared__\s+(?:volatile\s+)?([\w ]+?)\s+(\w+)\s*\[[^\]]*\]\s*;", text(node))
        kind = aliases.get(m.group(1), m.group(1)) if m else None
        if m and kind in _TYPES:
            out[m.group(2)] = kind
    return out


def _tree(loop: Node, text, arrays: dict[str, str], threads: int) -> str | None:
    """The array the loop sums into its element 0, or None when it is no such tree."""
    init, cond, update = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
    inner = loop.child_by_field_name("body")
    if init is None or cond is None or update is None or inner is None:
        return None
    m = re.fullmatch(r"(?:unsigned int|unsigned|int)\s+(\w+)\s*=\s*(.+?)\s*;?", text(init))
    if m is None:
        return None
    s, start = m.group(1), m.group(2)
    doubling = start == "1" and re.fullmatch(rf"{s}\s*<\s*(blockDim\.x|{threads})", text(cond)) and \
        text(update) in (f"{s} *= 2", f"{s} <<= 1", f"{s} = {s} * 2", f"{s}*=2", f"{s}<<=1")
    halving = start in ("blockDim.x / 2", "blockDim.x >> 1", "blockDim.x/2", str(threads // 2)) and \
        text(cond) in (f"{s} > 0", f"{s}>0", f"{s} >= 1") and \
        text(update) in (f"{s} >>= 1", f"{s} /= 2", f"{s} = {s} / 2", f"{s}>>=1", f"{s}/=2")
    if not (doubling or halving):
        return None
    steps = [n for n in inner.named_children if n.type != "comment"] if inner.type == "compound_statement" else [inner]
    if len(steps) != 2 or text(steps[1]) != "__syncthreads();" or steps[0].type != "if_statement":
        return None
    guarded = steps[0].child_by_field_name("consequence")
    if guarded is None or steps[0].child_by_field_name("alternative") is not None:
        return None
    guarded = single_statement(guarded)
    if guarded is None:
        return None
    m = re.fullmatch(r"(\w+)\s*\[[^\]]+\]\s*\+=\s*(\w+)\s*\[[^\]]+\]\s*;", text(guarded))
    if m is None or m.group(1) != m.group(2) or m.group(1) not in arrays:
        return None
    return m.group(1)


def _only_element_zero_after(statements: list[Node], array: str, text) -> bool:
    """After the tree only `array[0]` holds the sum: no other element may be read."""
    after = " ".join(text(st) for st in statements)
    uses = re.findall(rf"\b{re.escape(array)}\b\s*(\[[^\]]*\])?", after)
    return all(index.replace(" ", "") == "[0]" for index in uses)


def _shuffles(array: str, kind: str, threads: int, indent: str) -> str:
    zero, warps = _TYPES[kind], threads // 32
    i = indent
    return (f"{{  // fsr: the block's sum by warp shuffles, into {array}[0] (was a shared-memory tree)\n"
            f"{i}    {kind} fsr_sum = {array}[threadIdx.x];\n"
            + shuffle_sum("fsr_sum", i + "    ", "each warp's 32 values") +
            f"{i}    __syncthreads();  // every thread has read its value: the array can take the warps' sums\n"
            + warps_sum(array, zero, warps, f"{array}[0] = fsr_sum;", i + "    ") +
            f"{i}    __syncthreads();\n"
            f"{i}}}")
