"""What every structural transform reads first: the kernel definition's body, parsed."""

from __future__ import annotations

import re

from tree_sitter import Node

from ....kernels import Kernel
from ....kernels.brackets import closing
from ....kernels.treesitter import parse
from ....specs import Spec
from ....specs.model import ScalarArg


def kernel_body(data: bytes) -> Node | None:
    """The body of the one function defined in `data`; None when it does not parse cleanly."""
    root = parse(data).root_node
    fn = next((n for n in root.named_children if n.type == "function_definition"), None)
    body = fn.child_by_field_name("body") if fn is not None else None
    return None if body is None or root.has_error else body


def walk(node: Node):
    """`node` and everything under it, in order."""
    yield node
    for child in node.children:
        yield from walk(child)


def dims(values) -> tuple:
    """A launch dimension without its trailing ones: `[256, 1]` is a 1-D block of 256."""
    out = list(values)
    while len(out) > 1 and str(out[-1]).strip() == "1":
        out.pop()
    return tuple(out)


def single_statement(node: Node) -> Node | None:
    """`{ x += y; }` or `x += y;`: the one statement (comments aside); None for a block of more."""
    if node.type != "compound_statement":
        return node
    kept = [n for n in node.named_children if n.type != "comment"]
    return kept[0] if len(kept) == 1 else None


_BLOCK_BASE = {"blockIdx.x*blockDim.x", "blockDim.x*blockIdx.x"}


def is_global_index(text: str) -> bool:
    """`blockIdx.x * blockDim.x + threadIdx.x` in any of the orders people write it (the terms
    and the product's factors swapped, parenthesised)."""
    t = "".join(text.split())
    while t.startswith("(") and t.endswith(")") and t.count("(") == 1:
        t = t[1:-1]
    terms = t.split("+")
    if len(terms) != 2:
        return False
    terms = [x[1:-1] if x.startswith("(") and x.endswith(")") else x for x in terms]
    return "threadIdx.x" in terms and (set(terms) - {"threadIdx.x"}) <= _BLOCK_BASE and len(set(terms)) == 2


def indent_of(data: bytes, node: Node) -> str:
    """The white space before `node` on its line ('' when code stands there too)."""
    line_start = data.rfind(b"\n", 0, node.start_byte) + 1
    prefix = data[line_start:node.start_byte].decode()
    return prefix if not prefix.strip() else ""


def shuffle_sum(var: str, indent: str, note: str = "") -> str:
    """Lines that add `var` over a warp's 32 lanes into lane 0, by shuffles down."""
    return (f"{indent}for (int fsr_offset = 16; fsr_offset > 0; fsr_offset >>= 1)\n"
            f"{indent}    {var} += __shfl_down_sync(0xffffffffu, {var}, fsr_offset);{'  // ' + note if note else ''}\n")


def warps_sum(array: str, zero: str, warps: int, finish: str, indent: str) -> str:
    """Lines that meet each warp's `fsr_sum` (in its lane 0) in `array` and add the `warps` sums
    in the first warp, whose thread 0 then runs `finish` with the block's sum in `fsr_sum`."""
    i = indent
    return (f"{i}if ((threadIdx.x & 31) == 0) {array}[threadIdx.x >> 5] = fsr_sum;\n"
            f"{i}__syncthreads();\n"
            f"{i}if (threadIdx.x < 32) {{  // the first warp adds the {warps} warps' sums\n"
            f"{i}    fsr_sum = threadIdx.x < {warps} ? {array}[threadIdx.x] : {zero};\n"
            + shuffle_sum("fsr_sum", i + "    ") +
            f"{i}    if (threadIdx.x == 0) {finish}\n"
            f"{i}}}\n")


def size_argument(kernel: Kernel, spec: Spec, name: str) -> str | None:
    """What the spec passes the kernel's scalar parameter `name` (a size expression in the
    spec's names, `N` or `rows * 2`), or None for no such parameter or no scalar."""
    index = next((i for i, p in enumerate(kernel.params) if p.name == name), None)
    if index is None or index >= len(spec.args) or kernel.params[index].is_pointer:
        return None
    arg = spec.args[index]
    return str(arg.value) if isinstance(arg, ScalarArg) else None


def threads_within_launch_bounds(kernel: Kernel, preferred: int) -> int | None:
    """`preferred` threads a block, or fewer where the kernel's `__launch_bounds__` caps them; None
    where the cap is no whole number of warps (a rewrite that shares work by warps cannot fit it)."""
    bound = re.match(r"\s*(\d+)", kernel.launch_bounds or "")
    if bound is None or int(bound.group(1)) >= preferred:
        return preferred
    cap = int(bound.group(1))
    return cap if cap >= 32 and cap % 32 == 0 else None


def add_restrict(text: str, kernel: Kernel, const_names: frozenset[str] = frozenset()) -> str:
    """`__restrict__` on every pointer parameter; `const` too on those named (read-only ones)."""
    open_ = text.find("(", text.find(kernel.name))
    close = closing(text, open_, "(", ")")
    if open_ < 0 or close < 0:
        return text
    params = []
    for p in kernel.params:
        decl = p.text
        if p.is_pointer and "restrict" not in decl:
            star = decl.rfind("*")
            decl = decl[: star + 1] + " __restrict__ " + decl[star + 1:].lstrip()
        if p.is_pointer and p.name in const_names and not re.search(r"\bconst\b", decl[: decl.find("*")]):
            decl = "const " + decl
        params.append(decl)
    return text[: open_ + 1] + ", ".join(params) + text[close:]


def add_launch_bounds(text: str, name: str, threads: int, min_blocks: int | None = None) -> str:
    bounds = f"__launch_bounds__({threads}{f', {min_blocks}' if min_blocks and min_blocks > 1 else ''})"
    existing = re.search(r"__launch_bounds__\s*\([^)]*\)", text)
    if existing:
        return text[: existing.start()] + bounds + text[existing.end():]
    at = re.search(rf"\b{re.escape(name)}\s*\(", text)
    return text if at is None else text[: at.start()] + bounds + " " + text[at.start():]
