"""A CPU stand-in for the worker's GpuSession, so verification and timing logic runs in CI.

"Kernels" are Python functions registered by name; a job's KernelBinary names one in its
`entry`. They get what a CUDA kernel gets, raw pointers and scalars, and reach the memory
through numpy views made from the addresses, so a kernel can write (or read) past the end of
a buffer exactly as a real one would: into whatever lies there.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from fsr_lsp.evaluator.gpu.oracle_cache import OracleCache
from fsr_lsp.evaluator.gpu.guards import UnmappedUnavailable
from fsr_lsp.evaluator.records import GpuInfo, KernelBinary, LaunchPlan, Resources

GPU = GpuInfo(0, "CPU test double", "9.0", 4, 1 << 20, 1 << 30, bandwidth_gbps=100.0)
KERNELS: dict[str, Callable[..., None]] = {}
SYMBOLS: dict[str, int] = {}  # `__constant__` symbol -> bytes, in every fake module
GLOBALS: dict[tuple[str, str], bytes] = {}  # (kernel, symbol) -> what the evaluator set
PRINTED: list[str] = []  # what the Python kernels "printf" (device_printf), read as the worker reads stdout


def device_printf(text: str) -> None:
    PRINTED.append(text)


def kernel(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def register(fn: Callable[..., None]) -> Callable[..., None]:
        KERNELS[name] = fn
        return fn

    return register


def binary(name: str) -> KernelBinary:
    return KernelBinary(cubin=name.encode(), entry=name, compiler="python", arch="cpu")


def view(ptr: int, n: int, dtype: Any = np.float32) -> np.ndarray:
    """n elements at a raw address (shares the memory)."""
    itemsize = np.dtype(dtype).itemsize
    raw = (ctypes.c_char * (n * itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=dtype)


class _Event:
    def __init__(self) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: "_Event") -> float:
        return max((end.t - self.t) * 1000.0, 1e-6)


class FakeClock:
    """The kernel clock of the CPU double: a tagged launch's span is the wall time between its
    tag and the untagging (inside the events around it, as on a GPU)."""

    def __init__(self) -> None:
        self.current = 0
        self.started = 0.0
        self.spans: dict[int, float] = {}

    def tag(self, tag: int) -> None:
        now = time.perf_counter()
        if self.current:
            self.spans[self.current] = (now - self.started) * 1000.0
        self.current, self.started = tag, now

    def read(self) -> dict[int, Any]:
        from fsr_lsp.evaluator.gpu.kernel_clock import Span

        out = {tag: Span(max(ms, 1e-6), 1) for tag, ms in self.spans.items()}
        self.spans.clear()
        return out


class _NoShared:
    available = False
    why = "no GPU (CPU test double)"
    block_bytes = 0

    def __call__(self, footprint: int) -> None:
        pass


@dataclass
class FakeKernel:
    fn: Callable[..., None]
    digest: str
    shared_bytes: int = 0
    launches: int = 0
    state: Any = None  # the module's variables (gpu/module_state.py); none here

    def resources(self) -> Resources:
        return Resources()

    def point(self, args: list[Any]) -> None:
        for symbol, address in getattr(args, "symbols", {}).items():
            self.set_global(symbol, address.to_bytes(8, "little"))

    def launch(self, args: list[Any], launch: LaunchPlan) -> None:
        self.launches += 1
        self.point(args)
        self.fn(*args)

    def global_size(self, name: str) -> int:
        return SYMBOLS.get(name, 0)

    def set_global(self, name: str, data: bytes) -> None:
        GLOBALS[self.digest, name] = data


class FakeSession:
    def __init__(self) -> None:
        self.torch = torch
        self.device = torch.device("cpu")
        self.info = GPU
        self.cuda = None
        self.vetted: set[Any] = set()
        self.loaded: dict[str, FakeKernel] = {}
        self.oracle_cache = OracleCache(1 << 30)
        self.clock: FakeClock | None = FakeClock()  # None: a machine without the kernel clock
        self.clock_note = "" if self.clock else "no kernel clock (the CPU double has none)"
        self.wait_alone: Any = lambda: None  # the worker's ask for the GPU alone, before the timed runs

    def load(self, binary: KernelBinary, dtypes: list[str | None]) -> FakeKernel:
        if binary.entry not in self.loaded:
            self.loaded[binary.entry] = FakeKernel(KERNELS[binary.entry], binary.entry)
        return self.loaded[binary.entry]

    def shared_poison(self) -> _NoShared:
        return _NoShared()

    def unmapped_pages(self) -> Any:
        raise UnmappedUnavailable("no GPU (CPU test double)")

    def event(self) -> _Event:
        return _Event()

    def flush_l2(self, factor: int = 2) -> None:
        pass

    def hold_gpu(self, cycles: int = 0, until_released: bool = True) -> Callable[[], None]:
        return lambda: None

    def kernel_clock(self) -> FakeClock | None:
        return self.clock

    def synchronize(self) -> None:
        pass

    def take_printed(self) -> str:
        text = "".join(PRINTED)
        PRINTED.clear()
        return text
