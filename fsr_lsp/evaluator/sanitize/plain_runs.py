"""The sanitizer child's runs without torch: pycuda and numpy alone.

Why it exists: a compute-sanitizer child that imports torch and builds a `GpuSession` (torch's
context, a 1 GiB bandwidth measurement, an L2 flush buffer, inputs filled by torch kernels)
does all of that under the tool. Measured on an H100 (bench/sanitizer_startup.sh,
docs/benchmarks.md): a first CUDA call from a child that imports torch takes 5.8 s under
memcheck and 6.1 s under racecheck; from a child using pycuda alone, 0.98 s and 1.78 s; and
`fsr eval --candidate` spent 2-5 s in the sanitizers after a GPU verification of under 1.5 s.
Here the child loads the one cubin it checks, fills its inputs on the host with numpy and
copies them in: the only kernel the tool watches is the one checked.

What a run keeps of the torch path (`gpu/run.py::_sanitize_runs`, which still serves the jobs
this cannot run faithfully: `why_not_plain`): one launch per size on buffers of exactly the
spec's length, each its own cuMemAlloc (256-byte aligned), a spacer allocated before each and
one after the last, all freed before any launch (an over-read lands in no allocation, and the
nearest buffer is the one read past); every buffer alive to the end; `out` buffers never
written, so initcheck sees a kernel that reads one first; a line `fsr-buffer NAME SIZE ADDR
NBYTES` per buffer on stdout for the parent (sanitizer.py) to place the tool's reports; a
buffer whose kernel pointer lies `offset` elements in gets that pointer (`gpu.common.pointer`);
scalars passed as the torch session passes them (`gpu.packing.SCALAR_FORMAT`; 16-bit floats
as their bits); relocatable code linked with the device runtime; cooperative kernels launched
through `gpu.cooperative`; a CUDA error turned into the verdict the torch path gives.

The values are the spec's (uniform, normal, randint, fill, captured bytes), drawn by numpy from
the same seed, not the same numbers as torch's: a sanitizer judges accesses, not outputs.
`host_values` makes them without a GPU, so that tests can check them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, TextIO

import numpy as np

from ...kernels.c_types import ITEMSIZE
from ..compile.compiler import find_nvcc
from ..job.linked_memory import late_values, link_writes
from ..compile.relocatable import device_runtime, is_relocatable
from ..job.captured_buffers import read_saved
from ..records import ArgPlan, EvalJob, EvalResult, KernelBinary, LaunchPlan
from ..gpu.accuracy import scalar_dtypes
from ..gpu.buffers import FLOATS
from ..gpu.common import Failure, pointer, seed_for
from ..gpu.cooperative import CooperativeKernel
from ..gpu.run import SPACER_BYTES, Phases
from .child_protocol import PHASES_MARK
from ..gpu.packing import bfloat16_bits, is_struct, launch_values, param_format

MESSAGE = "ran under compute-sanitizer (no torch)"
# Inputs drawn on the host beyond this (ncu's bench size can be large; the sanitizers' sizes are
# capped at Defences.layered_max_bytes): torch draws them on the GPU faster than numpy here.
HOST_MAX_BYTES = 1 << 30
DYNAMIC_SHARED_DEFAULT = 48 * 1024  # above this a kernel must be allowed more (MAX_DYNAMIC_SHARED_SIZE_BYTES)

# How a buffer of each element type is held on the host: unsigned types as themselves (numpy has
# them: their bits are what the kernel reads), 16-bit floats as their bit patterns.
STORAGE: dict[str, Any] = {
    "float32": np.float32, "float64": np.float64, "float16": np.uint16, "bfloat16": np.uint16,
    "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
    "int16": np.int16, "uint16": np.uint16, "int8": np.int8, "uint8": np.uint8, "bool": np.uint8,
}


def why_not_plain(job: EvalJob, through_torch: bool = False) -> str:
    """'' when this module can run `job` as faithfully as the torch path; else why not (the
    child then runs it through torch). `through_torch`: the child was asked to (for comparisons)."""
    if through_torch:
        return "the child was asked to run every job through torch"
    if job.mode != "sanitize":
        return f"a {job.mode}-mode job"
    if job.constants:  # gpu/constant_fill.py draws them with torch, as every other run of the job
        return f"`{job.constants[0].name}` is __constant__ data the host sets"
    host_bytes = 0
    for plan in job.sizes:
        for a in plan.args:
            if a.kind == "texture":  # gpu/textures.py makes and fills them with torch tensors
                return f"`{a.name}` is a texture"
            if a.kind != "buffer":
                continue
            if a.dtype not in STORAGE:
                return f"`{a.name}` has element type {a.dtype}"
            if a.direction != "out":
                if a.init is None:
                    return f"`{a.name}` has no init"
                host_bytes += a.nbytes
    if host_bytes > HOST_MAX_BYTES:
        return f"{host_bytes >> 20} MiB of inputs: drawn faster on the GPU"
    return ""


# ------------------------------------------------------------------ values, on the host


def host_values(arg: ArgPlan, rng: np.random.Generator) -> np.ndarray:
    """Contents for an input buffer (in or inout) as the kernel reads them: `arg.numel`
    elements (length times lanes) of `STORAGE[arg.dtype]`, `arg.nbytes` bytes in all, following
    its init as `gpu.buffers.generate` does (drawn in float32, float64 for a float64 buffer;
    a float buffer's values narrowed to the spec's domain where it gives one; converted to
    integers by truncation; unsigned values by their bits)."""
    init = arg.init
    assert init is not None, f"`{arg.name}` has no init"
    n = arg.numel
    storage = STORAGE[arg.dtype]
    if init.kind == "captured":
        data = read_saved(arg.source, arg.nbytes)
        if len(data) != arg.nbytes:  # prepare checked the size: the file changed since
            raise OSError(f"{arg.source} holds {len(data)} bytes, {arg.nbytes} needed")
        return np.frombuffer(data, dtype=storage).copy()
    real = np.float64 if arg.dtype == "float64" else np.float32
    values: np.ndarray
    if init.kind == "normal":
        values = rng.standard_normal(n, dtype=real) * real(init.hi) + real(init.lo)
    elif init.kind == "fill":
        values = np.full(n, init.lo, dtype=real) if arg.dtype in FLOATS else np.full(n, int(init.lo), dtype=np.int64)
    elif init.kind == "uniform":
        values = rng.random(n, dtype=real) * real(init.hi - init.lo) + real(init.lo)
    else:  # randint: lo <= v < hi
        values = rng.integers(int(init.lo), int(init.hi), n, dtype=np.int64)
    domain = getattr(init, "domain", None)  # a spec's domain(lo, hi) narrows a float input's values
    if domain is not None and arg.dtype in FLOATS:
        values = np.clip(values, real(domain[0]), real(domain[1]))
    return stored(values, arg.dtype)


def stored(values: np.ndarray, dtype: str) -> np.ndarray:
    """`values` as a buffer of `dtype` holds them (see STORAGE)."""
    if dtype == "bfloat16":
        return bfloat16_bits(values)
    if dtype == "float16":
        with np.errstate(over="ignore"):  # beyond 65504 is infinite, as torch converts it
            return values.astype(np.float16).view(np.uint16)
    if dtype in FLOATS:
        return values.astype(STORAGE[dtype])
    if values.dtype.kind == "f":  # truncated toward zero, as torch's conversion does
        values = values.astype(np.int64)
    return values.astype(np.int64).astype(STORAGE[dtype])  # integers of another width wrap: their bits


def scalar_value(value: Any, dtype: str | None) -> Any:
    """A kernel argument as the launch passes it (`gpu.session._scalar_bits` without torch):
    a pointer as is, a 16-bit float as its bits (through float32, as torch converts), a float
    as float, anything else as int."""
    if dtype is None or is_struct(dtype):
        return value  # a pointer, a struct's packed bytes
    if dtype == "float16":
        return int(np.float32(value).astype(np.float16).view(np.uint16))
    if dtype == "bfloat16":
        return int(bfloat16_bits(np.float32(value)))
    if dtype.startswith("float"):
        return float(value)
    return int(value)


def scalar_format(dtypes: list[str | None]) -> str:
    """pycuda's format of the arguments: P for a pointer, the torch session's letter for a scalar."""
    return param_format(dtypes)


# ------------------------------------------------------------------ the run


@dataclass
class Buffer:
    """One exact allocation, as printed for the parent."""

    name: str
    size: str  # the size label without spaces
    address: int
    nbytes: int

    def line(self) -> str:
        return f"fsr-buffer {self.name} {self.size} {self.address:#x} {self.nbytes}"


@dataclass
class Launch:
    label: str
    values: list[Any]  # as the kernel takes them: pointers and scalar bits
    plan: LaunchPlan


class Unavailable(RuntimeError):
    """No pycuda or no driver here."""


CooperativeFactory = Callable[[bytes, str], Any]


def run_plain(job: EvalJob, device_index: int = 0, driver: Any = None,
              cooperative: CooperativeFactory | None = None, out: TextIO | None = None) -> EvalResult:
    """Run a sanitize-mode job (see the module's docstring) and say how it went: status
    `verified` when every launch ran, else the torch path's verdict (`crashed` for the
    candidate, `spec_error` for the original, `oom`, `unavailable`). `driver` is pycuda.driver
    (a stand-in in tests); `cooperative` makes a kernel for cooperative launches from a cubin
    and an entry (gpu.cooperative.CooperativeKernel by default)."""
    out = out or sys.stdout
    result = EvalResult(kernel=job.kernel, status="verified", message=MESSAGE)
    who = "original" if job.sanitize_original or job.candidate is None else "candidate"
    binary = job.original if who == "original" else job.candidate
    assert binary is not None
    # each step's seconds, printed for the parent's debug log: where a confirmation's sanitizer
    # seconds go (the context, the module's instrumentation, the launches)
    seconds: dict[str, float] = {}
    phases = Phases(seconds)
    try:
        driver = driver or _pycuda()
        context = _open(driver, device_index)
    except Exception as e:  # no pycuda, no driver, no device
        result.status, result.message = "unavailable", _first_line(e)  # type: ignore[assignment]
        return result
    phases("context")
    run = _Run(driver, who, out)
    try:
        kernel = run.load(binary, scalar_dtypes(job.sizes[0].args), cooperative)
        phases("load")
        launches = run.allocate(job)
        phases("allocate")
        for launch in launches:
            run.launch(kernel, launch)
        phases("launches")
    except Failure as f:
        result.status, result.message = f.status, f.message  # type: ignore[assignment]
    finally:
        run.release()
        phases("release")
        print(PHASES_MARK + "".join(f" {k} {v:.3f}" for k, v in seconds.items()), file=out)
        out.flush()
        _close(driver, context)
    return result


def _pycuda() -> Any:
    try:
        import pycuda.driver as cuda
    except ImportError:
        raise Unavailable("pycuda is not installed (pip install 'fsr-lsp[gpu]' on a host with the CUDA toolkit)") \
            from None
    except Exception as e:  # pycuda present but libcuda missing
        raise Unavailable(f"pycuda cannot load the CUDA driver: {_first_line(e)}") from None
    return cuda


def _open(driver: Any, index: int) -> Any:
    """The device's primary context (the one the torch path's session shares), made current."""
    driver.init()
    context = driver.Device(index).retain_primary_context()
    context.push()
    return context


def _close(driver: Any, context: Any) -> None:
    """Off the context stack before exit: pycuda aborts the process if a context is still pushed."""
    try:
        driver.Context.pop()
        context.detach()
    except Exception:  # a context a kernel broke: the process ends anyway
        pass


class _Kernel:
    """The entry to launch: a pycuda function, or a cooperative kernel (gpu/cooperative.py)."""

    def __init__(self, fn: Any, cooperative: Any, dtypes: list[str | None], module: Any = None) -> None:
        self.fn, self.cooperative, self.dtypes, self.module = fn, cooperative, dtypes, module


class _Run:
    def __init__(self, driver: Any, who: str, out: TextIO) -> None:
        self.driver, self.who, self.out = driver, who, out
        self.kept: list[Any] = []

    def load(self, binary: KernelBinary, dtypes: list[str | None], cooperative: CooperativeFactory | None) -> _Kernel:
        """The module of the one kernel checked (relocatable code linked with the device runtime,
        as GpuSession._linked does); a load the driver refuses is the launcher's verdict."""
        driver = self.driver
        try:
            if binary.cooperative:  # loaded and launched through libcuda itself, as the torch path does
                return _Kernel(None, (cooperative or CooperativeKernel)(binary.cubin, binary.entry), dtypes)
            if is_relocatable(binary.flags):
                linker = driver.Linker()
                linker.add_data(binary.cubin, driver.jit_input_type.CUBIN, "kernel.cubin")
                linker.add_file(str(device_runtime(find_nvcc())), driver.jit_input_type.LIBRARY)
                module = linker.link_module()
            else:
                module = driver.module_from_buffer(binary.cubin)
            fn = module.get_function(binary.entry)
            fn.prepare(scalar_format(dtypes))
        except Exception as e:
            raise self._failure(f"the {self.who} kernel does not load", e) from None
        return _Kernel(fn, None, dtypes, module)

    def allocate(self, job: EvalJob) -> list[Launch]:
        """Every size's buffers, exact and apart, filled (in and inout) and printed; the spacers
        freed; the launches to make, in order."""
        driver = self.driver
        spacers: list[Any] = []
        launches = []
        try:
            for index, plan in enumerate(job.sizes):
                rng = np.random.default_rng(seed_for(job, index, 0))
                label = plan.label.replace(" ", "")
                values: list[Any] = []
                addresses: dict[str, int] = {}
                for a in plan.args:
                    if a.kind != "buffer":
                        values.append(a.value)
                        continue
                    spacers.append(driver.mem_alloc(SPACER_BYTES))
                    address = self._exact(a)
                    if a.direction != "out" and a.nbytes:  # `out` stays unwritten: initcheck sees a read of it
                        driver.memcpy_htod(address, host_values(a, rng))
                    values.append(pointer(a, address, ITEMSIZE[a.dtype]))
                    addresses[a.name] = address
                    print(Buffer(a.name, label, address, a.nbytes).line(), file=self.out, flush=True)
                for at, value in link_writes(plan.args, addresses):  # memory holding pointers, rebuilt here
                    driver.memcpy_htod(at, np.array([value], dtype=np.uint64))
                values = late_values(plan.args, values, addresses)
                launch = plan.candidate if self.who == "candidate" else plan.original
                launches.append(Launch(plan.label, launch_values(plan.args, values), launch))
            spacers.append(driver.mem_alloc(SPACER_BYTES))
            driver.Context.synchronize()
        except driver.MemoryError as e:
            raise Failure("oom", f"out of GPU memory: {_first_line(e)}", restart=True) from None
        for spacer in spacers:
            spacer.free()
        return launches

    def _exact(self, arg: ArgPlan) -> int:
        """A buffer's own allocation of exactly its bytes; null for a buffer of none (the driver
        allocates no zero bytes; any access through it is then memcheck's to report)."""
        if arg.nbytes == 0:
            return 0
        allocation = self.driver.mem_alloc(arg.nbytes)
        self.kept.append(allocation)
        return int(allocation)

    def launch(self, kernel: _Kernel, launch: Launch) -> None:
        """One launch, waited for; a CUDA error is a verdict on whoever launched, worded as
        gpu.common.guarded_launch words it (the original's errors are the spec's problem)."""
        plan = launch.plan
        values = [scalar_value(v, d) for v, d in zip(launch.values, kernel.dtypes)]
        try:
            for symbol, address in getattr(launch.values, "symbols", {}).items():  # redirected `__device__` variables
                data = address.to_bytes(8, "little")
                if kernel.cooperative is not None:
                    kernel.cooperative.set_global(symbol, data)
                else:
                    self.driver.memcpy_htod(kernel.module.get_global(symbol)[0], data)
            if kernel.cooperative is not None:
                kernel.cooperative.launch(plan.grid, plan.block, plan.smem, values, kernel.dtypes)
            else:
                if plan.smem > DYNAMIC_SHARED_DEFAULT:
                    kernel.fn.set_attribute(self.driver.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, plan.smem)
                kernel.fn.prepared_async_call(plan.grid, plan.block, None, *values, shared_size=plan.smem)
            self.driver.Context.synchronize()
        except Exception as e:
            raise self._failure(f"the {self.who} kernel failed at {launch.label}", e) from None

    def _failure(self, what: str, e: Exception) -> Failure:
        if isinstance(e, self.driver.MemoryError):
            return Failure("oom", f"out of GPU memory: {_first_line(e)}", restart=True)
        return Failure("crashed" if self.who == "candidate" else "spec_error", f"{what}: {_first_line(e)}",
                       check=f"{self.who} runs", restart=True)

    def release(self) -> None:
        """The buffers given back before the context is left (a kernel that broke the context
        leaves nothing to give back: the process ends)."""
        for allocation in self.kept:
            try:
                allocation.free()
            except Exception:
                pass
        self.kept.clear()


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
