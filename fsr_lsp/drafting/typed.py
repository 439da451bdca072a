"""A kernel typed once: what the compiler will make of its signature under one build.

Every stage that resolves a spec (a capture, a draft from a launch, inference, a model) reads
the parameters' element types, and the drafts read the file's aliases (`sizeof(floatX)` at a
launch). They are worked out here, once per (file text, headers, defines, kernel, the symbol a
captured run compiled it as), and kept: a hover, a code action and a save of the same version
ask for the same kernel and find it typed. No stage calls back into the type helpers for it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..kernels import Kernel
from ..kernels.aliases import DeferredAliases, defines_for, flag_defines, retyped, with_aliases
from ..kernels.lexical import defined_macros
from ..specs.defines import block_defines
from .captured_values import compiled_types

KEPT = 256  # typed kernels kept (a workspace's open kernels, each under its build)


@dataclass(frozen=True)
class TypedKernel:
    """The kernel with each parameter's element type after typedefs, `#if`s, the build's `-D`s,
    the block's own `defines`, and, where a captured run's symbol says its build compiled
    other types, the macro that build must have defined; the aliases the drafts read."""

    kernel: Kernel
    types: Mapping[str, str]  # alias -> element type, of the file and its headers, under `defines`
    block_flags: tuple[str, ...] = ()  # the `-D`s of the kernel's own block that the build does not define
    capture_defines: frozenset[str] = frozenset()  # the macros a captured symbol chose (none where the block has its own)
    symbol: str = ""  # the captured launch's symbol those were read from

    @property
    def defines_said(self) -> str:
        """Why the capture's macros: which parameters its symbol says were compiled how."""
        kinds = ", ".join(f"`{p.name}` as {p.dtype}" for p in self.kernel.params if p.is_pointer)
        return (f"the captured launch's symbol (`{self.symbol}`) says the run's build compiled {kinds}, which the "
                f"file's headers give with {', '.join(sorted(self.capture_defines))} defined")


_kept: OrderedDict[tuple, TypedKernel] = OrderedDict()
_lock = threading.Lock()


def typed_kernel(kernel: Kernel, text: str, headers: Sequence[str], defined: frozenset[str],
                 symbol: str = "") -> TypedKernel:
    """`kernel` of `text` typed as a build that defines `defined` (its `-D`s) compiles it, with
    `headers` (the texts the file includes); `symbol`: the demangled name a captured run
    launched it by ('' when none). Kept per its inputs: asked again, the same value."""
    key = (len(text), hash(text), tuple(hash(h) for h in headers), defined, kernel, symbol)
    with _lock:
        found = _kept.get(key)
        if found is not None:
            _kept.move_to_end(key)
            return found
    typed = _typed(kernel, text, headers, defined, symbol)
    with _lock:
        _kept[key] = typed
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return typed


def forget() -> None:
    """Drop every kept typed kernel (a test that compares two readings of one version)."""
    with _lock:
        _kept.clear()


def file_types(text: str, headers: Sequence[str], defined: frozenset[str] | set[str]) -> Mapping[str, str]:
    """The aliases of a file and its headers under its own `#define`s and `defined`, read whole
    only when a name asked for may be one the text declares (DeferredAliases): a kernel of
    `float*` and `int` never waits for them. Every text: under edits, each version of a
    document was read whole again for its first draft (9 ms of a HeCBench file's draft)."""
    joined = "\n".join([*headers, text])
    macros = defined_macros(text.encode()) | set(defined)
    return DeferredAliases(joined, macros)


def _typed(kernel: Kernel, text: str, headers: Sequence[str], defined: frozenset[str], symbol: str) -> TypedKernel:
    types = file_types(text, headers, defined)
    own_flags = block_defines(kernel)
    own = frozenset(flag_defines(own_flags)) - defined
    kernel_types = file_types(text, headers, defined | own) if own else types
    kernel = with_aliases(kernel, types)
    if defined | own:  # as that build compiles it, over the file's own reading (one reading of the aliases for both)
        kernel = retyped(kernel, kernel_types)
    if own:
        return TypedKernel(kernel, kernel_types, own_flags)
    found = defines_for(kernel, text, list(headers), compiled_types(symbol, len(kernel.params)), set(defined)) \
        if symbol else None
    if found is None:
        return TypedKernel(kernel, types)
    chosen, kernel = found
    return TypedKernel(kernel, file_types(text, headers, defined | chosen), capture_defines=frozenset(chosen),
                       symbol=symbol)
