"""With capture, on a GPU host: of the kernels a public project's own programs launch, the share
that gets a proven spec (issue 24's goal: >= 90%).

Each project DIR's programs are built as the project builds them, as far as a script can:
a CMake project by CMake (Release, this GPU's architecture, out of its tree); folders with
their own Makefile by `make` there (the GPU's architecture passed in, `--include`
folders of helper headers a project expects installed on CPATH), every other `.cu` holding
`main` by nvcc alone (and those of folders whose make built nothing). All of it in a copy
under /tmp: the project is left as it was. Each program is run with no arguments (its own defaults),
or with those `--run-args` gives it (a TOML file: a program's path in its project -> its
arguments, as a user would run it; for programs that print their usage and exit without them)
under `fsr capture`, several at once, saving each kernel's inputs before its first launch as
`--snapshot-bytes` would (values drawn in the run's ranges, and the run's own inputs as one more
input set); then each kernel a run launched, defined in the program's
own source, goes through what `fsr optimize` runs before its first round, as it runs it:
`plan_spec` over the workspace (every program's capture kept, each kernel's from the newest
run in its own folder; the static draft checked against it, or the capture alone) and
`Optimizer.prepare` (the proof on this GPU). Proven means that the search would start: the
bench and the commands cannot disagree. Programs that do not build or launch nothing are
counted apart, and so are launched kernels that take no pointer (nothing to compare).
Programs are taken in turn; one past `--per-program` seconds waits behind the others.

Projects written for older CUDA toolkits are built with their own build files as written, plus
these compatibility shims for the newer toolkit the bench runs with (nothing else is changed):
- every nvcc call goes through a wrapper the bench writes (`nvcc-shim/nvcc` in its output
  folder): first on PATH and `$(CUDA_PATH)/bin/nvcc` for make, `CMAKE_CUDA_COMPILER` for CMake
  (its CUDA compiler launcher instead where CMake will not configure with it),
  `CUDA_NVCC_EXECUTABLE` for FindCUDA, the compiler of the single-file builds. It drops the
  architecture flags (`-arch`, `-code`, `-gencode`, in all their spellings) that this nvcc
  cannot compile for (as `nvcc --list-gpu-arch` / `--list-gpu-code` say, asked once), keeps the
  others untouched, and when it dropped some and none is left adds the bench's architecture;
  and it pre-includes <cassert> in `.cu` compiles, which older toolkits' headers included;
- CMake is configured with `CMAKE_POLICY_VERSION_MINIMUM=3.5` (CMake 4 refuses older minimums)
  and an include, run at the end of configuration, that sets every target's
  `CUDA_ARCHITECTURES` to the bench's (a project that sets `CMAKE_CUDA_ARCHITECTURES` itself,
  e.g. to "60;70", names architectures this toolkit dropped);
- make is given `GENCODE_FLAGS` (as the CUDA samples' Makefiles read it) with the bench's
  architecture, and `CUDA_PATH` a mirror of the real CUDA root (links) whose `bin/nvcc` is the
  wrapper.

    python bench/capture_coverage.py DIR... [--run-timeout 20] [--deadline 480] [--include DIR]
"""

from __future__ import annotations

import argparse
import tomllib
import inspect
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import console, save, table

from fsr_lsp.capture import Capture, CaptureError, CaptureOptions, run_capture
from fsr_lsp.drafting.captured import gets_memory
from fsr_lsp.drafting.origin import CLOCK_READER
from fsr_lsp.drafting.proof import prove_with
from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.evaluator.backends.local import LocalBackend
from fsr_lsp.evaluator.worker.worker_client import Evaluator
from fsr_lsp.kernels import Kernel, discover
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText
from fsr_lsp.workflows.optimize import Optimizer, KernelJob, plan_spec

MAIN = re.compile(r"\bint\s+main\s*\(")
HEADERS = (".h", ".cuh", ".hpp")
SOURCES = (".cu", ".cpp", ".cc")
# What projects' own build files add, given to every single-file build: dynamic parallelism,
# OpenMP on the host, the CUDA libraries.
NVCC_EXTRA = ("-rdc=true", "-Xcompiler", "-fopenmp", "-lcudadevrt", "-lgomp", "-lcublas", "-lcurand")


@dataclass
class Program:
    name: str  # relative to the project
    folder: Path  # where it runs and where its own sources are
    sources: list[Path]  # the files whose kernels count as its own
    binary: Path | None = None
    unbuilt: str = ""
    capture: Capture | None = None
    rows: list[dict] = field(default_factory=list)


