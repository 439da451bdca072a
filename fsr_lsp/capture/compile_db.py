"""How the user's build compiles each file: compile databases in the workspace.

Two sources, in this order: the builds `fsr capture --build` watched (`.fsr/compile_commands.json`,
written by the nvcc wrapper, newest first) and the project's own `compile_commands.json` (CMake's
`CMAKE_EXPORT_COMPILE_COMMANDS`, Bear, or any build wrapper), at the workspace's root or up to two
folders below it (`build/`, `build/release/`). Entries are read as the format says: `arguments`,
or `command` split as a shell would; a relative `file` against its `directory`."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

DATABASE = "compile_commands.json"
WATCHED = Path(".fsr") / DATABASE  # what `fsr capture --build` recorded
LAUNCHERS = ("ccache", "sccache", "distcc", "icecc")  # wrappers that run the compiler named after them
_SKIPPED = {".git", ".venv", "venv", "node_modules", "__pycache__", ".cache", ".mypy_cache"}


@dataclass(frozen=True)
class CompileCommand:
    file: Path
    directory: Path
    arguments: tuple[str, ...]  # the compiler first, launchers removed
    database: Path  # the compile_commands.json it came from

    def compiler(self) -> str:
        return Path(self.arguments[0]).name if self.arguments else ""

    def is_nvcc(self) -> bool:
        return self.compiler() in ("nvcc", "nvcc.exe") or self.compiler().endswith("-nvcc")


@dataclass
class Database:
    commands: list[CompileCommand]
    problems: list[str]  # one line per database fsr could not read


def databases(root: Path) -> list[Path]:
    """The compile databases of a workspace, the watched builds' first."""
    found = [root / WATCHED] if (root / WATCHED).is_file() else []
    found += [root / DATABASE] if (root / DATABASE).is_file() else []
    for first in _folders(root):
        found += [first / DATABASE] if (first / DATABASE).is_file() else []
        found += [second / DATABASE for second in _folders(first) if (second / DATABASE).is_file()]
    return found


def read_database(path: Path) -> Database:
    """The entries of one compile_commands.json; a file that is not one says so in a line."""
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as e:
        return Database([], [f"{path}: not a compile database fsr can read ({_short(e)}); its flags are not used"])
    if not isinstance(data, list):
        return Database([], [f"{path}: not a compile database (a JSON list of entries); its flags are not used"])
    commands, bad = [], 0
    for entry in data:
        command = _entry(entry, path)
        if command is None:
            bad += 1
        else:
            commands.append(command)
    problems = [f"{path}: {bad} entr{'y' if bad == 1 else 'ies'} without directory, file and arguments or command, "
                "left out"] if bad else []
    return Database(commands, problems)


def commands_for(root: Path, file: Path) -> tuple[list[CompileCommand], list[str]]:
    """Every entry that compiles `file` (the watched builds' first, the newest first within
    them), and the problems met reading the databases."""
    target = _resolved(file)
    out: list[CompileCommand] = []
    problems: list[str] = []
    for path in databases(root):
        db = read_database(path)
        problems += db.problems
        mine = [c for c in db.commands if c.file == target]
        out += reversed(mine) if path == root / WATCHED else mine
    return out, problems


def all_commands(root: Path) -> list[CompileCommand]:
    """Every readable entry of every database of the workspace."""
    return [c for path in databases(root) for c in read_database(path).commands]


def record(database: Path, entries: list[dict]) -> None:
    """Add entries to a compile database, an entry for the same file and directory replaced."""
    try:
        old = json.loads(database.read_text())
        old = old if isinstance(old, list) else []
    except (OSError, ValueError):
        old = []
    keys = {(e.get("directory"), e.get("file")) for e in entries}
    kept = [e for e in old if isinstance(e, dict) and (e.get("directory"), e.get("file")) not in keys]
    database.parent.mkdir(parents=True, exist_ok=True)
    tmp = database.with_name(database.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(kept + entries, indent=1))
    os.replace(tmp, database)


def _entry(entry: object, database: Path) -> CompileCommand | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str) \
            or not isinstance(entry.get("directory"), str):
        return None
    arguments = entry.get("arguments")
    if arguments is None and isinstance(entry.get("command"), str):
        try:
            arguments = shlex.split(entry["command"])
        except ValueError:
            return None
    if not isinstance(arguments, list) or not arguments or not all(isinstance(a, str) for a in arguments):
        return None
    while len(arguments) > 1 and Path(arguments[0]).name in LAUNCHERS:
        arguments = arguments[1:]
    directory = Path(entry["directory"])
    file = Path(entry["file"])
    return CompileCommand(_resolved(file if file.is_absolute() else directory / file), directory,
                          tuple(arguments), database)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def _folders(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and p.name not in _SKIPPED and not p.name.startswith("."))
    except OSError:
        return []


def _short(e: Exception) -> str:
    return e.strerror if isinstance(e, OSError) and e.strerror else str(e).splitlines()[0][:120]
