"""Device code -> cubin, with NVRTC as the fast path and nvcc as the authority.

NVRTC compiles a small kernel in about 0.05 s against nvcc's 0.5 s, but lacks the headers
nvcc includes implicitly (`INFINITY` fails there). A kernel NVRTC refuses is compiled by
nvcc, whose verdict and error text are what the user sees. Cubins are cached by source,
compiler, arch and flags. Nothing here needs a GPU.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from ... import scratch
from ...kernels.device_variables import redirected
from .cubin_cache import building, cache_load, cache_store, included_text
from .limits import CompileLimits, run_limited
from .entries import demangled, instantiation_entry, match_entry
from .ptxas import entry_functions, parse_resources
from ..records import CompileResult, KernelBinary
from .relocatable import needs_relocatable, relocatable
from .sandbox import LimitHit, Sandbox

CACHE_VERSION = "1"
BASE_NVCC_FLAGS = ("-O3", "-lineinfo", "-std=c++17", "-Xptxas", "-v")


def base_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    """fsr's own nvcc flags, less those the given flags (a build's) set otherwise: nvcc refuses an
    optimisation level or a language standard given twice."""
    return tuple(f for f in BASE_NVCC_FLAGS
                 if not (f.startswith("-O") and any(g.startswith(("-O", "--optimize")) for g in flags))
                 and not (f.startswith("-std=") and any(g.startswith(("-std", "--std")) for g in flags)))


@dataclass(frozen=True)
class KernelRef:
    """Which kernel of a translation unit to compile and load."""

    name: str
    template_args: str | None = None  # "float, 256" for a templated kernel
    param_types: tuple[str, ...] = ()  # for nvcc's explicit instantiation of a template

    @property
    def name_expression(self) -> str:
        return f"{self.name}<{self.template_args}>" if self.template_args else self.name


@dataclass(frozen=True)
class CompileOptions:
    arch: str  # "sm_90a"
    flags: tuple[str, ...] = ()  # extra nvcc-style flags: -use_fast_math, -DX=1, -maxrregcount=64
    include_dirs: tuple[str, ...] = ()
    compiler: Literal["auto", "nvcc", "nvrtc"] = "auto"
    nvcc: str | None = None
    cache_dir: str | None = None
    timeout: float = 120.0
    limits: CompileLimits | None = None  # untrusted text (a candidate): compiled in a limited process
    # `__device__` variables made pointers before compiling (kernels/device_variables.py `redirected`)
    redirect: tuple[str, ...] = ()


class CompilerMissing(RuntimeError):
    pass


def find_nvcc(explicit: str | None = None) -> str | None:
    candidates = [explicit, os.environ.get("FSR_NVCC"), shutil.which("nvcc")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(str(Path(home) / "bin" / "nvcc"))
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


def compile_kernel(source: str, kernel: KernelRef, options: CompileOptions) -> CompileResult:
    """Compile `source` (one translation unit) and find `kernel` in the cubin."""
    source = redirected(source, options.redirect)
    order = {"auto": ("nvrtc", "nvcc"), "nvrtc": ("nvrtc",), "nvcc": ("nvcc",)}[options.compiler]
    last: CompileResult | None = None
    for compiler in order:
        if compiler == "nvrtc" and (not nvrtc_available() or _nvrtc_flags(options.flags) is None or _needs_nvcc(source)):
            continue
        key = _cache_key(compiler, source, kernel, options)
        with building(key):
            cached = cache_load(options.cache_dir, key, options.arch, options.flags)
            if cached is not None:
                return cached
            result = _compile_with(compiler, source, kernel, options)
            if result.ok:
                cache_store(options.cache_dir, key, result)
                return result
        last = result
    if last is None:
        raise CompilerMissing("no CUDA compiler found: install the CUDA toolkit (nvcc) or cuda-python (NVRTC)")
    if needs_relocatable(last.log, options.flags) and find_nvcc(options.nvcc):  # a kernel in it launches kernels
        return compile_kernel(source, kernel, dataclasses.replace(options, flags=relocatable(options.flags), compiler="nvcc"))
    return last


def _compile_with(compiler: str, source: str, kernel: KernelRef, options: CompileOptions) -> CompileResult:
    if compiler == "nvcc":
        return _compile_nvcc(source, kernel, options)
    if options.limits is not None:
        return _compile_nvrtc_sandboxed(source, kernel, options)
    return _compile_nvrtc(source, kernel, options)


# ---------------------------------------------------------------- nvcc


def _compile_nvcc(source: str, kernel: KernelRef, options: CompileOptions) -> CompileResult:
    nvcc = find_nvcc(options.nvcc)
    if nvcc is None:
        raise CompilerMissing("nvcc not found (set FSR_NVCC or CUDA_HOME, or put nvcc on PATH)")
    started = time.perf_counter()
    with scratch.folder("nvcc") as folder:
        tmp = str(folder)
        src_path = Path(tmp) / "kernel.cu"
        out_path = Path(tmp) / "kernel.cubin"
        src_path.write_text(source + _explicit_instantiation(kernel), encoding="utf-8")
        cmd = [nvcc, "-cubin", f"-arch={options.arch}", *base_flags(options.flags), *options.flags,
               *(f"-I{d}" for d in options.include_dirs), "-o", str(out_path), str(src_path)]
        if options.limits is not None:
            run = run_limited(cmd, options.limits, tmp)
            returncode, log = run.returncode, run.log
            if run.limit:
                return CompileResult(False, None, options.limits.describe(run.limit), time.perf_counter() - started,
                                     compiler="nvcc", limit=run.limit)
        else:
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=options.timeout, cwd=tmp,
                                      env={**os.environ, "TMPDIR": tmp})
            except subprocess.TimeoutExpired:
                return CompileResult(False, None, f"nvcc did not finish within {options.timeout:.0f} s",
                                     time.perf_counter() - started, compiler="nvcc")
            returncode, log = proc.returncode, proc.stdout + proc.stderr
        log = log.replace(str(src_path), "kernel.cu").replace(tmp + "/", "")
        seconds = time.perf_counter() - started
        if returncode != 0 or not out_path.exists():
            return CompileResult(False, None, log.strip(), seconds, compiler="nvcc")
        return _finish(out_path.read_bytes(), log, kernel, options, "nvcc", seconds, entry_functions(log))


def _explicit_instantiation(kernel: KernelRef) -> str:
    if not kernel.template_args:
        return ""
    return f"\ntemplate __global__ void {kernel.name}<{kernel.template_args}>({', '.join(kernel.param_types)});\n"


# ---------------------------------------------------------------- NVRTC

# Names nvcc's implicit headers provide and NVRTC does not. Each is guarded, so a source that
# defines or includes them itself still compiles; `#line` keeps error lines the user's own.
_NVRTC_PRELUDE = r"""
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
#ifndef HUGE_VAL
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-016
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 0xffffffffU
#define LLONG_MAX 9223372036854775807LL
#define LLONG_MIN (-LLONG_MAX - 1LL)
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#define M_E 2.7182818284590452354
#define M_SQRT2 1.41421356237309504880
#define M_LN2 0.69314718055994530942
#define M_LOG2E 1.4426950408889634074
#endif
typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
#line 1 "kernel.cu"
"""
# Headers NVRTC either has built in or that the prelude replaces: dropped from its copy of the
# source. Anything else it cannot include sends the kernel to nvcc.
_IMPLICIT_HEADERS = re.compile(
    r"^[ \t]*#[ \t]*include[ \t]*[<\"](cuda_runtime\.h|cuda_runtime_api\.h|cuda\.h|device_launch_parameters\.h|"
    r"math\.h|cmath|float\.h|cfloat|limits\.h|climits|stdint\.h|cstdint)[>\"][^\n]*$", re.M)
_NVRTC_HEADERS = re.compile(r"(cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|mma\.h|cooperative_groups(/.*)?(\.h)?|cuda/.*|vector_types\.h|sm_\d+_intrinsics\.h)")


def _needs_nvcc(source: str) -> bool:
    for m in re.finditer(r"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]", source, re.M):
        if _IMPLICIT_HEADERS.match(m.group(0)) is None and not _NVRTC_HEADERS.fullmatch(m.group(1)):
            return True
    return False


def _nvrtc_flags(flags: tuple[str, ...]) -> list[str] | None:
    """nvcc flags in NVRTC's spelling, or None when one has no NVRTC equivalent."""
    out = []
    for f in flags:
        if re.fullmatch(r"-O[0-3]", f):
            continue  # nvcc's -O is the host compiler's level
        if f in ("-use_fast_math", "--use_fast_math"):
            out.append("--use_fast_math")
        elif f.startswith(("-D", "-U", "-std=", "--std=")) or f in ("-lineinfo", "--extra-device-vectorization"):
            out.append(f.replace("--std=", "-std="))
        elif re.fullmatch(r"--(ftz|prec-div|prec-sqrt|fmad)=(true|false)", f) \
                or f in ("--expt-relaxed-constexpr", "--extended-lambda", "--restrict"):
            out.append(f)
        elif f == "-G":
            out.append("--device-debug")
        elif m := re.fullmatch(r"--?maxrregcount=(\d+)", f):
            out.append(f"--maxrregcount={m.group(1)}")
        else:
            return None
    return out