def include_dirs(project: Path) -> list[Path]:
    return sorted({p.parent for p in project.rglob("*") if p.suffix in HEADERS})


def make_folders(project: Path) -> list[Path]:
    """Folders with a Makefile beside CUDA sources: the project's own build, one per program set."""
    return sorted(m.parent for m in project.rglob("Makefile") if any(m.parent.glob("*.cu")))


def nvcc_programs(project: Path, out: Path, includes: list[Path], sources: list[Path],
                  extra: tuple[str, ...] = NVCC_EXTRA, nvcc: str = "nvcc", arch: str = "native") -> list[Program]:
    """One program per `.cu` file holding `main`, built alone (`extra`: what the projects'
    build files add), or, where that fails, with the helper sources beside it (`nvcc`: the
    compiler, e.g. the bench's shim; `arch`: nvcc's `-arch`)."""
    compiler = nvcc

    def build(source: Path) -> Program:
        prog = Program(str(source.relative_to(project)), source.parent, [source])
        binary = out / (prog.name.replace("/", "_") + ".bin")

        def nvcc(*files: Path) -> list[str]:
            return [compiler, "-O2", f"-arch={arch}", "-std=c++17", "-w", *[f"-I{d}" for d in includes],
                    "-o", str(binary), *map(str, files), *extra]

        prog.binary, prog.unbuilt = _run_build(nvcc(source), source.parent, binary)
        helpers = _helper_sources(source)
        if prog.binary is None and helpers:
            # a sample built with the helper sources beside it (the ones without a main of their own;
            # the first line a failed build names is not always the missing symbol: tried again whatever it says)
            prog.binary, prog.unbuilt = _run_build(nvcc(source, *helpers), source.parent, binary)
            prog.sources += helpers
        return prog

    with ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(build, sources))


def _helper_sources(source: Path) -> list[Path]:
    """The sources beside a program's own that hold no main: helpers it is linked with."""
    return sorted(p for p in source.parent.iterdir() if p != source and p.suffix in SOURCES
                  and not MAIN.search(p.read_text(errors="replace")))


def make_programs(project: Path, folders: list[Path], helpers: list[Path], shim: Path | None = None,
                  arch: str = "native") -> list[Program]:
    """`make` in each folder, with this GPU's architecture (`arch`, nvcc's `-arch`; the helper
    headers' folders on CPATH; `shim`, the bench's nvcc wrapper, first on PATH and as
    `$(CUDA_PATH)/bin/nvcc`); each executable it leaves is a program whose own sources are the
    folder's."""
    cuda = Path(_real_nvcc() or "/usr/local/cuda/bin/nvcc").resolve().parent.parent
    env = dict(os.environ, CPATH=":".join(map(str, helpers)))
    if shim is not None:
        env["PATH"] = f"{shim.parent}{os.pathsep}{env.get('PATH', '')}"
        cuda = _shimmed_root(shim, cuda)
    words = [f"CUDA_PATH={cuda}", f"GENCODE_FLAGS=-arch={arch}"]

    def build(folder: Path) -> list[Program]:
        before = _executables(folder)
        _, why = _run_build(["make", "-k", "-j4", *words], folder, None, env)
        made = sorted(_executables(folder) - before)
        sources = sorted(p for p in folder.iterdir() if p.suffix in SOURCES + HEADERS)
        name = str(folder.relative_to(project))
        if not made:
            return [Program(name, folder, sources, unbuilt=f"make: {why or 'built no program'}")]
        inputs = _make_inputs(folder, words, env)
        return [Program(f"{name}/{b.name}", folder, _sources_of(b, folder, inputs) or sources, binary=b) for b in made]

    with ThreadPoolExecutor(max_workers=8) as pool:
        return [p for progs in pool.map(build, folders) for p in progs]


def _shimmed_root(shim: Path, real: Path) -> Path:
    """The CUDA root `real` as links, its `bin/nvcc` the bench's wrapper: a Makefile's
    `$(CUDA_PATH)/bin/nvcc` goes through the wrapper, its headers and libraries are the real ones."""
    root = shim.parent / "cuda"
    if not root.is_dir():
        (root / "bin").mkdir(parents=True)
        for entry in real.iterdir():
            if entry.name != "bin":
                (root / entry.name).symlink_to(entry)
        for entry in (real / "bin").iterdir() if (real / "bin").is_dir() else ():
            if entry.name != "nvcc":
                (root / "bin" / entry.name).symlink_to(entry)
        (root / "bin" / "nvcc").symlink_to(shim)
    return root


