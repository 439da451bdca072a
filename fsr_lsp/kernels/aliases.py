"""Element types named through the file's own aliases: `typedef float real;`,
`using floatX = __nv_bfloat16;`, `#define DTYPE float`, and structs of one element type
(kernels/structs.py). Training code and samples name their element types this way; a kernel
`f(const real* x)` is a float kernel."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from .c_types import by_value_alignment, element_type
from .lexical import active_text, defined_macros, word_places
from .kernel import Kernel, Param
from .struct_fields import with_struct_fields
from .structs import instantiated, struct_templates, struct_types
from .word_regex import word_start

_TYPEDEF = re.compile(word_start("typedef") + r"\s+([\w\s:]+?)\s+(\w+)\s*;")
_USING = re.compile(word_start("using") + r"\s+(\w+)\s*=\s*([\w\s:]+?)\s*;")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([\w \t:]+?)[ \t]*$", re.M)
# `enum Act {`, `enum class Mode : uint8_t {`, `typedef enum { ... } Name;`: an integer of the enum's type
_ENUM = re.compile(word_start("enum") + r"\s+(?:class\s+|struct\s+)?(\w+)\s*(?::\s*([\w\s:]+?))?\s*\{")
_TYPEDEF_ENUM = re.compile(word_start("typedef") + r"\s+enum\s*(?:\w+\s*)?(?::\s*([\w\s:]+?)\s*)?\{[^{}]*\}\s*(\w+)\s*;")


def type_aliases(text: str, defined: AbstractSet[str] = frozenset()) -> dict[str, str]:
    """Alias name -> the element type it stands for, for aliases that end in one fsr knows.
    Aliases chosen by the preprocessor (`#if defined(ENABLE_FP32) typedef float floatX; #else
    typedef __nv_bfloat16 floatX; #endif`) are read from the branch the text takes with its own
    `#define`s and `defined` (those of the file that includes it), as a build without -D flags
    would. Read once per text and macros (a 10 MB file's kernels each asked again): a copy each."""
    # the text's own `#define`s count anyway: left out of the key, a caller that passes them (a draft)
    # finds what one that does not (discovery) read (0.5 s of a 10 MB file's first draft)
    return dict(_type_aliases(text, frozenset(defined) - defined_macros(text.encode())))


@lru_cache(maxsize=16)
def _type_aliases(text: str, defined: frozenset[str]) -> dict[str, str]:
    text = active_text(text, defined_macros(text.encode()) | set(defined))
    raw: dict[str, str] = {}
    for m in _TYPEDEF.finditer(text):
        raw[m.group(2)] = " ".join(m.group(1).split())
    for m in _USING.finditer(text):
        raw[m.group(1)] = " ".join(m.group(2).split())
    for m in _DEFINE.finditer(text):
        raw.setdefault(m.group(1), " ".join(m.group(2).split()))
    if "enum" in text:
        for m in _ENUM.finditer(text):
            raw.setdefault(m.group(1), " ".join((m.group(2) or "int").split()))
        for m in _TYPEDEF_ENUM.finditer(text):
            raw.setdefault(m.group(2), " ".join((m.group(1) or "int").split()))
    out = {}
    for name in raw:
        target, seen = raw[name], 0
        while target in raw and seen < 10:
            target, seen = raw[target], seen + 1
        if element_type(target)[0] is not None:
            out[name] = target
    if "struct" in text or "union" in text:
        out.update({k: v for k, v in struct_types(text, out).items() if k not in out})
        if "template" in text:
            out.update(struct_templates(text))  # keyed `Pack<T, N>`: no plain name collides
    return out


# What comes right before a name a text declares as a type: `#define N`, `typedef ... N;`, `using N =`,
# `struct N`, `enum class N : int`, and `} N;` (a typedef'd struct or enum); read back from each place the
# name occurs (DeferredAliases)
_DECLARED_BEFORE = re.compile(r"(?:#[ \t]*define[ \t]+|\busing\s+|\btypedef\b[^;{}]*|"
                              r"\b(?:struct|class|union|enum)\b[^;{}]*|\}\s*)$")
LOOK_BEHIND = 256  # characters read before each place of the name
BUSY_NAME = 5000  # places of one name past which the text is read whole instead


class DeferredAliases(Mapping[str, str]):
    """A large text's aliases (`type_aliases`), read whole only when a name asked for may be
    one the text declares: its places show a declaring word before it. Asked about `float` or
    a kernel's `Particle`, a 10 MB file's draft no longer reads every struct of the file (3 s of
    its 4 s); every answer is the whole reading's (the look is conservative: a place it is
    unsure of reads the text whole)."""

    def __init__(self, text: str, defined: AbstractSet[str] = frozenset()) -> None:
        self._text, self._defined = text, frozenset(defined)
        self._all: dict[str, str] | None = None
        self._looked: dict[str, bool] = {}

    def __getitem__(self, name: str) -> str:
        if not self.may_declare(name):
            raise KeyError(name)
        return self._whole()[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.may_declare(name) and name in self._whole()

    def __iter__(self) -> Iterator[str]:
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._whole())

    def _whole(self) -> dict[str, str]:
        if self._all is None:
            self._all = type_aliases(self._text, self._defined)
        return self._all

    def may_declare(self, name: str) -> bool:
        """Whether the text may declare `name` as a type (False: it surely does not)."""
        if self._all is not None:
            return True
        if name not in self._looked:
            self._looked[name] = _may_declare(self._text, name)
        return self._looked[name]


def _may_declare(text: str, name: str) -> bool:
    if element_type(name)[0] is not None:  # a type fsr knows (`float`, `unsigned int`): named anew only by a
        # `#define`, `using` or `typedef` of that very spelling, each found from its literal start
        spelled = r"\s+".join(map(re.escape, name.split()))
        return any(re.search(p, text) for p in (rf"#[ \t]*define[ \t]+{spelled}\b", rf"using\s+{spelled}\s*=",
                                                rf"typedef\s+[\w\s:]+?\s+{spelled}\s*;"))
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return True  # `Pack<float, 4>`, `std::size_t`: read whole
    for places, at in enumerate(word_places(text, name), start=1):
        if places > BUSY_NAME or _DECLARED_BEFORE.search(text, max(0, at - LOOK_BEHIND), at):
            return True
    return False


def with_aliases(kernel: Kernel, aliases: Mapping[str, str]) -> Kernel:
    """The kernel with parameters of aliased types given their element types; a template
    struct's instantiation (`Pack<T, N>*`) becomes its layout (`T[N]`), an element type once
    the kernel's own template arguments are substituted."""
    if (isinstance(aliases, dict) and not aliases) or \
            all(p.dtype is not None or (p.base_type not in aliases and "<" not in p.base_type) for p in kernel.params):
        return kernel
    params = tuple(_resolved(p, aliases) for p in kernel.params)
    return dataclasses.replace(kernel, params=params)


def _resolved(p: Param, aliases: Mapping[str, str]) -> Param:
    if p.dtype is None and "<" in p.base_type and p.type_text.count("*") <= 1:
        layout = instantiated(p.base_type, {k: v for k, v in aliases.items() if "<" in k})
        if layout is not None:
            dtype, lanes = element_type(layout)
            return dataclasses.replace(p, base_type=layout, dtype=dtype, lanes=lanes if dtype else 1)
    if p.dtype is not None or p.base_type not in aliases:
        return p
    dtype, lanes = element_type(aliases[p.base_type])
    if p.type_text.count("*") > 1:
        return p
    align = by_value_alignment(aliases[p.base_type], dtype, lanes) if dtype and lanes > 1 and not p.is_pointer else 0
    return dataclasses.replace(p, dtype=dtype, lanes=lanes, align=align)


_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">]", re.M)
INCLUDE_DEPTH = 3


