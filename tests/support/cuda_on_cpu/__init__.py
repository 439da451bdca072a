"""CUDA kernels run on the CPU, so that a rewrite's correctness is tested where there is no GPU.

`compile_on_cpu` stands in for `compile_kernel` (same arguments, same result record): it builds
the translation unit as C++ with `shim.h` (CUDA's built-ins on threads, see there) into a shared
library. `EmulatedSession` is the CPU test double of the GPU session (tests/support/fake_gpu.py) that
loads such a library and launches the kernel with the job's grid, block and arguments. Together
they let `prepare()` and `run_job()`, the evaluator's own path, judge a real kernel and a real
rewrite: every check, the double-precision run of the accuracy criterion included.

Timings from it mean nothing; its verdicts on correctness are the evaluator's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from fsr_lsp.evaluator.compile.compiler import KernelRef
from fsr_lsp.evaluator.compile.compiler_output import OWN_FILE
from fsr_lsp.evaluator.compile.device_unit import device_unit, error_lines
from fsr_lsp.evaluator.records import CompileResult, EvalResult, KernelBinary, LaunchPlan, Resources, TimingConfig
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.device_variables import device_variables

from ..fake_gpu import FakeKernel, FakeSession

SHIM = Path(__file__).with_name("shim.h")
INCLUDE = Path(__file__).with_name("include")  # CUDA's headers, empty: the shim defines what they would
COMPILER = "cpu-emulated"
# Built-ins that make the threads of a block depend on each other: with none, they run one after another.
_TOGETHER = re.compile(r"__syncthreads|__syncwarp|__shfl|__ballot_sync|__any_sync|__all_sync")
_EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?([\w:<>\s]+?)\s*(\w+)\s*\[\s*\]\s*;")
_CACHE = Path(tempfile.gettempdir()) / f"fsr-cuda-on-cpu-{os.getuid()}"


def cxx() -> str | None:
    return shutil.which("g++")


def compile_on_cpu(source: str, ref: KernelRef, options: Any = None) -> CompileResult:
    """The kernel `ref` of `source` built for the CPU; a failed build is a failed compile, with g++'s log."""
    started = time.perf_counter()
    kernel = find_kernel(source, ref.name)
    if kernel is None:
        return CompileResult(False, None, f"error: no kernel named {ref.name}", 0.0, compiler=COMPILER)
    params = ["ptr" if p.is_pointer else (p.dtype or p.base_type) for p in kernel.params]
    macros = tuple(f for f in getattr(options, "flags", ()) if f.startswith(("-D", "-U")))  # the build's, as nvcc's
    built = _built(source, ref, macros)
    if isinstance(built, str):  # host code (`<<<...>>>`) is no C++: without it, as prepare() does for nvcc
        device = device_unit(source, (), error_lines(built))
        built = _built(device.text, ref, macros) if device is not None else built
    if isinstance(built, str):
        return CompileResult(False, None, built, time.perf_counter() - started, compiler=COMPILER)
    variables = [v.name for v in device_variables(source) if v.at_file_scope]
    entry = json.dumps({"library": str(built), "params": params, "variables": variables})
    return CompileResult(True, KernelBinary(cubin=entry.encode(), entry=ref.name, compiler=COMPILER, arch="cpu"),
                         "", time.perf_counter() - started, compiler=COMPILER, resources=Resources())


def _built(source: str, ref: KernelRef, macros: tuple[str, ...] = ()) -> Path | str:
    """The shared library of `source`'s kernel `ref` (with the build's -D and -U), or g++'s errors."""
    unit = _unit(source, ref)
    digest = hashlib.sha256(unit.encode() + SHIM.read_bytes() + "\0".join(macros).encode()).hexdigest()[:24]
    library = _CACHE / f"{digest}.so"
    if not library.exists():
        folder = _CACHE / digest  # the file named as nvcc's is, so that the evaluator reads g++'s errors on it
        folder.mkdir(parents=True, exist_ok=True)
        (folder / OWN_FILE).write_text(unit)
        built = subprocess.run([cxx() or "g++", "-std=gnu++20", "-O1", "-shared", "-fPIC", "-pthread", "-w",
                                "-fsanitize=alignment", "-fsanitize-recover=alignment",
                                *macros, "-include", str(SHIM), "-I", str(INCLUDE), "-o", f"{library}.tmp", "-x", "c++",
                                OWN_FILE],
                               capture_output=True, text=True, cwd=folder)
        if built.returncode != 0:
            return built.stderr
        os.replace(f"{library}.tmp", library)
    return library


