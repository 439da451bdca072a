"""Where a file's workspace (and so its `.fsr/` history) is."""

from __future__ import annotations

from pathlib import Path


def workspace_of(file: Path, explicit: Path | None = None) -> Path:
    """The given folder, else the nearest ancestor holding `.fsr` or `.git`, else the file's folder."""
    if explicit is not None:
        return explicit
    here = file.resolve().parent
    for folder in (here, *here.parents):
        if (folder / ".fsr").is_dir() or (folder / ".git").exists():
            return folder
    return here
