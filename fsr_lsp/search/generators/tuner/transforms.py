"""Source rewrites of one kernel definition, each well-understood and independent of the others.

Each takes the definition's text (signature and body, no spec comment) and returns the new
text, or None where its precondition does not hold; verification judges the result anyway.
"""

from __future__ import annotations

import re

from ....kernels import Kernel
from ....kernels.brackets import closing

_GLOBAL_INDEX = re.compile(
    r"(?:const\s+)?(?:int|unsigned(?:\s+int)?|long\s+long|size_t)\s+(\w+)\s*=\s*"
    r"(?:blockIdx\.x\s*\*\s*blockDim\.x\s*\+\s*threadIdx\.x|blockDim\.x\s*\*\s*blockIdx\.x\s*\+\s*threadIdx\.x|"
    r"threadIdx\.x\s*\+\s*blockIdx\.x\s*\*\s*blockDim\.x)\s*;")
_FOR = re.compile(r"^([ \t]*)for\s*\(", re.M)
_PRAGMA_LINE = re.compile(r"#\s*pragma\s+unroll\b[^\n]*\n[ \t]*$")
_BLOCK_DIM = re.compile(r"\bblockDim\s*\.\s*([xyz])\b")


def has_loops(body: str) -> bool:
    """A `for` at the start of a line that no `#pragma unroll` already governs."""
    return any(not _PRAGMA_LINE.search(body[: m.start()]) for m in _FOR.finditer(body))


def unroll_loops(text: str, factor: int) -> str:
    """`#pragma unroll F` before each loop that has no unroll pragma yet (the body only)."""
    start = text.find("{")

    def pragma(m: re.Match) -> str:
        if _PRAGMA_LINE.search(m.string[: m.start()]):
            return m.group(0)
        return f"{m.group(1)}#pragma unroll {factor}\n{m.group(1)}for ("

    return text[:start] + _FOR.sub(pragma, text[start:])


def uses_block_dim(body: str) -> bool:
    return _BLOCK_DIM.search(body) is not None


def static_block(text: str, block: tuple[int, ...]) -> str:
    """`blockDim.x` (y, z) in the body as the launch's own numbers, which the compiler can fold.
    A launch with another block (elsewhere in the user's code) traps instead of computing
    garbage: the rewrite holds for the spec's block only."""
    dims = dict(zip("xyz", tuple(block) + (1, 1)))
    start = text.find("{")
    guard = " || ".join(f"blockDim.{d} != {dims[d]}" for d in "xyz")
    body = _BLOCK_DIM.sub(lambda m: str(dims[m.group(1)]), text[start + 1:])
    return text[:start + 1] + f"\n    if ({guard}) __trap();  // fsr: written for this block size" + body


def grid_stride_site(body: str) -> tuple[re.Match, re.Match] | None:
    """`int i = blockIdx.x * blockDim.x + threadIdx.x;` directly followed by `if (i < n) ...`,
    whose guarded statement neither returns nor synchronises (both change meaning in a loop)."""
    decls = list(_GLOBAL_INDEX.finditer(body))
    if len(decls) != 1:
        return None
    decl = decls[0]
    guard = re.compile(rf"\s*if\s*\(\s*{re.escape(decl.group(1))}\s*<\s*([^()]+|[^()]*\([^()]*\)[^()]*)\)").match(
        body, decl.end())
    if guard is None:
        return None
    rest = body[guard.end():]
    statement = rest[: _statement_end(rest)]
    if re.search(r"\breturn\b|__syncthreads|\bbreak\b|\bcontinue\b", statement):
        return None
    if re.search(rf"\b{re.escape(decl.group(1))}\b", body[guard.end() + len(statement):]):
        return None  # the index is used after the guarded statement
    return decl, guard


def to_grid_stride(text: str) -> str | None:
    body_start = text.find("{")
    body = text[body_start:]
    site = grid_stride_site(body)
    if site is None:
        return None
    decl, guard = site
    var = decl.group(1)
    type_ = decl.group(0)[: decl.start(1) - decl.start(0)].strip()
    loop = (f"for ({type_} {var} = blockIdx.x * blockDim.x + threadIdx.x; {var} < {guard.group(1).strip()}; "
            f"{var} += blockDim.x * gridDim.x)")
    return text[:body_start] + body[: decl.start()] + loop + body[guard.end():]


def _statement_end(text: str) -> int:
    """Length of the statement at the start of `text`: a braced block or up to `;`."""
    stripped = len(text) - len(text.lstrip())
    if text[stripped:stripped + 1] == "{":
        close = closing(text, stripped, "{", "}")
        return close + 1 if close >= 0 else len(text)
    semi = text.find(";")
    return semi + 1 if semi >= 0 else len(text)


PRIVATE_MAX_ELEMENTS = 8192  # 32 KiB of 4-byte counters: leaves room for two blocks per SM
_PRIVATE_TYPES = ("int", "unsigned int", "unsigned", "float", "unsigned long long", "long long", "double")


def privatizable(body: str, kernel: Kernel, lengths: dict[str, int]) -> tuple[str, str, int] | None:
    """(buffer, element type, length) of a small buffer the kernel only ever `atomicAdd`s into:
    each block can add into a copy in shared memory and add that copy into the buffer once
    (the classic privatised histogram). Not where the kernel returns early or synchronises,
    since the copy is zeroed and flushed around the whole body between two barriers."""
    if re.search(r"\breturn\b|__syncthreads|\bgoto\b", body):
        return None
    for p in kernel.params:
        n = lengths.get(p.name)
        if not p.is_pointer or p.base_type not in _PRIVATE_TYPES or not n or n > PRIVATE_MAX_ELEMENTS:
            continue
        uses = len(re.findall(rf"\b{re.escape(p.name)}\b", body))
        adds = len(re.findall(rf"\batomicAdd\s*\(\s*(?:&\s*{re.escape(p.name)}\s*\[|{re.escape(p.name)}\s*[+,)])", body))
        if uses and uses == adds:
            return p.name, p.base_type, n
    return None


def privatize_atomics(text: str, name: str, element: str, length: int) -> str:
    """The body's atomicAdds into `name` go to a per-block copy in shared memory, zeroed
    first and added into `name` at the end."""
    start = text.find("{")
    end = text.rfind("}")
    body = text[start + 1:end]
    private = f"fsr_private_{name}"
    body = re.sub(rf"(\batomicAdd\s*\(\s*&\s*){re.escape(name)}(\s*\[)", rf"\g<1>{private}\g<2>", body)
    body = re.sub(rf"(\batomicAdd\s*\(\s*){re.escape(name)}(\s*[+,)])", rf"\g<1>{private}\g<2>", body)
    thread = "threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)"
    threads = "blockDim.x * blockDim.y * blockDim.z"
    head = (f"\n    __shared__ {element} {private}[{length}];\n"
            f"    for (int fsr_j = {thread}; fsr_j < {length}; fsr_j += {threads}) {private}[fsr_j] = 0;\n"
            f"    __syncthreads();\n    {{")
    tail = (f"    }}\n    __syncthreads();\n"
            f"    for (int fsr_j = {thread}; fsr_j < {length}; fsr_j += {threads})\n"
            f"        if ({private}[fsr_j] != 0) atomicAdd(&{name}[fsr_j], {private}[fsr_j]);\n")
    return text[:start + 1] + head + body + tail + text[end:]
