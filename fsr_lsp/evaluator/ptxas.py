"""ptxas -v output: which entry functions were compiled and what each one uses."""

from __future__ import annotations

import re

from .records import Resources

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


def match_entry(entries: list[str], kernel: str) -> str | None:
    """The entry that is `kernel`: an `extern "C"` name as is, or an Itanium-mangled name
    whose last source name (after any namespaces) is `kernel`."""
    if kernel in entries:
        return kernel
    hits = [e for e in entries if mangled_name(e) == kernel]
    return hits[0] if len(hits) == 1 else None


def mangled_name(symbol: str) -> str | None:
    """`_Z5saxpyifPKfPf` -> saxpy; `_ZN2ns6kernelEPf` -> kernel; `_Z2k1IfLi256EEviPKT_PS0_` -> k1."""
    if not symbol.startswith("_Z"):
        return None
    i = 2
    nested = symbol[i : i + 1] == "N"
    i += nested
    name = None
    while i < len(symbol) and symbol[i].isdigit():
        j = i
        while j < len(symbol) and symbol[j].isdigit():
            j += 1
        length = int(symbol[i:j])
        name = symbol[j : j + length]
        i = j + length
        if not nested:
            break
    return name


def instantiation_entry(entries: list[str], kernel: str, template_args: str, demangled: dict[str, str]) -> str | None:
    """Of the entries that are `kernel` (nvcc compiles every instantiation the file's host code
    launches: `K<1024>`, `K<512>`, ...), the one for `template_args`, read from the demangled
    names (`void K<128u>(int*)`); None when none, or several, match."""
    wanted = _template_args(f"<{template_args}>")
    hits = []
    for e in entries:
        text = demangled.get(e, "")
        if mangled_name(e) != kernel or wanted is None:
            continue
        start = text.find(f"{kernel}<")
        if start >= 0 and _template_args(text[start + len(kernel):]) == wanted:
            hits.append(e)
    return hits[0] if len(hits) == 1 else None


def _template_args(text: str) -> list[str] | None:
    """`<float, 128u>(...)` -> ["float", "128"]: the top-level arguments, literals without their
    suffixes and casts, spaces normalized."""
    if not text.startswith("<"):
        return None
    depth, args, current = 0, [], ""
    for ch in text:
        if ch in "<([":
            depth += 1
            if depth == 1:
                continue
        elif ch in ">)]":
            depth -= 1
            if depth == 0:
                args.append(current)
                break
        elif ch == "," and depth == 1:
            args.append(current)
            current = ""
            continue
        current += ch
    else:
        return None
    out = []
    for a in args:
        a = re.sub(r"^\((?:unsigned |signed )?\w+\)", "", " ".join(a.split()))
        out.append(re.sub(r"(?<=\d)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)$", "", a))
    return out
