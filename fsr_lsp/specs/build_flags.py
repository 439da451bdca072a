"""The nvcc flags of a build that change what a kernel compiles to, read from one compile command.

A kernel built with `--use_fast_math` or `-DUSE_BF16` is a different kernel: fsr must time and
verify the binary the user ships, so every compile of the original and of each candidate takes
these flags. Flags that only name outputs, dependencies, the host compiler or the link are
dropped; the target architecture is kept apart (fsr compiles for the GPU it runs on). The same
table checks a block's `flags` key: text a user, a capture or a model wrote, so only flags known
to change device code, never one that runs a program or writes a file, are accepted."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..kernels.kernel import Kernel
from .locate import block_value

# canonical spelling -> the spellings nvcc accepts; each takes a value (joined by `=`, or the next argument)
_VALUED = {
    "-D": ("-D", "--define-macro"),
    "-U": ("-U", "--undefine-macro"),
    "-I": ("-I", "--include-path", "-isystem", "--system-include"),
    "-std": ("-std", "--std"),
    "--ptxas-options": ("-Xptxas", "--ptxas-options"),
    "-maxrregcount": ("-maxrregcount", "--maxrregcount"),
    "-rdc": ("-rdc", "--relocatable-device-code"),
    "--ftz": ("-ftz", "--ftz"),
    "--prec-div": ("-prec-div", "--prec-div"),
    "--prec-sqrt": ("-prec-sqrt", "--prec-sqrt"),
    "--fmad": ("-fmad", "--fmad"),
    "-O": ("-O", "--optimize"),
    "--pre-include": ("-include", "--pre-include"),
}
_ARCH = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code")
_SWITCHES = {  # spelling -> canonical
    "-use_fast_math": "--use_fast_math", "--use_fast_math": "--use_fast_math",
    "-expt-relaxed-constexpr": "--expt-relaxed-constexpr", "--expt-relaxed-constexpr": "--expt-relaxed-constexpr",
    "-expt-extended-lambda": "--extended-lambda", "--expt-extended-lambda": "--extended-lambda",
    "-extended-lambda": "--extended-lambda", "--extended-lambda": "--extended-lambda",
    "-G": "-G", "--device-debug": "-G", "-restrict": "--restrict", "--restrict": "--restrict",
    "-dc": "-rdc=true", "--device-c": "-rdc=true",
}
# options of nvcc whose value is the next argument when not joined: dropped, value and all
_DROPPED_VALUED = ("-o", "--output-file", "-MF", "-MT", "-MQ", "-x", "--x", "-ccbin", "--compiler-bindir",
                   "-Xcompiler", "--compiler-options", "-Xlinker", "--linker-options", "-Xnvlink", "--nvlink-options",
                   "-Xarchive", "--archive-options", "-L", "--library-path", "-l", "--library", "-odir",
                   "--output-directory", "-keep-dir", "--keep-dir", "-t", "--threads", "-ldir", "--libdevice-directory",
                   "--dependency-output", "-MJ", "-cudart", "--cudart", "-cudadevrt", "--cudadevrt", "-default-stream",
                   "--default-stream", "-diag-suppress", "--diag-suppress")
_VALUES = {
    "-std": re.compile(r"(c|gnu)\+\+\d\w"),
    "-maxrregcount": re.compile(r"\d{1,3}"),
    "-rdc": re.compile(r"true|false"),
    "--ftz": re.compile(r"true|false"), "--prec-div": re.compile(r"true|false"),
    "--prec-sqrt": re.compile(r"true|false"), "--fmad": re.compile(r"true|false"),
    "-O": re.compile(r"[0-3]"),
    "-D": re.compile(r"[A-Za-z_]\w*(=[^\x00-\x1f]*)?"),
    "-U": re.compile(r"[A-Za-z_]\w*"),
    # ptxas options that change code or only report; never one naming a file
    "--ptxas-options": re.compile(r"(-(v|O[0-3]|warn-\w[\w-]*|Werror|allow-expensive-optimizations(=\w+)?|"
                                  r"(dlcm|dscm|def-load-cache|def-store-cache|fmad)=\w+|maxrregcount=\d+|"
                                  r"disable-optimizer-constants|preserve-relocs|extensible-whole-program)(,|$))+"),
}
_DEFAULTS = {"-rdc=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true", "--fmad=true"}  # nvcc's own


@dataclass(frozen=True)
class BuildFlags:
    """One compile command, read: the flags fsr compiles with, the build's target architectures
    (kept apart: fsr builds for the GPU it runs on), and what was left out."""

    flags: tuple[str, ...] = ()
    arch: tuple[str, ...] = ()
    dropped: tuple[str, ...] = field(default=(), compare=False)

    def defines(self) -> tuple[str, ...]:
        return tuple(f for f in self.flags if f.startswith("-D"))

    def include_dirs(self) -> tuple[str, ...]:
        return tuple(f[2:] for f in self.flags if f.startswith("-I"))

    def others(self) -> tuple[str, ...]:
        """The flags a block's `flags` key holds: all but the `-D`s (its `defines`) and `-I`s."""
        return tuple(f for f in self.flags if not f.startswith(("-D", "-I")))


