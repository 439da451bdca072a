"""Small native libraries fsr builds on the user's machine against their CUDA toolkit's CUPTI
(the capture's injection library, the evaluator's kernel clock): found, built once per (source,
toolkit) with the host C++ compiler, and cached under ~/.cache/fsr-lsp. Built there rather than
shipped, so each matches the user's driver and CUPTI."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


class BuildError(RuntimeError):
    """What is missing to build a native library, said so the user can act on it."""


def cuda_home(nvcc: str = "") -> Path:
    """The toolkit: beside the nvcc the settings name, else $CUDA_HOME, else nvcc on PATH (a
    wrapper script there: /usr/local/cuda), the first of those that has CUPTI."""
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    homes = [Path(os.environ[var]) for var in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(var)]
    found = shutil.which("nvcc")
    homes += [Path(found).resolve().parent.parent] if found else []
    homes.append(Path("/usr/local/cuda"))
    return next((h for h in homes if (h / "include" / "cuda.h").exists() or (h / "extras/CUPTI").is_dir()), homes[0])


def _first(paths: list[Path], name: str) -> Path | None:
    return next((p for p in paths if (p / name).exists()), None)


def cupti_paths(home: Path) -> tuple[Path, Path]:
    """(folder with cupti.h, folder with libcupti.so) of a toolkit."""
    targets = sorted(home.glob("targets/*"))
    include = _first([home / "include", home / "extras/CUPTI/include", *(t / "include" for t in targets)], "cupti.h")
    libs = [home / "lib64", home / "lib", home / "extras/CUPTI/lib64", *(t / "lib" for t in targets)]
    lib = next((d for d in libs if d.is_dir() and any(d.glob("libcupti.so*"))), None)
    if include is None or lib is None:
        raise BuildError(f"CUPTI not found in the CUDA toolkit at {home} (looked for include/cupti.h and "
                         "lib64/libcupti.so, extras/CUPTI too): install the toolkit's CUPTI, or set compiler.nvcc "
                         "to the nvcc of a toolkit that has it")
    return include, lib


def cupti_library(source: Path, name: str, what: str, nvcc: str = "", cache: Path | None = None) -> Path:
    """`source` built as the shared library `name` against the toolkit's CUPTI, the first time
    (a few seconds), else the cached one. `what` names it in errors ("the capture library")."""
    home = cuda_home(nvcc)
    include, lib = cupti_paths(home)
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not compiler:
        raise BuildError(f"no C++ compiler (c++ or g++) on PATH to build {what}")
    text = source.read_bytes()
    key = hashlib.sha256(text + str(include).encode() + str(lib).encode()).hexdigest()[:16]
    root = cache or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fsr-lsp" / "capture"
    target = root / key / name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / name
        command = [compiler, "-std=c++17", "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{home / 'include'}",
                   str(source), f"-L{lib}", "-lcupti", f"-Wl,-rpath,{lib}", "-ldl", "-o", str(built)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=180)
        except subprocess.TimeoutExpired:
            raise BuildError(f"building {what} took over 180 s") from None
        if done.returncode != 0:
            raise BuildError(f"building {what} failed:\n" + done.stderr[-4000:])
        os.replace(built, target)  # atomic: a concurrent build finds one whole library
    return target