def _unit(source: str, ref: KernelRef) -> str:
    """The source as C++, with an entry point that calls the kernel with arguments by address."""
    # a macro, not a pointer variable: at file scope, where it is usually declared, a variable
    # would be set once, when the library loads, before any launch gives the memory
    text = _EXTERN_SHARED.sub(lambda m: f"#define {m.group(2)} (reinterpret_cast<{m.group(1)}*>(fsr_emu::dynamic_smem))",
                              source)
    threaded = "true" if _TOGETHER.search(source) else "false"
    return (text + "\n\n#include <utility>\nnamespace fsr_entry {\n"
            "template <class... P, std::size_t... I>\n"
            "void call(void (*f)(P...), void** a, std::index_sequence<I...>) {\n"
            "  f(*static_cast<std::remove_cv_t<P>*>(a[I])...);\n}\n"
            "template <class... P> void call(void (*f)(P...), void** a) { call(f, a, std::index_sequence_for<P...>{}); }\n"
            f"void body(void* a) {{ call(&::{ref.name_expression}, static_cast<void**>(a)); }}\n}}\n"
            'extern "C" int fsr_launch(const unsigned* grid, const unsigned* block, unsigned smem, void** args) {\n'
            f"  return fsr_emu::launch(grid, block, smem, {threaded}, fsr_entry::body, args);\n}}\n")


class EmulatedKernel(FakeKernel):
    """A kernel built by `compile_on_cpu`, launched as the GPU session launches one."""

    def __init__(self, binary: KernelBinary) -> None:
        entry = json.loads(binary.cubin)
        super().__init__(fn=lambda *a: None, digest=entry["library"])
        self.params: list[str] = entry["params"]
        self.library = ctypes.CDLL(entry["library"])
        self.library.fsr_launch.restype = ctypes.c_int
        self.state = _EmulatedState(self.library, {n: _symbol_sizes(self.digest).get(n, 0) for n in entry["variables"]})

    def global_size(self, name: str) -> int:
        """A `__constant__` symbol's bytes (plain globals here: the shim defines the word away)."""
        return _symbol_sizes(self.digest).get(name, 0)

    def set_global(self, name: str, data: bytes) -> None:
        size = self.global_size(name)
        ctypes.memmove(ctypes.addressof(ctypes.c_char.in_dll(self.library, name)), data[:size], min(size, len(data)))

    def launch(self, args: list[Any], launch: LaunchPlan) -> None:
        self.launches += 1
        values = [np.frombuffer(a, dtype=np.uint8).copy() if isinstance(a, bytes)  # a struct passed by value
                  else np.array([a if a is not None else 0], dtype=np.uintp if kind == "ptr" else kind)
                  for a, kind in zip(args, self.params)]
        addresses = (ctypes.c_void_p * len(values))(*[v.ctypes.data for v in values])
        grid = (ctypes.c_uint * 3)(*launch.grid)
        block = (ctypes.c_uint * 3)(*launch.block)
        failed = self.library.fsr_launch(grid, block, ctypes.c_uint(launch.smem), addresses)
        if failed == 1:
            raise RuntimeError("deadlock: a barrier or warp shuffle was not reached by every thread of its block or warp")
        if failed == 2:
            raise RuntimeError("misaligned address: an access not aligned to its type's size, which faults on a GPU")
        if failed == 3:
            raise RuntimeError("a warp shuffle read a lane that had returned (or is past the warp's last): undefined")


@functools.lru_cache(maxsize=None)
def _symbol_sizes(library: str) -> dict[str, int]:
    """Data symbols of a built library and their sizes (`nm -S`)."""
    listing = subprocess.run(["nm", "-S", "--defined-only", library], capture_output=True, text=True).stdout
    sizes = {}
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "bBdDrR":
            sizes[parts[3]] = int(parts[1], 16)
    return sizes


