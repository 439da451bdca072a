"""`--version` of `fsr` and `fsr-lsp`: the installed package's version (its metadata), or, run
from a checkout that was never installed, the one pyproject.toml states. Looked up only when
asked: the metadata scan costs every start otherwise."""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn, Sequence

DISTRIBUTION = "fsr-lsp"
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def package_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return checkout_version()


def checkout_version(pyproject: Path = PYPROJECT) -> str:
    """The version pyproject.toml states, or 'unknown' saying why there is none."""
    import tomllib

    try:
        return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"unknown (not installed, and no version in {pyproject})"


class VersionAction(argparse.Action):
    """Prints `PROG VERSION` and exits 0, like argparse's own, with the version found when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help=kwargs.get("help", "print the version and exit"))

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> NoReturn:
        print(f"{parser.prog} {package_version()}")
        parser.exit()
