"""ptxas -v output: which entry functions were compiled and what each one uses."""

from __future__ import annotations

import re

from ..records import Resources

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")


def entry_functions(log: str) -> list[str]:
    return [name for name, _ in _ENTRY.findall(log)]


def parse_resources(log: str) -> dict[str, Resources]:
    """Mangled entry name -> resources. `Used ...` follows the entry's `Compiling` line;
    the stack/spill line follows `Function properties for` the same name."""
    out: dict[str, Resources] = {}
    current: str | None = None
    props_for: str | None = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
            out.setdefault(current, Resources())
        elif m := _PROPS.search(line):
            props_for = m.group(1)
        elif (m := _FRAME.search(line)) and props_for is not None:
            res = out.setdefault(props_for, Resources())
            res.stack_bytes, res.spill_stores, res.spill_loads = (int(x) for x in m.groups())
            props_for = None
        elif (m := _USED.search(line)) and current is not None:
            res = out[current]
            res.registers = int(m.group(1))
            res.shared_bytes = int(m.group(3) or 0)
    return out