def _make_inputs(folder: Path, words: list[str], env: dict) -> dict[Path, list[Path]]:
    """What each file make builds is made from, read from its commands (`make -n -B`, with the
    variables `words` the build was given), so a folder holding several programs (each `.cu`
    its own, the same kernel name in two of them) gives each program its own sources."""
    proc = subprocess.run(["make", "-n", "-B", *words], cwd=folder,
                          capture_output=True, text=True, timeout=60, env=env)
    inputs: dict[Path, list[Path]] = {}
    for line in proc.stdout.splitlines():
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if "-o" not in words[:-1]:
            continue
        target = folder / words[words.index("-o") + 1]
        inputs[target.resolve()] = [(folder / w).resolve() for w in words
                                    if Path(w).suffix in SOURCES + (".o",) and (folder / w).resolve() != target.resolve()]
    return inputs


def _sources_of(binary: Path, folder: Path, inputs: dict[Path, list[Path]]) -> list[Path]:
    seen: list[Path] = []
    todo = list(inputs.get(binary.resolve(), []))
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.append(f)
        todo += inputs.get(f, [])
    own = [f for f in seen if f.suffix in SOURCES and f.exists()]
    return sorted(own + [h for h in folder.iterdir() if h.suffix in HEADERS]) if own else []


def cmake_roots(project: Path) -> list[Path]:
    """Folders with a CMakeLists.txt whose parent folders have none: each a CMake build of its own."""
    lists = sorted(m.parent for m in project.rglob("CMakeLists.txt"))
    return [d for d in lists if not any(other != d and other in d.parents for other in lists)]


def cmake_programs(project: Path, out: Path, roots: list[Path], arch: str, shim: Path | None = None) -> list[Program]:
    """Each root configured and built by CMake (Release, this GPU's architecture `arch` for every
    target, whatever the project sets; `shim`, the bench's nvcc wrapper, as CMake's CUDA compiler
    and FindCUDA's nvcc), out of its tree; each executable it leaves is a program whose own
    sources are the root's CUDA sources (which target holds which source CMake does not say
    without its file API)."""
    out.mkdir(parents=True, exist_ok=True)
    every_target = out / "cuda_architectures.cmake"
    every_target.write_text(_EVERY_TARGET.replace("@ARCH@", arch))
    # the shim as CMake's CUDA compiler (its device links too), or, where CMake will not configure
    # with it, as the compilers' launcher (compiles only); FindCUDA's nvcc either way
    shimmed = [[f"-DCMAKE_CUDA_COMPILER={shim}", f"-DCUDA_NVCC_EXECUTABLE={shim}"],
               [f"-DCMAKE_CUDA_COMPILER_LAUNCHER={shim}", f"-DCUDA_NVCC_EXECUTABLE={shim}"]] if shim else [[]]

    def build(root: Path) -> list[Program]:
        name = str(root.relative_to(project)) if root != project else "."
        folder = out / ("cmake_" + re.sub(r"\W+", "_", name))
        started = time.time()
        for words in shimmed:
            shutil.rmtree(folder, ignore_errors=True)
            configure = ["cmake", "-S", str(root), "-B", str(folder), "-DCMAKE_BUILD_TYPE=Release",
                         f"-DCMAKE_CUDA_ARCHITECTURES={arch}", "-DCMAKE_POLICY_VERSION_MINIMUM=3.5",
                         f"-DCMAKE_PROJECT_INCLUDE={every_target}", *words]
            _, why = _run_build(configure, root, None)
            if not why:
                break
        if not why:
            _, why = _run_build(["cmake", "--build", str(folder), "-j", "16"], root, None)
        made = sorted(p for p in folder.rglob("*") if _elf(p) and "CMakeFiles" not in p.parts) if folder.is_dir() else []
        # EXECUTABLE_OUTPUT_PATH / RUNTIME_OUTPUT_DIRECTORY may put a program beside the sources
        made += sorted(p for p in root.rglob("*") if folder not in p.parents and "CMakeFiles" not in p.parts
                       and _elf(p) and p.stat().st_mtime >= started)
        sources = sorted(p for p in root.rglob("*") if p.suffix in SOURCES + HEADERS)
        if not made:
            return [Program(f"{name} (cmake)", root, sources, unbuilt=f"cmake: {why or 'built no program'}")]
        return [Program(f"{name}/{b.name} (cmake)", b.parent if b.parent != folder else root, sources, binary=b)
                for b in made]

    with ThreadPoolExecutor(max_workers=4) as pool:
        return [p for progs in pool.map(build, roots) for p in progs]


