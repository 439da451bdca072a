"""Which symbol of a compiled module is the kernel asked for: an `extern "C"` name as is, an
Itanium-mangled name whose source name is the kernel's, and, when nvcc compiled several
instantiations of a template (the file's host code launches `K<1024>`, `K<512>`...), the one
whose demangled arguments are the spec's."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ...kernels.brackets import nesting, split_top_level


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
    text = re.sub(r"&\(([A-Za-z_][\w:]*)\([^()]*\)\)", r"&\1", text)  # `&(f(float const*))`: `&f`
    end = next((j for j, (ch, depth) in enumerate(nesting(text, "<([", ">)]")) if depth == 0 and ch in ">)]"), -1)
    if end < 0:
        return None
    args = split_top_level(text[1:end], ",", "<([", ">)]")
    out = []
    for a in args:
        a = re.sub(r"^\((?:unsigned |signed )?\w+\)", "", " ".join(a.split()))
        a = re.sub(r"\s*([<>,*&])\s*", r"\1", a)  # `F<G<h> >` as binutils writes it, `F<G<h>>` as cu++filt does
        a = {"false": "0", "true": "1"}.get(a, a)  # cu++filt writes a bool argument `(bool)0`, the driver `false`
        out.append(re.sub(r"(?<=\d)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)$", "", a))
    return out


def demangled(symbols: list[str], nvcc: str | None) -> dict[str, str]:
    """Symbol -> its C++ name, by the cu++filt beside `nvcc` (else binutils' c++filt); {} without one."""
    tool = (shutil.which("cu++filt", path=str(Path(nvcc).resolve().parent)) if nvcc else None) or shutil.which("c++filt")
    if tool is None or not symbols:
        return {}
    try:
        proc = subprocess.run([tool], input="\n".join(symbols) + "\n", capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    names = proc.stdout.splitlines()
    return dict(zip(symbols, names)) if len(names) == len(symbols) else {}
