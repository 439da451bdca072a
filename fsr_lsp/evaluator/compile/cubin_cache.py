"""Compiled cubins on disk, keyed by everything that makes them (compiler.py `_cache_key`):
a kernel compiled once is loaded the next time, in any process."""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import asdict
from pathlib import Path

from ..records import CompileResult, KernelBinary, Resources


def included_text(source: str, include_dirs: tuple[str, ...]) -> list[str]:
    """Contents of quoted includes found in the include dirs, so editing a header misses the cache."""
    texts = []
    for name in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', source, re.M):
        for d in include_dirs:
            path = Path(d) / name
            if path.is_file():
                texts.append(path.read_text(errors="replace"))
                break
    return texts


def cache_dir(explicit: str | None) -> Path:
    """The folder of cubins: `explicit`, else $FSR_CACHE_DIR, else the user's cache folder."""
    base = explicit or os.environ.get("FSR_CACHE_DIR") or \
        os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "fsr-lsp")
    return Path(base) / "cubin"


def cache_load(folder: str | None, key: str, arch: str, flags: tuple[str, ...]) -> CompileResult | None:
    d = cache_dir(folder)
    meta_path, cubin_path = d / f"{key}.json", d / f"{key}.cubin"
    try:
        meta = json.loads(meta_path.read_text())
        cubin = cubin_path.read_bytes()
    except (OSError, ValueError):
        return None
    binary = KernelBinary(cubin=cubin, entry=meta["entry"], compiler=meta["compiler"], arch=arch,
                          flags=tuple(flags))
    res = meta.get("resources")
    return CompileResult(True, binary, meta.get("log", ""), 0.0, cached=True, compiler=meta["compiler"],
                         resources=Resources(**res) if res else None)


def cache_store(folder: str | None, key: str, result: CompileResult) -> None:
    d = cache_dir(folder)
    try:
        d.mkdir(parents=True, exist_ok=True)
        assert result.binary is not None
        for suffix, data in ((".cubin", result.binary.cubin),
                             (".json", json.dumps({"entry": result.binary.entry, "compiler": result.compiler,
                                                   "log": result.log,
                                                   "resources": asdict(result.resources) if result.resources else None}).encode())):
            tmp = d / f"{key}{suffix}.{os.getpid()}.{threading.get_ident()}.tmp"  # threads compile side by side
            tmp.write_bytes(data)
            os.replace(tmp, d / f"{key}{suffix}")
    except OSError:
        pass  # a cache that cannot be written only costs time