# Included after each project() call (CMAKE_PROJECT_INCLUDE): once, at the end of the top
# directory's configuration (every add_subdirectory done by then), every target of every directory
# gets the bench's architecture, whatever CMAKE_CUDA_ARCHITECTURES the project set.
_EVERY_TARGET = """\
get_property(_fsr_bench_deferred GLOBAL PROPERTY FSR_BENCH_CUDA_ARCHITECTURES_DEFERRED)
if(NOT _fsr_bench_deferred)
  set_property(GLOBAL PROPERTY FSR_BENCH_CUDA_ARCHITECTURES_DEFERRED ON)
  function(_fsr_bench_cuda_architectures dir)
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_property(type TARGET "${target}" PROPERTY TYPE)
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        set_property(TARGET "${target}" PROPERTY CUDA_ARCHITECTURES "@ARCH@")
      endif()
    endforeach()
    get_property(subdirectories DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirectories)
      _fsr_bench_cuda_architectures("${sub}")
    endforeach()
  endfunction()
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.19)  # cmake_language(DEFER)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}"
                   CALL _fsr_bench_cuda_architectures "${CMAKE_SOURCE_DIR}")
  endif()
endif()
"""


def shim_nvcc_args(args: list[str], supported: set[int], arch: str) -> list[str]:
    """nvcc's arguments as the bench's wrapper passes them on: the architecture flags naming an
    architecture outside `supported` (the numbers this nvcc lists) dropped, the others untouched;
    `-arch={arch}` added when some were dropped and no architecture is left; `-include cassert`
    before a `.cu` compile. (Copied into the wrapper: only `re` here.)"""
    import re

    specials = ("native", "all", "all-major")

    def ok(value: str) -> bool:
        name = value.strip().strip("\"'")
        m = re.fullmatch(r"(?:sm|compute|lto)_(\d+)[a-z]?", name)
        return name in specials or m is None or int(m.group(1)) in supported

    def names(value: str) -> list[str]:
        return [v for v in value.strip().strip("\"'").strip("[]").split(",") if v]

    flags = {"-arch": "arch", "--gpu-architecture": "arch", "-code": "code", "--gpu-code": "code",
             "-gencode": "gencode", "--generate-code": "gencode"}
    items: list[tuple[str, list[str]]] = []  # (kind, the words as passed on), kind "" for any other word
    dropped = False
    i = 0
    while i < len(args):
        word = args[i]
        flag, _, value = word.partition("=")
        kind = flags.get(flag)
        if kind is None or (not value and i + 1 >= len(args)):
            items.append(("", [word]))
            i += 1
            continue
        joined = bool(value)
        if not joined:
            value = args[i + 1]
        i += 1 if joined else 2

        def spelled(new: str, flag: str = flag, joined: bool = joined) -> list[str]:
            return [f"{flag}={new}"] if joined else [flag, new]

        original = spelled(value)
        if kind == "gencode":
            m = re.fullmatch(r"\s*arch=([^,]+),\s*code=(.+)", value)
            if m is None:
                items.append((kind, original))
                continue
            codes = names(m.group(2))
            kept = [c for c in codes if ok(c)]
            if not ok(m.group(1)) or not kept:
                dropped = True
            elif kept == codes:
                items.append((kind, original))
            else:
                dropped = True
                items.append((kind, spelled(f"arch={m.group(1)},code=[{','.join(kept)}]")))
            continue
        values = names(value)
        kept = [v for v in values if ok(v)]
        if kept == values:
            items.append((kind, original))
        else:
            dropped = True
            if kept:
                items.append((kind, spelled(",".join(kept))))
    if dropped and not any(kind in ("arch", "gencode") for kind, _ in items):
        # no architecture left: the bench's (a -code left alone would not go with it)
        items = [item for item in items if item[0] != "code"] + [("arch", [f"-arch={arch}"])]
    out = [w for _, words in items for w in words]
    if any(w.endswith(".cu") and not w.startswith("-") for w in args) and "cassert" not in out:
        out = ["-include", "cassert", *out]
    return out