def read_command(arguments: list[str], directory: Path) -> BuildFlags:
    """The flags of one compile command's arguments (the compiler first), relative paths made
    absolute against the command's `directory`."""
    kept: list[str] = []
    arch: list[str] = []
    dropped: list[str] = []
    args = _expanded(list(arguments[1:]), directory, dropped)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        canonical, value, used_next = _split(arg, args[i] if i < len(args) else None)
        i += used_next
        if canonical == "arch":
            arch.append(value)
        elif canonical is None:
            dropped.append(arg if not used_next else f"{arg} {args[i - 1]}")
        else:
            if canonical == "--ptxas-options":  # -v only reports
                value = ",".join(v for v in value.split(",") if v != "-v")
            flag = _joined(canonical, value, directory)
            if flag is None:
                dropped.append(arg)
            elif flag not in kept and flag not in _DEFAULTS:
                kept.append(flag)
    return BuildFlags(tuple(kept), tuple(arch), tuple(dropped))


_OPTIONS_FILE = ("--options-file", "-optf")


def _expanded(args: list[str], directory: Path, dropped: list[str]) -> list[str]:
    """The arguments with each `--options-file F` (nvcc's response files, CMake's
    `includes_CUDA.rsp`) replaced by the arguments F holds; an unreadable one is named in `dropped`."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg, i = args[i], i + 1
        files = None
        if arg in _OPTIONS_FILE and i < len(args):
            files, i = args[i], i + 1
        elif arg.startswith(tuple(o + "=" for o in _OPTIONS_FILE)):
            files = arg.partition("=")[2]
        if files is None:
            out.append(arg)
            continue
        for name in filter(None, files.split(",")):
            path = Path(name) if Path(name).is_absolute() else directory / name
            try:
                out += shlex.split(path.read_text(errors="replace"))
            except (OSError, ValueError) as error:
                dropped.append(f"--options-file {name} ({type(error).__name__}: unreadable)")
    return out


def flag_problem(flag: Any) -> str | None:
    """Why `flag` may not stand in a block's `flags` key, or None. Only flags fsr knows to change
    device code are taken from the block: text there is written by a user, a capture or a model."""
    if not isinstance(flag, str):
        return "flags must be a list of strings, e.g. flags = [\"--use_fast_math\", \"-maxrregcount=64\"]"
    canonical, value, used_next = _split(flag, None)
    if canonical == "arch":
        return f"{flag}: fsr compiles for the GPU it runs on; a block's flags name no architecture"
    if canonical is None or used_next or _joined(canonical, value, Path("/")) != flag:
        return (f"{flag!r} is not a flag fsr takes from a block (those that change device code, spelled as nvcc "
                "does: -O3, --use_fast_math, --ftz=true, --prec-div=false, --prec-sqrt=false, --fmad=false, -DX=1, "
                "-UX, -I/abs/dir, -std=c++17, -maxrregcount=64, -rdc=true, --ptxas-options=-v, "
                "--expt-relaxed-constexpr, --extended-lambda, --restrict, -G)")
    return None


def flags_problem(value: Any) -> str | None:
    """Why a block's `flags` value is unusable, or None."""
    if not isinstance(value, list):
        return 'flags must be a list of nvcc flags, e.g. flags = ["--use_fast_math"]'
    return next((p for p in map(flag_problem, value) if p is not None), None)