def included_texts(text: str, include_dirs: Iterable[Path]) -> list[str]:
    """The texts of the headers a file includes (found in `include_dirs`, a few levels deep),
    nearest first."""
    dirs = [Path(d) for d in include_dirs]
    seen: set[Path] = set()
    texts: list[str] = []
    frontier = [text]
    looked: set[str] = set()  # names looked for: a 10 MB file includes <stdio.h> hundreds of times
    for _ in range(INCLUDE_DEPTH):
        found = []
        for t in frontier:
            for name in _INCLUDE.findall(t):
                if name in looked:
                    continue
                looked.add(name)
                path = next((d / name for d in dirs if (d / name).is_file()), None)
                if path is None or path.resolve() in seen:
                    continue
                seen.add(path.resolve())
                try:
                    found.append(path.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    continue
        texts += found
        frontier = found
    return texts


HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh", ".inl")
MAX_SIBLINGS = 200  # a folder bigger than this is not searched for a header's includers


def includer_texts(path: Path, include_dirs: Iterable[Path] = ()) -> list[str]:
    """What a header's includer includes before it, for a header written to be included after
    others (`kernels_wrapper.h` launching with `kernels.h`'s constants, both included by
    `main.cu` in that order): the texts of the headers (and what they include) that the first
    file beside it to include it includes first. [] for a file that is no header."""
    if path.suffix.lower() not in HEADER_SUFFIXES:
        return []
    try:
        siblings = sorted(p for p in path.parent.iterdir() if p.is_file() and p != path)
    except OSError:
        return []
    if len(siblings) > MAX_SIBLINGS:
        return []
    for sibling in siblings:
        if sibling.suffix.lower() not in (".cu", ".cpp", ".cc", ".cxx", ".c", *HEADER_SUFFIXES):
            continue
        try:
            text = sibling.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        names = _INCLUDE.findall(text)
        at = next((i for i, name in enumerate(names) if Path(name).name == path.name), None)
        if at:
            before = "".join(f'#include "{name}"\n' for name in names[:at])
            return included_texts(before, (sibling.parent, *include_dirs))
    return []


def with_included_aliases(kernel: Kernel, text: str, include_dirs: Iterable[Path],
                          flags: Iterable[str] = ()) -> Kernel:
    """The kernel with element types its own file leaves unknown taken from its headers, and
    every aliased one as a build with the `-D` of `flags` compiles it."""
    defined = flag_defines(flags)
    if defined:
        headers = included_texts(text, include_dirs)
        kernel = compiled_as(with_aliases(kernel, type_aliases("\n".join(headers), defined_macros(text.encode()) | defined)
                                          if headers else {}), text, headers, defined)
        if not any(p.fields for p in kernel.params):
            return kernel
        # a struct's members as that build types them (a `floatX` member is bf16 under -DENABLE_BF16)
        joined = "\n".join([*headers, text])
        unread = dataclasses.replace(kernel, params=tuple(dataclasses.replace(p, fields=()) for p in kernel.params))
        return with_struct_fields(unread, joined, type_aliases(joined, defined), frozenset(defined))
    if all(_typed(p) for p in kernel.params):
        return kernel
    headers = included_texts(text, include_dirs)
    if not headers:
        return kernel
    joined = "\n".join(headers)
    # the including file's own defines choose the header's branches: llm.c's GELU defines
    # ENABLE_BF16 before including the header whose #if typedefs floatX as __nv_bfloat16
    aliases = type_aliases(joined, defined_macros(text.encode()))
    kernel = with_aliases(kernel, aliases)
    if all(_typed(p) for p in kernel.params):
        return kernel
    # a struct of the file's own whose members are typed in a header (`struct LJ { real cutoff2; }`)
    return with_struct_fields(kernel, joined + "\n" + text, {**type_aliases(text), **aliases})


def _typed(p: Param) -> bool:
    """An element type known, or for a struct passed by value, its members."""
    return p.dtype is not None or bool(p.fields)


# ---------------------------------------------------------------- types as a build with -D flags compiles them

_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?:ifdef|ifndef|if|elif)\b(.*)$", re.M)