def _real_nvcc(shim_dir: Path | None = None) -> str | None:
    """The nvcc on PATH (the bench's own wrapper's folder left out), by absolute path."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and (shim_dir is None or Path(p).resolve() != shim_dir.resolve())
                           and not Path(p, "fsr-bench-nvcc-shim").exists())
    found = shutil.which("nvcc", path=path) or shutil.which("/usr/local/cuda/bin/nvcc")
    return str(Path(found).absolute()) if found else None


def nvcc_shim(out: Path, arch: str) -> Path | None:
    """The bench's nvcc wrapper, written to `out`/nvcc-shim/nvcc: the real nvcc (by absolute path)
    with `shim_nvcc_args`' arguments, the architectures it supports asked once, here. Also works
    as a compiler launcher (its first argument nvcc itself). None when there is no nvcc."""
    folder = out / "nvcc-shim"
    real = _real_nvcc(folder)
    if real is None:
        return None
    supported: set[int] = set()
    for ask in ("--list-gpu-arch", "--list-gpu-code"):
        listed = subprocess.run([real, ask], capture_output=True, text=True, timeout=60).stdout
        supported |= {int(n) for n in re.findall(r"^(?:sm|compute|lto)_(\d+)", listed, re.M)}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fsr-bench-nvcc-shim").write_text("a marker: this folder's nvcc is the bench's wrapper\n")
    shim = folder / "nvcc"
    shim.write_text(
        f"#!{sys.executable} -IS\n"
        "# The capture bench's nvcc: compatibility shims for projects written for older toolkits.\n"
        "import os\nimport sys\n\n"
        f"REAL = {real!r}\nSUPPORTED = {sorted(supported)!r}\nARCH = {arch!r}\n\n\n"
        f"{inspect.getsource(shim_nvcc_args)}\n\n"
        "args = sys.argv[1:]\n"
        "exe = REAL\n"
        "if args and os.path.isabs(args[0]) and os.path.basename(args[0]) == 'nvcc':  # as a launcher\n"
        "    exe, args = args[0], args[1:]\n"
        "if not SUPPORTED:  # the real nvcc listed nothing: passed on as it is\n"
        "    os.execv(exe, [exe, *args])\n"
        "os.execv(exe, [exe, *shim_nvcc_args(args, set(SUPPORTED), ARCH)])\n")
    shim.chmod(0o755)
    return shim


def nvcc_arch(cmake_arch: str) -> str:
    """nvcc's `-arch` for a CMake architecture list: "90" (or "90-real;80") is sm_90, "native" native."""
    first = cmake_arch.split(";")[0].removesuffix("-real").removesuffix("-virtual")
    return f"sm_{first}" if first[:1].isdigit() else first


def all_programs(project: Path, out: Path, includes: list[Path], helpers: list[Path],
                 cmake_arch: str = "native") -> list[Program]:
    """A CMake project by CMake; folders with their own Makefile by make; every other `.cu`
    holding `main` (and those of folders whose make or CMake built nothing) by nvcc. Every nvcc
    call goes through the bench's wrapper (`nvcc_shim`), the architecture `cmake_arch` for all."""
    arch = nvcc_arch(cmake_arch)
    shim = nvcc_shim(out, arch)
    roots = cmake_roots(project) if shutil.which("cmake") else []
    by_cmake = cmake_programs(project, out, roots, cmake_arch, shim)
    under_cmake = [p.folder for p in by_cmake if p.binary is not None]
    cmake_built = {r for r in roots if any(f == r or r in f.parents for f in under_cmake)}
    made = [p for p in make_programs(project, make_folders(project), helpers, shim, arch)
            if not any(r == p.folder or r in p.folder.parents for r in cmake_built)]
    built_by_make = {p.folder for p in made if p.binary is not None}
    mains = sorted(p for p in project.rglob("*.cu") if p.parent not in built_by_make
                   and not any(r == p.parent or r in p.parents for r in cmake_built)
                   and MAIN.search(p.read_text(errors="replace")))
    singles = nvcc_programs(project, out, includes, mains, nvcc=str(shim or "nvcc"), arch=arch)
    failed = {p.folder: p.unbuilt for p in [*by_cmake, *made] if p.binary is None and p.unbuilt}
    for single in singles:  # the project's own build's failure is the one to read first
        why = next((w for f, w in failed.items() if f == single.folder or f in single.folder.parents), "")
        if single.unbuilt and why:
            single.unbuilt = f"{why[:300]}; then alone by nvcc: {single.unbuilt}"
    retried = {p.folder for p in singles}
    return [p for p in by_cmake if p.binary is not None or not any(p.folder in f.parents or p.folder == f
                                                                   for f in retried)] + \
        [p for p in made if p.binary is not None or p.folder not in retried] + singles


