"""The flags the user's build compiles a file with, from the workspace's compile databases
(capture/compile_db.py), read into the flags fsr compiles with (specs/build_flags.py).

A file the databases name is compiled as its entry says. A file they do not name (a header, a
`.cu` included by another) takes the flags of the files that include it where those agree, else
those every `.cu` entry agrees on; where they disagree, none. An entry of a compiler fsr does not read (clang, a host compiler) says so once."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..capture.compile_db import CompileCommand, all_commands, commands_for, databases
from ..specs.build_flags import BuildFlags, read_command


@dataclass(frozen=True)
class FileBuild:
    flags: BuildFlags
    where: str  # where they came from, for the user: "build/compile_commands.json"
    problems: tuple[str, ...] = ()

    def said(self) -> str:
        """The flags as the report and the final line name them."""
        shown = [f for f in self.flags.flags if not f.startswith("-I")]
        return " ".join(shown) if shown else "no flags that change device code"


def file_build(root: Path, path: Path) -> FileBuild | None:
    """How the build compiles `path`; None where no database names it or any like it."""
    mine, problems = commands_for(root, path)
    nvcc = [c for c in mine if c.is_nvcc()]
    if nvcc:
        return FileBuild(read_command(list(nvcc[0].arguments), nvcc[0].directory), _where(root, nvcc[0]),
                         tuple(problems))
    if mine:
        return FileBuild(BuildFlags(), _where(root, mine[0]), (*problems, (
            f"{path.name} is compiled by {mine[0].compiler()} ({_where(root, mine[0])}), whose flags fsr does not "
            "read (nvcc's only): compiled with the settings' flags")))
    compiled = [c for c in all_commands(root) if c.is_nvcc() and c.file.suffix == ".cu"]
    includers = [c for c in compiled if _includes(c.file, path.name)]
    for group, where in ((includers, f"the files that include {path.name}"),
                         (compiled, "every .cu file of the workspace's compile databases")):
        shared = {read_command(list(c.arguments), c.directory) for c in group}
        if len(shared) == 1:
            return FileBuild(shared.pop(), where, tuple(problems))
        if len(shared) > 1:
            break  # they disagree: no guess
    return FileBuild(BuildFlags(), "", tuple(problems)) if problems else None


def _includes(file: Path, name: str) -> bool:
    """Whether `file` has an #include naming `name` (a header, or a .cu included whole)."""
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r'^[ \t]*#[ \t]*include[ \t]*["<](?:[^">]*/)?' + re.escape(name) + r'[">]', text, re.M) is not None


LOOK_AGAIN = 1.0  # seconds between looks for a new or changed database


class BuildIndex:
    """`file_build` per file, read again when a database changes (its modification time)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._stamp: tuple = ()
        self._files: dict[Path, FileBuild | None] = {}
        self._looked = -1.0

    def of(self, path: Path) -> FileBuild | None:
        with self._lock:
            if time.monotonic() - self._looked > LOOK_AGAIN:  # a hover per keystroke walks no folders
                self._looked = time.monotonic()
                stamp = tuple((p, _mtime(p)) for p in databases(self.root))
            else:
                stamp = self._stamp
            if stamp != self._stamp:
                self._stamp, self._files = stamp, {}
            if path not in self._files:
                self._files[path] = file_build(self.root, path) if stamp else None
            return self._files[path]


def _where(root: Path, command: CompileCommand) -> str:
    try:
        shown = str(command.database.relative_to(root))
    except ValueError:
        shown = str(command.database)
    return "the build fsr capture --build watched" if shown == ".fsr/compile_commands.json" else shown


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0
