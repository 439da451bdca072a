"""A pointer just past another parameter's buffer (`end = "end(begin)"`), read and checked: the
buffer it names must be another parameter's."""

from __future__ import annotations

import re
from typing import Any

from .model import Arg, BufferArg, EndArg

_END = re.compile(r"^\s*end\(\s*(?P<of>[A-Za-z_]\w*)\s*\)\s*$")


def end_arg(name: str, value: Any) -> EndArg | None:
    """The parameter's `end(X)`, or None where its value is something else."""
    m = _END.match(value) if isinstance(value, str) else None
    return EndArg(name, m.group("of")) if m else None


def ends_ok(ctx: Any, args: list[Arg], kernel: str) -> bool:
    """Each `end(X)` names a buffer parameter other than itself; `ctx`: the spec parser's context
    (its `add` places a problem on the parameter's line)."""
    buffers = {a.name for a in args if isinstance(a, BufferArg)}
    ok = True
    for a in args:
        if isinstance(a, EndArg) and a.of not in buffers:
            ctx.add(f'{a.name} = "end({a.of})": {a.of} is no buffer parameter of {kernel} '
                    f"(buffers: {', '.join(sorted(buffers)) or 'none'})", a.name, "args", code="spec-bad-arg")
            ok = False
    return ok