def _elf(path: Path) -> bool:
    """An executable ELF file (a built program, not a script)."""
    if not path.is_file() or not os.access(path, os.X_OK) or ".so" in path.suffixes:
        return False  # a shared library is no program
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def _executables(folder: Path) -> set[Path]:
    return {p for p in folder.iterdir() if p.suffix not in SOURCES + HEADERS and _elf(p)}


def _run_build(cmd: list[str], cwd: Path, binary: Path | None, env: dict | None = None) -> tuple[Path | None, str]:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=240, env=env)
    except subprocess.TimeoutExpired:
        return None, "the build took over 240 s"
    lines = (proc.stderr + proc.stdout).splitlines()
    errors = [line for line in lines if re.search(r"error|cannot find|undefined reference", line, re.I)
              and not re.match(r"(collect2|make(\[\d+\])?):", line)] or lines[-1:] or ["?"]
    return (binary, "") if proc.returncode == 0 else (None, errors[0][:160])


def capture_all(project: Path, progs: list[Program], timeout: float, parallel: int, snapshot_bytes: int,
                run_args: dict[str, list[str]] | None = None) -> None:
    """Every built program under capture, `parallel` at a time (each gets a folder of its own),
    with the arguments `run_args` gives it by its name."""
    def one(prog: Program) -> None:
        try:
            argv = [str(prog.binary), *(run_args or {}).get(prog.name, [])]
            prog.capture = run_capture(argv, project,
                                       CaptureOptions(timeout=timeout, cwd=prog.folder, snapshot_bytes=snapshot_bytes),
                                       on_output=lambda _: None)
        except CaptureError as e:
            prog.unbuilt = f"capture: {e}"

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(one, [p for p in progs if p.binary is not None]))


Work = tuple[dict, Path, Kernel]


def spec_rows(prog: Program) -> list[Work]:
    """A row per kernel the program launched that it defines itself: what to resolve and
    prove, or why there is nothing to compare."""
    kernels = {k.name: (src, k) for src in prog.sources if src.suffix in (".cu", ".cuh")
               for k in discover(SourceText(src.read_text(errors="replace"))).kernels}
    launched = sorted({x.base for x in prog.capture.launches} & set(kernels)) if prog.capture else []
    out = []
    for name in launched:
        src, kernel = kernels[name]
        row = {"program": prog.name, "kernel": name}
        if not gets_memory(kernel, prog.capture.of(name)):
            row.update(status="takes no pointers", why="nothing to compare: left out of the share")
        out.append((row, src, kernel))
        prog.rows.append(row)
    return out


def prove_row(optimizer: Optimizer, index: LaunchIndex, project: Path, settings: Settings, row: dict, src: Path,
              kernel: Kernel) -> None:
    """What `fsr optimize` runs before its first round, as it runs it: the spec `plan_spec`
    resolves (attached, captured, drafted), then `Optimizer.prepare` (the proof). Proven means
    that the search would start."""
    text = src.read_text(errors="replace")
    t0, stages = time.monotonic(), row.setdefault("stages", [])

    def stage(what: Any) -> None:  # where a slow proof's seconds went, in the results file
        stages.append(f"{time.monotonic() - t0:7.1f} s  {getattr(what, 'message', what)}"[:300])

    plan = plan_spec(index, src, text, kernel, settings)
    row["origin"] = plan.spec.origin
    if plan.spec.spec is None:
        clock = any(x.startswith(CLOCK_READER[:24]) for x in plan.spec.problems)
        row.update(status="reads the clock" if clock else "no spec", why="; ".join(plan.spec.problems)[:400])
        return
    job = KernelJob(text, src, kernel.name, project, settings, plan)
    if plan.draft is None:  # the file's own block, or one inferred from the signature: searched as it is,
        # the original checked by the search's first measurement; proven here as the listing proves it
        proof = prove_with(optimizer.backend(settings), text, kernel.name, None, job.eval_options(), timeout=120,
                           on_stage=stage)
        row.update(status="proven" if proof.proven else "failed", why="" if proof.proven else proof.message[:400])
        return
    stopped = optimizer.prepare(job, stage)
    row.update(status="proven" if stopped is None else "failed", why="" if stopped is None else stopped.message[:1200])
    if stopped is not None:  # the spec the proof refused, in the results file: what to read first
        row["spec"] = (job.plan.draft or plan.spec.spec or "")[:3000]


