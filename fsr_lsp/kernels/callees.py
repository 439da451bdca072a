"""The text of a kernel and of every function it calls, directly or through others, read from
the file's syntax tree by name: what a property of the kernel's code (a grid sync, a write to a
`__device__` variable) must be looked for in."""

from __future__ import annotations

import re

from .lexical import lex
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


# `extern __shared__ [__align__(...)] TYPE NAME[]`: the array every launch sizes with its dynamic
# shared memory. The one reading of it: which kernels need some (here) and of what element
# type an inferred launch sizes it (specs/infer.py).
EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\b(?P<type>[^;\[\]]*?)\b(?P<name>\w+)\s*\[\s*\]")
_ALIGN = re.compile(r"__align__\s*\((?:[^()]|\([^()]*\))*\)")
_QUALIFIERS = frozenset({"volatile", "const"})


def extern_shared_type(match: re.Match[str]) -> str:
    """An EXTERN_SHARED match's element type as written, without `__align__(...)` and qualifiers."""
    return " ".join(w for w in _ALIGN.sub(" ", match.group("type")).split() if w not in _QUALIFIERS)


def uses_dynamic_shared(text: str, kernel: str) -> bool:
    """Whether the kernel (or a function it calls) indexes an `extern __shared__` array, its own
    or one declared at file scope (not another kernel's, not one in a comment): launched with no
    dynamic shared memory, it would fault."""
    bodies = [lex(b.encode()).masked.decode(errors="replace") for b in reachable_bodies(text, kernel)]
    for body in bodies:
        if any(re.search(rf"\b{re.escape(m.group('name'))}\s*\[", body[m.end():]) for m in EXTERN_SHARED.finditer(body)):
            return True
    names = {m.group("name") for d in nodes_of(parse(text.encode()).root_node, "declaration")
             if d.parent is not None and d.parent.type == "translation_unit"
             for m in EXTERN_SHARED.finditer((d.text or b"").decode(errors="replace"))}
    return any(re.search(rf"\b{re.escape(n)}\s*\[", b) and not _declares(b, n) for n in names for b in bodies)


def _declares(body: str, name: str) -> bool:
    """Whether the function declares a (shared or local) array of that name itself."""
    return re.search(rf"(?:__shared__|\b(?:float|double|int|unsigned|char|short|long|half|T)\b)[^;{{}}()=]*"
                     rf"\b{re.escape(name)}\s*\[", body) is not None