def block_flags(kernel: Kernel) -> tuple[str, ...]:
    """The flags of the kernel's own @fsr block (none where it has none or it is unusable: the
    spec's own parse says why)."""
    value = block_value(kernel, "flags")
    return tuple(value) if value is not None and flags_problem(value) is None else ()


def flags_value(flags: tuple[str, ...]) -> str:
    """A block's `flags` value, as TOML."""
    return "[" + ", ".join('"' + f.replace("\\", "\\\\").replace('"', '\\"') + '"' for f in flags) + "]"


def _split(arg: str, following: str | None) -> tuple[str | None, str, int]:
    """(canonical name, its value, 1 where the value was the next argument): name "arch" for an
    architecture, None for a flag that does not change device code."""
    if arg in _SWITCHES:
        return _SWITCHES[arg], "", 0
    for spelling in _ARCH:
        if arg == spelling:
            return "arch", following or "", 1 if following is not None else 0
        if arg.startswith(spelling + "="):
            return "arch", arg[len(spelling) + 1:], 0
    for canonical, spellings in _VALUED.items():
        for spelling in sorted(spellings, key=len, reverse=True):
            if arg == spelling and canonical != "-O":
                return (canonical, following, 1) if following is not None else (None, "", 0)
            if arg.startswith(spelling + "="):
                return canonical, arg[len(spelling) + 1:], 0
            if spelling in ("-D", "-U", "-I", "-O") and arg.startswith(spelling) and len(arg) > len(spelling):
                return canonical, arg[len(spelling):], 0
    if arg in _DROPPED_VALUED and following is not None:
        return None, "", 1
    return None, "", 0


def _joined(canonical: str, value: str, directory: Path) -> str | None:
    """The flag in its one spelling, or None where its value is not one fsr knows."""
    pattern = _VALUES.get(canonical)
    if pattern is not None and not pattern.fullmatch(value):
        return None
    if canonical in ("--use_fast_math", "--expt-relaxed-constexpr", "--extended-lambda", "-G", "--restrict",
                     "-rdc=true"):
        return canonical
    if canonical in ("-I", "--pre-include"):
        if not value or "\x00" in value:
            return None
        path = value if Path(value).is_absolute() else str((directory / value).resolve())
        return f"-I{path}" if canonical == "-I" else f"--pre-include={path}"
    if canonical in ("-D", "-U", "-O"):
        return f"{canonical}{value}"
    return f"{canonical}={value}"


_SINGLE = ("-O", "-std=", "-maxrregcount=", "-rdc=", "--ftz=", "--prec-div=", "--prec-sqrt=", "--fmad=")


def merged(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """The groups' flags in order, each once; of a flag that takes one value (-O, -std,
    -maxrregcount, --ftz, ...) the first group's stays: a later group (a block written before the
    build changed, a candidate) adds flags, never replaces the build's."""
    out: list[str] = []
    for flag in (f for group in groups for f in group):
        single = next((s for s in _SINGLE if flag.startswith(s)), None)
        if flag in out or (single is not None and any(o.startswith(single) for o in out)):
            continue
        out.append(flag)
    return tuple(out)