def prove_rows(project: Path, work: list[Work], settings: Settings, provers: int, deadline: float,
               per_program: float) -> None:
    """The rows, `provers` at a time, each prover an evaluator worker of its own on this GPU (a
    proof's verdict does not depend on timing); programs taken in turn (each one's first kernel
    before any one's second), the one that has used the least time first, and one past
    `per_program` seconds only when no other is left: a slow program leaves its own kernels
    unreached at the deadline, not the other programs'."""
    todo = _in_turn([w for w in work if "status" not in w[0]])
    backends = [LocalBackend(Evaluator(0)) for _ in range(max(1, min(provers, len(todo))))]
    index = LaunchIndex(project, first_wait=None)  # the workspace's launches and merged captures, as the CLI reads them
    spent: dict[str, float] = {}
    lock = threading.Lock()

    def run(backend: LocalBackend) -> None:
        optimizer = Optimizer(backend)
        while True:
            with lock:
                if not todo:
                    return
                # the program that has used the least time goes next: a slow one waits behind the rest
                row, src, kernel = todo.pop(min(range(len(todo)), key=lambda i: (
                    spent.get(todo[i][0]["program"], 0.0) > per_program, spent.get(todo[i][0]["program"], 0.0), i)))
            if time.monotonic() > deadline:
                row.update(status="not reached")
                continue
            t0 = time.monotonic()
            try:
                prove_row(optimizer, index, project, settings, row, src, kernel)
            except Exception as e:  # noqa: BLE001  (a traceback is counted, and the rest goes on)
                row.update(status="traceback", why=f"{type(e).__name__}: {e}"[:400])
            row["seconds"] = round(time.monotonic() - t0, 1)
            with lock:
                spent[row["program"]] = spent.get(row["program"], 0.0) + row["seconds"]
            console.print(f"{project.parent.name} {row['program']} {row['kernel']}: {row.get('origin', '')}, "
                          f"{row['status']} ({row['seconds']} s)", highlight=False)

    try:
        with ThreadPoolExecutor(max_workers=len(backends)) as pool:
            list(pool.map(run, backends))
    finally:
        for backend in backends:
            backend.close()


def _in_turn(work: list[Work]) -> list[Work]:
    """Each program's first kernel, then each one's second, ..."""
    by_program: dict[str, list[Work]] = {}
    for w in work:
        by_program.setdefault(w[0]["program"], []).append(w)
    out: list[Work] = []
    while any(by_program.values()):
        for rows in by_program.values():
            if rows:
                out.append(rows.pop(0))
    return out


def measure(project: Path, args: argparse.Namespace, deadline: float) -> dict:
    name = project.name
    out = Path("/tmp/fsr-capture-coverage") / project.name
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(project, out / "tree", ignore=shutil.ignore_patterns(".git", ".fsr"))
    project = out / "tree"  # built, captured and proven in a copy: the project itself is left as it was
    includes = include_dirs(project) + [d.resolve() for d in args.include]
    t0 = time.monotonic()
    progs = all_programs(project, out, includes, [d.resolve() for d in args.include])
    built = time.monotonic()
    capture_all(project, progs, args.run_timeout, args.parallel, args.snapshot_bytes,
                run_arguments(args.run_args, name))
    by_make = sum(p.binary is not None and p.binary.parent != out for p in progs)
    console.print(f"{name}: {len(progs)} programs ({by_make} built by make) in {built - t0:.0f} s, "
                  f"captured in {time.monotonic() - built:.0f} s", highlight=False)
    work = [w for prog in progs if prog.capture is not None for w in spec_rows(prog)]
    settings = Settings(include_paths=tuple(map(str, includes)))  # as the user's workspace settings would say
    prove_rows(project, work, settings, args.provers, deadline, args.per_program)
    rows = [r for p in progs for r in p.rows]
    launched_rows = [r for r in rows if r["status"] not in ("not reached", "takes no pointers")]
    proven = sum(r["status"] == "proven" for r in launched_rows)
    clocks = sum(r["status"] == "reads the clock" for r in launched_rows)
    return {"project": name, "by_make": by_make, "programs": len(progs),
            "unbuilt": [f"{p.name}: {p.unbuilt}" for p in progs if p.binary is None or p.unbuilt],
            "silent": [p.name for p in progs if p.capture is not None and not p.rows],
            "rows": rows, "not_reached": sum(r["status"] == "not reached" for r in rows),
            "no_pointers": sum(r["status"] == "takes no pointers" for r in rows),
            "launched": len(launched_rows), "proven": proven, "clocks": clocks,
            "tracebacks": sum(r["status"] == "traceback" for r in rows),
            "share": proven / len(launched_rows) if launched_rows else 0.0,
            "share_checkable": proven / (len(launched_rows) - clocks) if len(launched_rows) > clocks else 0.0}