@lru_cache(maxsize=1)
def _nvrtc():
    try:
        from cuda.bindings import nvrtc  # cuda-python >= 12.6
    except ImportError:
        try:
            from cuda import nvrtc  # type: ignore[no-redef]  # older cuda-python
        except ImportError:
            return None
    return nvrtc


def nvrtc_available() -> bool:
    return _nvrtc() is not None and os.environ.get("FSR_NO_NVRTC") != "1"


def _compile_nvrtc(source: str, kernel: KernelRef, options: CompileOptions) -> CompileResult:
    nvrtc = _nvrtc()
    started = time.perf_counter()
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    text = _NVRTC_PRELUDE + _IMPLICIT_HEADERS.sub("", source)
    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), b"kernel.cu", 0, [], [])
    if err != ok:
        return CompileResult(False, None, f"nvrtcCreateProgram failed: {err}", time.perf_counter() - started, compiler="nvrtc")
    try:
        expr = f"&{kernel.name_expression}".encode()
        nvrtc.nvrtcAddNameExpression(prog, expr)
        includes = [f"-I{d}" for d in (*options.include_dirs, *_cuda_include_dirs())]
        flags = _nvrtc_flags(options.flags) or []
        std = [] if any(f.startswith("-std=") for f in flags) else ["-std=c++17"]
        opts = [f"-arch={options.arch}", *std, "-default-device", "-lineinfo", "--ptxas-options=-v",
                *includes, *flags]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = _read_out(nvrtc.nvrtcGetProgramLog, prog, size).rstrip(b"\x00 ").decode(errors="replace")
        seconds = time.perf_counter() - started
        if err != ok:
            return CompileResult(False, None, log, seconds, compiler="nvrtc")
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = _read_out(nvrtc.nvrtcGetCUBIN, prog, size)
        err, lowered = nvrtc.nvrtcGetLoweredName(prog, expr)
        entry = lowered.decode() if err == ok else kernel.name
        return _finish(cubin, log, kernel, options, "nvrtc", time.perf_counter() - started, [entry])
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


