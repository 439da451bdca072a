"""Compiled cubins on disk, keyed by everything that makes them (compiler.py `_cache_key`):
a kernel compiled once is loaded the next time, in any process."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from ..records import CompileResult, KernelBinary, Resources

log = logging.getLogger("fsr_lsp.evaluator")


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
    """The cached compile, or None. An entry that is not what `cache_store` wrote (a truncated
    or altered cubin, its digest not matching; a record missing its fields; one from before
    cubins carried a digest) is a miss, and removed: loaded, a damaged cubin would make the
    original "fail to load" on the GPU, blamed on the spec."""
    d = cache_dir(folder)
    meta_path, cubin_path = d / f"{key}.json", d / f"{key}.cubin"
    try:
        meta = json.loads(meta_path.read_text())
        cubin = cubin_path.read_bytes()
    except (OSError, ValueError):
        return None
    res = meta.get("resources") if isinstance(meta, dict) else None
    fields = {f.name for f in dataclasses.fields(Resources)}
    if not (isinstance(meta, dict) and isinstance(meta.get("entry"), str) and isinstance(meta.get("compiler"), str)
            and meta.get("sha256") == hashlib.sha256(cubin).hexdigest()
            and (res is None or (isinstance(res, dict) and set(res) <= fields))):
        log.info("cubin cache: %s is damaged or from an older fsr; compiled again", meta_path)
        for path in (meta_path, cubin_path):
            path.unlink(missing_ok=True)
        return None
    binary = KernelBinary(cubin=cubin, entry=meta["entry"], compiler=meta["compiler"], arch=arch,
                          flags=tuple(flags))
    return CompileResult(True, binary, str(meta.get("log", "")), 0.0, cached=True, compiler=meta["compiler"],
                         resources=Resources(**res) if res else None)


def cache_store(folder: str | None, key: str, result: CompileResult) -> None:
    d = cache_dir(folder)
    try:
        d.mkdir(parents=True, exist_ok=True)
        assert result.binary is not None
        for suffix, data in ((".cubin", result.binary.cubin),
                             (".json", json.dumps({"entry": result.binary.entry, "compiler": result.compiler,
                                                   "log": result.log, "sha256": hashlib.sha256(result.binary.cubin).hexdigest(),
                                                   "resources": asdict(result.resources) if result.resources else None}).encode())):
            tmp = d / f"{key}{suffix}.{os.getpid()}.{threading.get_ident()}.tmp"  # threads compile side by side
            tmp.write_bytes(data)
            os.replace(tmp, d / f"{key}{suffix}")
    except OSError:
        pass  # a cache that cannot be written only costs time


_builds_lock = threading.Lock()
_builds: dict[str, list] = {}  # per key being compiled in this process: [its lock, how many want it]


@contextmanager
def building(key: str) -> Iterator[None]:
    """One compile of `key` at a time in this process: a search compiles its likely first
    candidates ahead while the original is measured, and a real request for one of them that
    comes meanwhile waits for that compile and loads its cubin instead of running the compiler
    a second time beside it."""
    with _builds_lock:
        entry = _builds.setdefault(key, [threading.Lock(), 0])
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _builds_lock:
            entry[1] -= 1
            if entry[1] == 0:
                del _builds[key]
