"""Kernels that keep a result in a `__device__` or `__managed__` variable of the file (a
reduction's `atomicAdd(&dResult, x)`, a counter the host reads back): fsr compares buffers and
printed output, not module variables, so a rewrite that skipped such a write would pass every
check. fsr says so by name, where it would otherwise call such a kernel proven or a rewrite
verified."""

from __future__ import annotations

import re

from ..source import SourceText
from .callees import reachable_bodies
from .kernel import Kernel
from .lexical import lex
from .treesitter import nodes_of, parse

_SCOPES = ("translation_unit", "declaration_list")  # the file, a namespace's body
_SPACES = re.compile(r"\b(__device__|__managed__)\b")
_SKIP = re.compile(r"\b(__constant__|const|constexpr)\b")  # read-only: the host's tables, no result


def device_variables(text: str) -> list[str]:
    """Names of the file's writable `__device__`/`__managed__` variables (not `__constant__`,
    not const, not functions)."""
    names = []
    for decl in nodes_of(parse(text.encode()).root_node, "declaration"):
        if decl.parent is None or decl.parent.type not in _SCOPES:
            continue
        head = (decl.text or b"").decode(errors="replace")
        if not _SPACES.search(head) or _SKIP.search(head.split("=", 1)[0]):
            continue
        for declarator in decl.children_by_field_name("declarator"):
            node = declarator
            while node is not None and node.type != "identifier":
                if node.type == "function_declarator":
                    node = None
                    break
                node = node.child_by_field_name("declarator")
            if node is not None and node.text:
                names.append(node.text.decode())
    return names


def _writes(name: str) -> re.Pattern[str]:
    n = re.escape(name)
    index = r"(?:\s*\[(?:[^\[\]]|\[[^\[\]]*\])*\])*"  # hist[x[i] & 255][0]: one level of nesting
    return re.compile(rf"\b{n}\b{index}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"  # dResult = x, hist[i] += 1
                      rf"|\b{n}\b{index}\s*(?:\+\+|--)|(?:\+\+|--)\s*{n}\b"  # count++
                      rf"|&\s*{n}\b"  # atomicAdd(&dResult, x): its address, taken to write through
                      rf"|\batomic\w*\s*\(\s*{n}\b")  # atomicAdd(hist + bin, 1)


def device_variable_write(src: SourceText, kernel: Kernel) -> str | None:
    """The `__device__`/`__managed__` variables the kernel (or a function it calls) writes, as a
    phrase (`dResult`, `count and hist`), or None."""
    names = device_variables(src.text)
    if not names:
        return None
    bodies = [lex(b.encode()).masked.decode(errors="replace") for b in reachable_bodies(src.text, kernel.name)]
    written = [n for n in names if any(_writes(n).search(body) for body in bodies)]
    if not written:
        return None
    return ", ".join(f"`{n}`" for n in written[:-1]) + (" and " if len(written) > 1 else "") + f"`{written[-1]}`"


DEVICE_VARIABLE_WRITER = ("it keeps results in the file's {what} (`__device__`/`__managed__`), which fsr does not "
                          "compare: a rewrite that skipped those writes would pass every check, so no spec can "
                          "verify it (give the kernel a buffer to write them to)")