def flag_defines(flags: Iterable[str]) -> set[str]:
    """The macro names `-DNAME` / `-DNAME=VALUE` flags define (`-D NAME` too)."""
    out: set[str] = set()
    words = list(flags)
    for i, w in enumerate(words):
        name = w[2:] if w.startswith("-D") and len(w) > 2 else words[i + 1] if w == "-D" and i + 1 < len(words) else ""
        m = re.match(r"\w+", name)
        if m:
            out.add(m.group(0))
    return out


def compiled_as(kernel: Kernel, text: str, headers: Iterable[str], defined: set[str]) -> Kernel:
    """The kernel with each aliased parameter (`floatX*`, its own file's typedef or a header's)
    typed as a build that also defines `defined` compiles it."""
    if not defined:
        return kernel
    return retyped(kernel, type_aliases("\n".join([*headers, text]), defined_macros(text.encode()) | set(defined)))


def retyped(kernel: Kernel, aliases: Mapping[str, str]) -> Kernel:
    """The kernel with each aliased parameter typed as `aliases` (a build's reading of the
    file's aliases) says, over what it was typed as before."""
    params = []
    for p in kernel.params:
        if p.base_type in aliases and p.type_text.count("*") <= 1:
            dtype, lanes = element_type(aliases[p.base_type])
            p = dataclasses.replace(p, dtype=dtype, lanes=lanes)
        params.append(p)
    return dataclasses.replace(kernel, params=tuple(params))


def defines_for(kernel: Kernel, text: str, headers: list[str], compiled: list[str],
                defined: set[str] = frozenset()) -> tuple[set[str], Kernel] | None:  # type: ignore[assignment]
    """The macro a build must have defined for the kernel's aliased parameters to be the types
    its symbol says it was compiled with (`compiled`, one per parameter), with the kernel so
    typed; None when they are already, or when no single macro the conditionals test does it."""
    def mismatched(k: Kernel) -> list[str]:
        return [p.name for p, c in zip(k.params, compiled)
                if p.is_pointer and element_type(c)[0] is not None and (p.dtype, p.lanes or 1) != element_type(c)]

    if len(compiled) != len(kernel.params) or not mismatched(kernel):
        return None
    names = {m.group(0) for cond in _CONDITIONAL.findall("\n".join([*headers, text]))
             for m in re.finditer(r"\b[A-Za-z_]\w*\b", re.sub(r"\bdefined\b", " ", cond))}
    for name in sorted(names - set(defined) - defined_macros(text.encode())):
        trial = compiled_as(kernel, text, headers, set(defined) | {name})
        if not mismatched(trial):
            return {name}, trial
    return None
