"""The text of a kernel and of every function it calls, directly or through others, read from
the file's syntax tree by name: what a property of the kernel's code (a grid sync, a write to a
`__device__` variable) must be looked for in."""

from __future__ import annotations

import re

from .treesitter import nodes_of, parse

_IDENT = re.compile(r"[A-Za-z_]\w*")


def reachable_bodies(text: str, kernel: str) -> list[str]:
    """The definitions of `kernel` and of the functions it reaches by calls (every overload of a
    name: which one is called is not resolved), each once."""
    bodies: dict[str, list[str]] = {}
    for fn in nodes_of(parse(text.encode()).root_node, "function_definition"):
        name = fn.child_by_field_name("declarator")
        while name is not None and name.type not in ("identifier", "field_identifier", "qualified_identifier"):
            name = name.child_by_field_name("declarator")
        if name is not None and name.text:
            short = name.text.decode().rsplit("::", 1)[-1]
            bodies.setdefault(short, []).append((fn.text or b"").decode(errors="replace"))
    seen, todo, out = set(), [kernel], []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for body in bodies.get(name, []):
            out.append(body)
            todo += [w for w in set(_IDENT.findall(body)) if w in bodies]
    return out


_EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\b[^;]*?(\w+)\s*\[\s*\]")


def uses_dynamic_shared(text: str, kernel: str) -> bool:
    """Whether the kernel (or a function it calls) indexes an `extern __shared__` array, its own
    or the file's: launched with no dynamic shared memory, it would fault."""
    bodies = reachable_bodies(text, kernel)
    if any(_EXTERN_SHARED.search(b) for b in bodies):
        return True
    names = {m.group(1) for m in _EXTERN_SHARED.finditer(text)}
    return any(re.search(rf"\b{re.escape(n)}\s*\[", b) for n in names for b in bodies)
