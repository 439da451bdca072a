"""A pointer into another parameter's buffer (`end = "end(begin)"`, `out = "same(x)"`), read
and checked: the buffer it names must be another parameter's."""

from __future__ import annotations

import re
from typing import Any

from .model import Arg, AtArg, BufferArg

_AT = re.compile(r"^\s*(?P<at>end|same)\(\s*(?P<of>[A-Za-z_]\w*)\s*\)\s*$")


def at_arg(name: str, value: Any) -> AtArg | None:
    """The parameter's `end(X)` or `same(X)`, or None where its value is something else."""
    m = _AT.match(value) if isinstance(value, str) else None
    return AtArg(name, m.group("of"), "end" if m.group("at") == "end" else "start") if m else None


def spelled(a: AtArg) -> str:
    return f"{'end' if a.at == 'end' else 'same'}({a.of})"


def ats_ok(ctx: Any, args: list[Arg], kernel: str) -> bool:
    """Each `end(X)`/`same(X)` names a buffer parameter other than itself; `ctx`: the spec
    parser's context (its `add` places a problem on the parameter's line)."""
    buffers = {a.name for a in args if isinstance(a, BufferArg)}
    ok = True
    for a in args:
        if isinstance(a, AtArg) and a.of not in buffers:
            ctx.add(f'{a.name} = "{spelled(a)}": {a.of} is no buffer parameter of {kernel} '
                    f"(buffers: {', '.join(sorted(buffers)) or 'none'})", a.name, "args", code="spec-bad-arg")
            ok = False
    return ok
