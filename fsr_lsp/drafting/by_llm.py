"""A spec drafted by a language model, where the launch site says too little (no launch in
reach, sizes that come from a file or the command line, a struct argument). The model sees the
kernel, its launches with the host code around them, and why the launch-site draft failed; its
answer is read back by the spec parser like any draft, and like any draft it is proven on the
GPU before a search uses it."""

from __future__ import annotations

import re

from ..kernels import Kernel
from ..llmclient import ChatClient, ChatError
from ..source import SourceText
from .draft import Draft, read_back
from .host import Launch

CONTEXT_LINES = 25  # host code shown around each launch
MAX_LAUNCHES = 3
MAX_HOST_LINES = 160  # host code shown when there is no launch
_BLOCK = re.compile(r"/\*\s*@fsr\b.*?\*/", re.S)

SYSTEM = """You write @fsr spec blocks for CUDA kernels. A spec tells a test harness how to run a kernel on
random inputs: its sizes, launch configuration and, for every parameter, a value or a buffer.
Answer with exactly one block comment, nothing else:

/* @fsr
bench = { n = 16777216 }                            # sizes used for timing, named freely (n, or M, N, K)
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]  # small sizes checked for correctness, same names as bench
grid  = "cdiv(n, 256)"   # int, expression string, or a list of 1-3 of them
block = 256              # int or list of 1-3 ints
smem  = 0                # dynamic shared memory bytes: int or expression (optional)
template = "float, 256"  # only for template kernels: the template arguments
[args]                   # one entry per kernel parameter, by name
x = "in[n]"              # pointer: in|out|inout [length in elements] optional init:
y = "inout[n] normal()"  #   uniform(lo,hi) | normal() | randint(lo,hi) | zeros() | fill(v)
a = 2.0                  # scalar: number or expression over size names
n = "n"
*/

Rules: expressions use + - * / % << >>, parentheses, min, max, cdiv and size names. A pointer the
kernel only reads is `in`; one it writes every element of without reading is `out`; one it reads and
writes, or writes only in part, is `inout`. Accumulators (atomics, +=) are `inout` with zeros() or
fill(v). Index arrays get randint(0, bound) with bound the length of what they index. Lengths must
cover every element the kernel touches at every size. Keep test sizes small and include one that is
not a multiple of the block size."""


def model_draft(chat: ChatClient, src: SourceText, kernel: Kernel, launches: list[Launch], why: str,
                files: dict[str, SourceText] | None = None) -> Draft:
    """The model's block for `kernel`, read back by the spec parser; never trusted before its proof."""
    prompt = draft_prompt(src, kernel, launches, why, files or {})
    name = chat.config.model
    try:
        answer = chat.ask(SYSTEM, prompt, temperature=0.0)
    except ChatError as e:
        return Draft(kernel.name, None, problems=[f"the model could not draft a spec: {e}"])
    found = _BLOCK.findall(answer)
    if len(found) != 1:
        return Draft(kernel.name, None, problems=[f"the model's answer held {len(found)} @fsr blocks, not one"])
    block = _marked(found[0], f"drafted by the model {name} from the kernel"
                    + (" and its launches" if launches else "") + "; check it, then remove this line")
    errors = read_back(kernel, block + "\n")
    if errors:
        return Draft(kernel.name, None, problems=[f"the model's draft does not parse: {e}" for e in errors])
    return Draft(kernel.name, block + "\n", problems=[f"drafted by the model {name}: {why}"],
                 provenance={"spec": f"drafted by the model {name} (the launch site gave too little: {why})"})


def draft_prompt(src: SourceText, kernel: Kernel, launches: list[Launch], why: str,
                 files: dict[str, SourceText]) -> str:
    d = kernel.definition_span
    parts = [f"Write the @fsr spec of kernel `{kernel.name}`.", "", "The kernel:", "```cuda",
             src.slice(d.start_byte, d.end_byte), "```"]
    mine = [launch for launch in launches if launch.kernel == kernel.name][:MAX_LAUNCHES]
    for launch in mine:
        text = files.get(launch.file, src) if launch.file else src
        lines = text.text.splitlines()
        lo, hi = max(0, launch.line - 1 - CONTEXT_LINES), min(len(lines), launch.line + CONTEXT_LINES // 2)
        parts += ["", f"It is launched at {launch.where}; the host code around it:", "```cuda", *lines[lo:hi], "```"]
    if not mine:
        host = src.text.splitlines()[:MAX_HOST_LINES]
        parts += ["", "No launch of it was found. The file it is in:", "```cuda", *host, "```"]
    parts += ["", f"What the launch site did not say: {why}.",
              "Where a size comes from input (a file, argv), choose a realistic one."]
    return "\n".join(parts)


def _marked(block: str, line: str) -> str:
    """The block with a first line saying who drafted it (the model's own first comment kept)."""
    body = block[block.index("@fsr") + len("@fsr"):]
    return "/* @fsr\n# " + line + body if body.startswith("\n") else "/* @fsr\n# " + line + "\n" + body.lstrip()