def run_arguments(path: Path | None, project: str) -> dict[str, list[str]]:
    """The arguments `--run-args` gives the programs of `project`: its table in the file
    (`[PROJECT]`, then `"path/in/project.cu" = ["256", "1000000"]`)."""
    if path is None:
        return {}
    table = tomllib.loads(path.read_text()).get(project, {})
    return {name: [str(a) for a in argv] for name, argv in table.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("projects", type=Path, nargs="+")
    parser.add_argument("--run-timeout", type=float, default=20.0)
    parser.add_argument("--deadline", type=float, default=480.0, help="seconds for everything; the rest is 'not reached'")
    parser.add_argument("--include", type=Path, action="append", default=[],
                        help="a folder of helper headers the projects expect installed (repeatable)")
    parser.add_argument("--parallel", type=int, default=6, help="programs captured at once")
    parser.add_argument("--snapshot-bytes", type=int, default=64 << 20,
                        help="save a kernel's inputs before its first launch when they total at most this (0: never)")
    parser.add_argument("--provers", type=int, default=3, help="proofs at once, each in its own evaluator worker")
    parser.add_argument("--per-program", type=float, default=120.0,
                        help="seconds of proofs after which a program's kernels wait for every other program's")
    parser.add_argument("--run-args", type=Path, default=None,
                        help="TOML: [PROJECT] then \"program path\" = [arguments], for programs that need them")
    parser.add_argument("--save-as", default="capture_coverage", help="the results file's name (two runs side by side)")
    args = parser.parse_args()
    deadline = time.monotonic() + args.deadline
    results = []
    for project in args.projects:  # saved as each ends: a run cut short keeps the projects it finished
        results.append(measure(project.resolve(), args, deadline))
        save(args.save_as, {"date": time.strftime("%Y-%m-%d"), "results": results, "complete": False})
        r = results[-1]
        console.print(f"{r['project']}: {r['proven']} of {r['launched']} launched kernels proven, "
                      f"{r['not_reached']} not reached", highlight=False)
    report(results)
    save(args.save_as, {"date": time.strftime("%Y-%m-%d"), "results": results, "complete": True})
    return 0


def report(results: list[dict]) -> None:
    table("Kernels launched by each project's own programs, with a proven spec (capture + proof on this GPU)",
          ["project", "programs", "by make", "did not build", "launched nothing", "launched, no pointers",
           "not reached", "launched, taking pointers", "of them timing (read the clock)", "proven", "share",
           "share of the rest", "tracebacks"],
          [[r["project"], r["programs"], r["by_make"], len(r["unbuilt"]), len(r["silent"]), r["no_pointers"],
            r["not_reached"], r["launched"], r["clocks"], r["proven"], r["share"], r["share_checkable"],
            r["tracebacks"]]
           for r in results])
    for r in results:
        for row in r["rows"]:
            if row["status"] not in ("proven", "takes no pointers"):
                console.print(f"  {r['project']} {row['program']} {row['kernel']}: {row['status']} "
                              f"({row.get('origin', '')}) {row.get('why', '')[:240]}", highlight=False)
        for line in r["unbuilt"]:
            console.print(f"  {r['project']} did not build: {line}", highlight=False)
        for line in r["silent"]:
            console.print(f"  {r['project']} launched none of its own kernels: {line}", highlight=False)
    total_l = sum(r["launched"] for r in results)
    total_p = sum(r["proven"] for r in results)
    total_c = sum(r["clocks"] for r in results)
    console.print(f"total: {total_p} of {total_l} launched kernels proven ({100 * total_p / max(total_l, 1):.0f}%); "
                  f"{total_p} of the {total_l - total_c} that do not read the clock "
                  f"({100 * total_p / max(total_l - total_c, 1):.0f}%)")


if __name__ == "__main__":
    sys.exit(main())
