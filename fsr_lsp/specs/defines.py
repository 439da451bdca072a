"""`defines = ["ENABLE_BF16"]`: the macros a kernel's build defines (`-D`), kept in its @fsr block.

A typedef chosen by `#if` (`floatX` is `__nv_bfloat16` under ENABLE_BF16) is a different kernel
under other macros. A capture reads from the run's symbol which macros its build defined; once
the block is placed in the file, the block must say so itself, or the file would be typed and
compiled as float when the capture is gone. Only macro definitions are taken from the block:
it is text a user, a capture or a model wrote, and compiler flags could do anything."""

from __future__ import annotations

import re
from typing import Any

from ..kernels.kernel import Kernel
from .build_flags import block_flags, merged
from .locate import block_value

MACRO = re.compile(r"[A-Za-z_]\w*(?:=[\w.+-]*)?", re.ASCII)


def defines_problem(value: Any) -> str | None:
    """Why `value` is not a list of macro definitions, or None."""
    if not isinstance(value, list) or not all(isinstance(v, str) and MACRO.fullmatch(v) for v in value):
        return 'defines must be a list of macros the build defines, e.g. defines = ["ENABLE_BF16", "BLOCK=256"]'
    return None


def block_defines(kernel: Kernel) -> tuple[str, ...]:
    """The `-D` flags of the kernel's own @fsr block (none where it has none, or it is unreadable:
    the spec's own parse says why)."""
    value = block_value(kernel, "defines")
    return as_flags(value) if value is not None and defines_problem(value) is None else ()


def as_flags(macros: Any) -> tuple[str, ...]:
    return tuple(f"-D{m}" for m in macros)


def with_defines(flags: tuple[str, ...], kernel: Kernel) -> tuple[str, ...]:
    """`flags` and the block's own `-D`s and `flags`, each once (a flag taking one value that
    `flags` already sets stays as `flags` set it: they hold the build's)."""
    return merged(flags, block_defines(kernel), block_flags(kernel))


def defines_value(flags: tuple[str, ...]) -> str:
    """The block's `defines` for `-D` flags, as TOML."""
    names = [f[2:] for f in flags if f.startswith("-D") and MACRO.fullmatch(f[2:])]
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"
