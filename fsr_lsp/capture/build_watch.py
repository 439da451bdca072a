"""`fsr capture --build CMD`: run the user's build watching each nvcc it starts (directory and
arguments, as compilation-database tools do), nvcc itself run unchanged. The watcher is a small
LD_PRELOAD library (`fsr_build_watch.c`, built with the host C compiler once and cached) that
sees nvcc started by any path, a Makefile's `$(CUDA_HOME)/bin/nvcc` and CMake's absolute one
included; where it cannot be built, an `nvcc` first on PATH does the same for builds that name
nvcc plainly. What it saw lands in `.fsr/compile_commands.json`, read like any other compile
database, so every later compile of those files' kernels takes the build's flags."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .compile_db import WATCHED, record

SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".cup")
_WRAPPER = """#!{python} -I
# fsr capture --build: writes down this nvcc invocation, then runs the real nvcc unchanged
import fcntl, json, os, shutil, sys
real = shutil.which("nvcc", path=os.environ.get("FSR_BUILD_PATH", ""))
if real is None:
    sys.stderr.write("fsr capture --build: no nvcc on PATH behind fsr's wrapper\\n")
    sys.exit(127)
log = os.environ.get("FSR_BUILD_LOG")
if log:
    try:
        with open(log, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(json.dumps({{"directory": os.getcwd(), "arguments": [real, *sys.argv[1:]]}}) + "\\n")
    except OSError:
        pass
os.execv(real, [real, *sys.argv[1:]])
"""


@dataclass
class BuildRun:
    """One watched build: its exit status, the compile entries it made, what to tell the user."""

    command: str
    exit_code: int
    entries: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def files(self) -> list[str]:
        return sorted({e["file"] for e in self.entries})


def run_build(command: str, workspace: Path, *, cwd: Path | None = None, nvcc: str = "",
              on_output: Callable[[str], None] | None = None, timeout: float | None = None) -> BuildRun:
    """Run `command` in a shell with the recording nvcc first on PATH; the entries it saw are
    added to the workspace's watched database whatever the build's status (each is how the
    build compiles that file)."""
    started = time.monotonic()
    real_path = os.environ.get("PATH", "")
    if nvcc:  # the settings' nvcc is the one the build's `nvcc` means
        real_path = str(Path(nvcc).resolve().parent) + os.pathsep + real_path
    preload = watch_library()
    if preload is None and shutil.which("nvcc", path=real_path) is None:
        return BuildRun(command, 127, problems=["no nvcc on PATH (or compiler.nvcc) for the build to run"])
    with tempfile.TemporaryDirectory(prefix="fsr-build-") as tmp:
        log = Path(tmp) / "invocations.jsonl"
        env = dict(os.environ, PATH=real_path, FSR_BUILD_LOG=str(log))
        if preload is not None:
            env["LD_PRELOAD"] = " ".join(filter(None, [str(preload), os.environ.get("LD_PRELOAD", "")]))
        else:  # no C compiler: builds that name nvcc plainly are still seen
            wrapper = Path(tmp) / "bin" / "nvcc"
            wrapper.parent.mkdir()
            wrapper.write_text(_WRAPPER.format(python=sys.executable))
            wrapper.chmod(0o755)
            env.update(PATH=str(wrapper.parent) + os.pathsep + real_path, FSR_BUILD_PATH=real_path,
                       NVCC=str(wrapper), CUDACXX=str(wrapper))
        try:
            proc = subprocess.run(command, shell=True, cwd=cwd or workspace, env=env, timeout=timeout,
                                  stdout=subprocess.PIPE if on_output else None,
                                  stderr=subprocess.STDOUT if on_output else None, text=True, errors="replace")
            code = proc.returncode
            if on_output and proc.stdout:
                for line in proc.stdout.splitlines():
                    on_output(line)
        except subprocess.TimeoutExpired:
            code = 124
        entries = entries_of(log)
    run = BuildRun(command, code, entries, round(time.monotonic() - started, 2))
    if entries:
        record(workspace / WATCHED, entries)
    if code == 124:
        run.problems.append(f"the build did not finish in {timeout:g} s and was stopped")
    elif code != 0:
        run.problems.append(f"the build failed (exit status {code}): fix it and capture again; the flags of the "
                            "files it did compile are kept")
    if not entries and code == 0:
        run.problems.append("the build compiled nothing fsr could see: nothing to rebuild (touch the kernel's file "
                            "or clean first: `make -B`), or a compiler started where fsr does not watch (a build "
                            "server, a container); CMake: its compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS=ON) "
                            "serves too. The flags stay as they were")
    return run


WATCH_SOURCE = Path(__file__).with_name("fsr_build_watch.c")


def watch_library(cache: Path | None = None) -> Path | None:
    """The LD_PRELOAD watcher, built the first time (well under a second) and cached per source;
    None where no C compiler builds it."""
    source = WATCH_SOURCE.read_bytes()
    root = cache or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fsr-lsp" / "build-watch"
    target = root / hashlib.sha256(source).hexdigest()[:16] / "libfsr_build_watch.so"
    if target.exists():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            built = Path(tmp) / target.name
            done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", str(WATCH_SOURCE), "-ldl", "-o", str(built)],
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                return None
            os.replace(built, target)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return target


def entries_of(log: Path) -> list[dict]:
    """A compile database entry for each source file each recorded invocation compiled."""
    try:
        lines = log.read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            call = json.loads(line)
        except ValueError:
            continue
        arguments, directory = call.get("arguments") or [], call.get("directory", "")
        for source in _sources(arguments[1:]):
            out.append({"directory": directory, "file": source, "arguments": arguments})
    return out


def _sources(args: list[str]) -> list[str]:
    """The source files among an nvcc invocation's arguments (not an option's value)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-x", "-MF", "-MT", "-ccbin", "-Xcompiler", "-Xlinker", "-Xptxas", "-I", "-D", "-L", "-l",
                   "-arch", "-gencode", "-code", "-isystem", "-include", "-odir", "-t", "--output-file"):
            skip = True
        elif not arg.startswith("-") and arg.endswith(SOURCE_SUFFIXES):
            out.append(arg)
    return out
