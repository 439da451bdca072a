"""The worker's CUDA context: torch for memory, random inputs, comparisons and events; pycuda
for loading cubins and launching them, both on the device's primary context."""

from __future__ import annotations

import atexit
import hashlib
import socket
from dataclasses import dataclass
from typing import Any, Callable

from ..records import GpuInfo, KernelBinary, LaunchPlan, Resources
from ..compile.module_variables import module_variables
from ..compile.relocatable import device_runtime, is_relocatable
from .module_state import ModuleState, uncompared
from .packing import SCALAR_FORMAT, is_struct, param_format
from .printed import PrintedOutput
from .oracle_cache import OracleCache, budget_for
from .textures import Textures


class Unavailable(RuntimeError):
    """No GPU evaluation is possible here; the message says why in one line."""


_SCALAR_FORMAT = SCALAR_FORMAT  # kernel scalar dtype -> pycuda struct format char


class GpuSession:
    def __init__(self, index: int = 0) -> None:
        try:
            import torch
        except ImportError:
            raise Unavailable("torch is not installed (pip install 'fsr-lsp[gpu]')") from None
        try:
            import pycuda.driver as cuda
        except ImportError:
            raise Unavailable("pycuda is not installed (pip install 'fsr-lsp[gpu]' on a host with the CUDA toolkit)") from None
        except Exception as e:  # pycuda present but libcuda missing
            raise Unavailable(f"pycuda cannot load the CUDA driver: {e}") from None
        if not torch.cuda.is_available():
            raise Unavailable("no CUDA GPU is visible (torch.cuda.is_available() is False)")
        if index >= torch.cuda.device_count():
            raise Unavailable(f"GPU {index} requested but only {torch.cuda.device_count()} visible")
        self.torch = torch
        self.cuda = cuda
        self.textures = Textures(torch)
        torch.cuda.set_device(index)
        torch.empty(1, device="cuda")  # creates the primary context that pycuda joins below
        cuda.init()
        device = cuda.Device(index)
        self.context = device.retain_primary_context()
        self.context.push()
        atexit.register(self.context.pop)  # pycuda aborts the process at exit if it is still pushed
        props = torch.cuda.get_device_properties(index)
        l2 = int(getattr(props, "L2_cache_size", 0) or device.get_attribute(cuda.device_attribute.L2_CACHE_SIZE))
        self.info = GpuInfo(
            index=index,
            name=props.name,
            compute_capability=f"{props.major}.{props.minor}",
            sm_count=props.multi_processor_count,
            l2_bytes=l2,
            memory_bytes=int(props.total_memory),
            clock_khz=int(device.get_attribute(cuda.device_attribute.CLOCK_RATE)),
            driver=".".join(str(x) for x in divmod(cuda.get_driver_version(), 1000)),
            smem_per_block_bytes=int(device.get_attribute(cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)),
            smem_per_sm_bytes=int(device.get_attribute(cuda.device_attribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)),
            max_threads_per_sm=int(device.get_attribute(cuda.device_attribute.MAX_THREADS_PER_MULTIPROCESSOR)),
            uuid=_uuid(props),
            host=socket.gethostname(),
        )
        self.device = torch.device("cuda", index)
        # Reading twice the L2 evicts whatever the previous run left there. Reading, not writing:
        # a written flush leaves L2 full of dirty lines whose write-back the timed kernel pays
        # for (measured: +14% on a 57 us saxpy against ncu).
        self._l2_words = max(l2, 1 << 23) // 4
        self._flush = torch.ones(4 * self._l2_words, dtype=torch.int32, device=self.device)
        self._flush_sink = torch.empty((), dtype=torch.int32, device=self.device)
        self._modules: dict[str, Any] = {}
        self._cooperative: dict[str, Any] = {}  # cubin digest -> the same kernel loaded for cooperative launches
        self._states: dict[str, ModuleState] = {}  # cubin digest -> its module's variables as loaded
        # (cubin digest, symbol) -> the address a module's redirected `__device__` variable points at now:
        # one module serves every LoadedKernel of the same cubin (a rewrite that changes only the launch)
        self.pointed: dict[tuple[str, str], int] = {}
        self._shared_poison: Any = None
        self._pages: Any = None
        self._clock: Any = None  # the kernel clock once opened (gpu/kernel_clock.py)
        self._hold: Any = None  # the stream hold once made (gpu/stream_hold.py)
        self._hold_note = ""
        self._event_type: Any = None  # events recorded on this session's stream (event())
        self.clock_note = ""  # why there is none, once tried
        self.printed: PrintedOutput | None = None  # set by the worker, whose stdout it holds
        # set by the worker: waits until its parent gives it the GPU alone (its timed runs next)
        self.wait_alone: Callable[[], None] = lambda: None
        self.vetted: set[Any] = set()  # (original kernel, sizes) that already passed a once-per-worker check
        # the original's runs at an input set, for later jobs of the same original (gpu/oracle_cache.py)
        self.oracle_cache = OracleCache(budget_for(self.info.memory_bytes))
        # the copy bandwidth is measured when the parent says the GPU is its alone (measure_bandwidth)

    def release_kept(self) -> None:
        """The original's kept runs dropped and torch's cached memory given back (an idle worker:
        the user's own programs on this GPU may need it)."""
        self.oracle_cache.clear()
        self.torch.cuda.empty_cache()

    def take_printed(self) -> str:
        """What kernels printed since the last call; "" where stdout is not ours to read."""
        return self.printed.take() if self.printed is not None else ""

    def measure_bandwidth(self, nbytes: int = 1 << 30) -> float:
        """GB/s of a device-to-device copy (read + write), the ceiling for memory-bound kernels,
        kept in `info`. Only with the GPU to itself: a sanitizer's kernels beside it slow the copy."""
        self.info.bandwidth_gbps = self._copy_gbps(nbytes)
        return self.info.bandwidth_gbps

    def _copy_gbps(self, nbytes: int) -> float:
        torch = self.torch
        src = torch.empty(nbytes // 4, dtype=torch.int32, device=self.device).fill_(1)
        dst = torch.empty_like(src)
        for _ in range(2):
            dst.copy_(src)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        seconds = start.elapsed_time(end) / 1000 / 5
        del src, dst
        torch.cuda.empty_cache()
        return 2 * nbytes / seconds / 1e9

    def flush_l2(self, factor: int = 2) -> None:
        """Read `factor` times the L2's size (at most 4)."""
        self.torch.amax(self._flush[: factor * self._l2_words], dim=0, out=self._flush_sink)

    def hold_gpu(self, cycles: int = 100_000, until_released: bool = True) -> Callable[[], None]:
        """Hold the stream until the returned call (gpu/stream_hold.py): the start event, the
        launch and the end event are all queued before the GPU reaches them. Where the hold
        cannot be had, or for work that may wait on the stream itself (a torch `ref` that reads a
        result back: `until_released` False), a spin of `cycles` (about 50 us at full clock) and a
        release that does nothing."""
        if until_released and self._hold is None and not self._hold_note:
            from .stream_hold import stream_hold

            self._hold, self._hold_note = stream_hold(self.cuda, self.info.clock_khz)
        if until_released and self._hold is not None:
            return self._hold.hold()
        sleep = getattr(self.torch.cuda, "_sleep", None)
        if sleep is not None:
            sleep(cycles)
        return lambda: None

    def kernel_clock(self) -> Any:
        """The kernel clock (gpu/kernel_clock.py), opened on the first timing; None where it cannot
        be had, `clock_note` saying why (the timing then uses events)."""
        if self._clock is None and not self.clock_note:
            from .kernel_clock import KernelClock

            self._clock, self.clock_note = KernelClock.open()
            if self._clock is not None:
                atexit.register(self._clock.close)  # CUPTI's last records before the process's statics go
        return self._clock

    def shared_poison(self) -> Any:
        """The shared-memory poison kernel (compiled on first use)."""
        if self._shared_poison is None:
            from .shared import SharedPoison

            self._shared_poison = SharedPoison(self)
        return self._shared_poison

    def unmapped_pages(self) -> Any:
        """Arenas against unmapped address space (raises UnmappedUnavailable where the driver's
        virtual memory API cannot be used)."""
        if self._pages is None:
            from .guards import UnmappedPages

            self._pages = UnmappedPages(self.info.index)
        return self._pages

    def event(self) -> Any:
        """A timing event that records on this session's stream: torch's own `record()` asks
        for the current stream at every call (about 25 us of host time, four records a timed
        repetition, in a timing bound by its host: issue 59). The worker never changes stream."""
        if self._event_type is None:
            self._event_type = _stream_event_type(self.torch, self.torch.cuda.current_stream(self.device))
        return self._event_type(enable_timing=True)

    def synchronize(self) -> None:
        self.cuda.Context.synchronize()

    def _linked(self, cubin: bytes) -> Any:
        """Relocatable device code (a kernel that launches kernels) linked with the device runtime."""
        from ..compile.compiler import find_nvcc

        linker = self.cuda.Linker()
        linker.add_data(cubin, self.cuda.jit_input_type.CUBIN, "kernel.cubin")
        linker.add_file(str(device_runtime(find_nvcc())), self.cuda.jit_input_type.LIBRARY)
        return linker.link_module()

    def load(self, binary: KernelBinary, dtypes: list[str | None]) -> "LoadedKernel":
        """Load a cubin (once per content) and prepare its entry for arguments of `dtypes`
        (None for a pointer)."""
        key = hashlib.sha256(binary.cubin + binary.entry.encode()).hexdigest()
        if key not in self._modules:
            module = self._linked(binary.cubin) if is_relocatable(binary.flags) else \
                self.cuda.module_from_buffer(binary.cubin)
            self._modules[key] = (module, module.get_function(binary.entry))
        module, fn = self._modules[key]
        fn.prepare(param_format(dtypes))
        shared = fn.get_attribute(self.cuda.function_attribute.SHARED_SIZE_BYTES)
        cooperative = None
        if binary.cooperative:
            from .cooperative import CooperativeKernel

            if key not in self._cooperative:
                self._cooperative[key] = CooperativeKernel(binary.cubin, binary.entry)
            cooperative = self._cooperative[key]
        if key not in self._states:  # the launched copy's variables, as loaded
            address = cooperative.address if cooperative is not None else module.get_global
            self._states[key] = ModuleState.of(self.torch, self.device, uncompared(module_variables(binary.cubin)),
                                               address)
        return LoadedKernel(self, fn, [d for d in dtypes], digest=key, shared_bytes=int(shared), cooperative=cooperative,
                            module=module, state=self._states[key])


@dataclass
class LoadedKernel:
    session: GpuSession
    fn: Any
    dtypes: list[str | None]
    digest: str = ""  # of the cubin and entry: the same kernel in another job
    shared_bytes: int = 0  # static shared memory per block
    cooperative: Any = None  # a CooperativeKernel when the kernel syncs its whole grid
    module: Any = None  # the pycuda module holding the kernel (its `__constant__` data)
    state: ModuleState | None = None  # its writable global variables (gpu/module_state.py)

    def global_size(self, name: str) -> int:
        """Bytes of the module's symbol `name`; 0 where the module has none (compiled away)."""
        try:
            return int(self.module.get_global(name)[1])
        except Exception:  # noqa: BLE001 - pycuda's LogicError: no such symbol
            return 0

    def set_global(self, name: str, data: bytes) -> None:
        """The symbol's bytes, in this module and in the cooperative launcher's copy of it."""
        ptr, size = self.module.get_global(name)
        self.session.cuda.memcpy_htod(ptr, data[:size])
        if self.cooperative is not None:
            self.cooperative.set_global(name, data)

    def resources(self) -> Resources:
        attr = self.session.cuda.function_attribute
        get = self.fn.get_attribute
        return Resources(registers=get(attr.NUM_REGS), shared_bytes=get(attr.SHARED_SIZE_BYTES),
                         local_bytes=get(attr.LOCAL_SIZE_BYTES), max_threads_per_block=get(attr.MAX_THREADS_PER_BLOCK))

    def point(self, args: list[Any]) -> None:
        """The module's redirected `__device__` variables pointed at their buffers (`args` as
        gpu/packing.py `launch_values` gives them); a copy (synchronous) only where one moved."""
        for symbol, address in getattr(args, "symbols", {}).items():
            if self.session.pointed.get((self.digest, symbol)) != address:
                self.set_global(symbol, address.to_bytes(8, "little"))
                self.session.pointed[self.digest, symbol] = address

    def launch(self, args: list[Any], launch: LaunchPlan) -> None:
        """Queue one launch on the default stream (asynchronous)."""
        self.point(args)
        if launch.smem > 48 * 1024:
            self.fn.set_attribute(self.session.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.smem)
        values = [_scalar_bits(self.session.torch, a, d) for a, d in zip(args, self.dtypes)]
        if self.cooperative is not None:
            self.cooperative.launch(launch.grid, launch.block, launch.smem, values, self.dtypes)
            return
        self.fn.prepared_async_call(launch.grid, launch.block, None, *values, shared_size=launch.smem)


def _uuid(props: Any) -> str:
    raw = getattr(props, "uuid", "")
    text = str(raw)
    return text if not text or text.startswith("GPU-") else f"GPU-{text}"


def _scalar_bits(torch: Any, value: Any, dtype: str | None) -> Any:
    if dtype is None or is_struct(dtype):
        return value  # a device pointer (int), a struct's bytes
    if dtype in ("float16", "bfloat16"):
        t = torch.tensor([float(value)], dtype=getattr(torch, dtype))
        return int(t.view(torch.int16).item()) & 0xFFFF
    if dtype.startswith(("float",)):
        return float(value)
    return int(value)


def _stream_event_type(torch: Any, stream: Any) -> Any:
    """torch.cuda.Event, recorded on `stream` unless told another."""

    class StreamEvent(torch.cuda.Event):  # type: ignore[name-defined, misc]
        def record(self, on: Any = None) -> None:
            super().record(stream if on is None else on)

    return StreamEvent