_SANDBOXES: dict[CompileLimits, Sandbox] = {}
_SANDBOX_LOCK = threading.Lock()


def _compile_nvrtc_sandboxed(source: str, kernel: KernelRef, options: CompileOptions) -> CompileResult:
    """NVRTC in a child process under the limits (it is a library: in ours nothing bounds it)."""
    limits = options.limits
    assert limits is not None
    with _SANDBOX_LOCK:
        sandbox = _SANDBOXES.get(limits) or _SANDBOXES.setdefault(limits, Sandbox(f"{__name__}:_compile_nvrtc", limits))
    started = time.perf_counter()
    try:
        return sandbox.call(source, kernel, dataclasses.replace(options, limits=None))
    except LimitHit as e:
        return CompileResult(False, None, limits.describe(e.limit), time.perf_counter() - started, compiler="nvrtc",
                             limit=e.limit)


def _read_out(getter, prog, size: int) -> bytes:
    """Fill a fresh, writable buffer. Never `b" " * size`: for size 1 that is Python's interned
    one-byte object, and NVRTC writing its NUL into it corrupts every later b" " in the process."""
    try:
        buf = bytearray(max(size, 1))
        getter(prog, buf)
        return bytes(buf)
    except TypeError:  # a binding that takes only bytes: a fresh object of 2+ bytes is never shared
        out = bytes(max(size, 2))
        getter(prog, out)
        return out[:size]


@lru_cache(maxsize=1)
def _cuda_include_dirs() -> tuple[str, ...]:
    nvcc = find_nvcc()
    roots = [Path(nvcc).resolve().parent.parent] if nvcc else []
    dirs = []
    for root in roots:
        for sub in ("include", "include/cccl"):
            if (root / sub).is_dir():
                dirs.append(str(root / sub))
    return tuple(dirs)


# ---------------------------------------------------------------- common


def _finish(cubin: bytes, log: str, kernel: KernelRef, options: CompileOptions, compiler: str,
            seconds: float, entries: list[str]) -> CompileResult:
    entry = match_entry(entries, kernel.name) if compiler == "nvcc" else entries[0]
    if entry is None and compiler == "nvcc" and kernel.template_args:
        names = demangled(entries, find_nvcc(options.nvcc))
        entry = instantiation_entry(entries, kernel.name, kernel.template_args, names)
    if entry is None:
        found = ", ".join(entries) or "none"
        return CompileResult(False, None, f"kernel {kernel.name} not found in the compiled code (entries: {found})",
                             seconds, compiler=compiler)
    resources = parse_resources(log).get(entry)
    binary = KernelBinary(cubin=cubin, entry=entry, compiler=compiler, arch=options.arch, flags=tuple(options.flags))
    return CompileResult(True, binary, _trim_info(log), seconds, compiler=compiler, resources=resources)


def _trim_info(log: str) -> str:
    """ptxas -v chatter is parsed into `resources`; the log keeps what a user would read."""
    keep = [ln for ln in log.splitlines() if not re.match(r"\s*(ptxas info|\d+ bytes stack frame|\s*$)", ln)]
    return "\n".join(keep).strip()


@lru_cache(maxsize=4)
def _compiler_version(compiler: str, nvcc_path: str | None) -> str:
    if compiler == "nvrtc":
        nvrtc = _nvrtc()
        _, major, minor = nvrtc.nvrtcVersion()
        return f"nvrtc {major}.{minor}"
    nvcc = find_nvcc(nvcc_path)
    if nvcc is None:
        return "nvcc missing"
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]


def _cache_key(compiler: str, source: str, kernel: KernelRef, options: CompileOptions) -> str:
    payload = json.dumps([CACHE_VERSION, compiler, _compiler_version(compiler, options.nvcc), options.arch,
                          list(options.flags), list(options.include_dirs), kernel.name, kernel.template_args,
                          list(kernel.param_types), source, included_text(source, options.include_dirs)])
    return hashlib.sha256(payload.encode()).hexdigest()