class _EmulatedState:
    """gpu/module_state.py's `ModuleState` over the library's globals: the file's `__device__`
    variables (plain globals here), their bytes as loaded kept to restore and compare."""

    def __init__(self, library: ctypes.CDLL, sizes: dict[str, int]) -> None:
        self.addresses = {}
        for name, size in sizes.items():
            try:  # a `static` one is no dynamic symbol: out of reach here
                self.addresses[name] = (ctypes.addressof(ctypes.c_char.in_dll(library, name)), size)
            except ValueError:
                continue
        self.initial = {n: ctypes.string_at(a, size) for n, (a, size) in self.addresses.items()}

    def __len__(self) -> int:
        return len(self.addresses)

    def restore(self) -> None:
        for name, (address, size) in self.addresses.items():
            ctypes.memmove(address, self.initial[name], size)

    def changed(self) -> list[str]:
        return [n for n, (address, size) in self.addresses.items() if ctypes.string_at(address, size) != self.initial[n]]


class EmulatedSession(FakeSession):
    """The CPU test double of a GPU session, running kernels built by `compile_on_cpu`."""

    def load(self, binary: KernelBinary, dtypes: list[str | None]) -> FakeKernel:
        if binary.compiler != COMPILER:
            return super().load(binary, dtypes)
        key = binary.cubin.decode()
        if key not in self.loaded:
            self.loaded[key] = EmulatedKernel(binary)
        return self.loaded[key]


@contextlib.contextmanager
def compiling_on_cpu() -> Iterator[None]:
    """`compile_on_cpu` in place of `compile_kernel` wherever `prepare` compiles: the original's
    build (job/prepare.py) and the candidate's (job/candidate_compile.py)."""
    from unittest import mock

    from fsr_lsp.evaluator.job import candidate_compile, prepare as preparing

    with mock.patch.object(preparing, "compile_kernel", compile_on_cpu), \
            mock.patch.object(candidate_compile, "compile_kernel", compile_on_cpu):
        yield


def evaluate_on_cpu(source: str, kernel: str, candidate: str | None, bench: str | None = None,
                    ranges: bool = True, real_inputs: dict[str, str] | None = None, **options_changed: Any) -> EvalResult:
    """What `fsr eval` says of `candidate` (its text, with an `@fsr` block where it changes the
    launch) against `kernel` of `source`, through the evaluator's own `prepare` and `run_job`,
    with the kernels built and run on the CPU. `bench` replaces the spec's bench size (a
    `{ n = 1000 }` table): the emulator runs a few million threads a second, not billions.
    `ranges=False` leaves out the sets that probe the inputs' range (to show what they add);
    `real_inputs`: the bytes a capture saved for `captured()` buffers ("OFFSET:PATH" by name);
    `options_changed`: EvalOptions fields set otherwise (`screen=True`, say)."""
    from fsr_lsp.evaluator.gpu.run import run_job
    from fsr_lsp.evaluator.job import prepare as preparing

    if bench is not None:
        source = re.sub(r"^bench\s*=.*$", lambda _: f"bench = {bench}", source, count=1, flags=re.M)
    options = preparing.EvalOptions(timing=TimingConfig(warmup=1, min_reps=3, max_reps=3, target_seconds=0.0),
                                    base_seed=11, real_inputs=tuple(sorted((real_inputs or {}).items())))
    options = dataclasses.replace(options, **options_changed)
    preparing._wide_binary.cache_clear()  # a double-precision build of the same text by nvcc, earlier
    try:
        with compiling_on_cpu():
            prepared = preparing.prepare(source, kernel, candidate, "cpu", options)
    finally:
        preparing._wide_binary.cache_clear()
    if prepared.job is None:
        assert prepared.result is not None
        return prepared.result
    prepared.job.defences.input_ranges = ranges
    return run_job(EmulatedSession(), prepared.job)


@contextlib.contextmanager
def cpu_evaluator(timeout: float = 300.0) -> Iterator[Any]:
    """An Evaluator whose worker runs kernels built by `compile_on_cpu`: proofs and evaluations
    as the commands make them (`prove`, `evaluate`), on the CPU."""
    from fsr_lsp.evaluator import Evaluator
    from fsr_lsp.evaluator.job import prepare as preparing

    from ..fake_workers import emulated_session

    preparing._wide_binary.cache_clear()
    with compiling_on_cpu(), Evaluator(target=emulated_session, timeout=timeout) as evaluator:
        evaluator.start()
        yield evaluator
    preparing._wide_binary.cache_clear()
