"""Poisoned shared memory before every verification launch.

Shared memory is not cleared between kernels: a block that reads slots no thread of it wrote
gets whatever an earlier block or kernel left on that SM, often the right numbers (the
original, run just before, wrote the same layout). compute-sanitizer's initcheck does not
track shared memory. So before each launch a kernel occupies every SM with the largest
shared-memory footprint the device allows and fills it with 0xFF bytes: NaN for every
floating type, -1 for integers. A read of unwritten shared memory then changes the result.
"""

from __future__ import annotations

from typing import Any

from ..compile.compiler import CompileOptions, CompilerMissing, KernelRef, compile_kernel
from ..records import LaunchPlan

SOURCE = r"""
extern "C" __global__ void fsr_poison_shared(unsigned int words)
{
    extern __shared__ unsigned int fsr_shared[];
    volatile unsigned int* s = fsr_shared;  // volatile: stores nothing reads are still made
    for (unsigned int i = threadIdx.x; i < words; i += blockDim.x)
        s[i] = 0xFFFFFFFFu;
}
"""
THREADS = 1024
MAX_BLOCKS_PER_SM = 32


class SharedPoison:
    """The poison kernel, compiled once per worker; `available` is False (with `why`) when no
    compiler is at hand, and the check then says it did not run."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.why = ""
        self._kernel = None
        info = session.info
        self._sms = max(info.sm_count, 1)
        self._bytes = info.smem_per_block_bytes or 48 * 1024
        self._per_sm = info.smem_per_sm_bytes or self._bytes
        try:
            compiled = compile_kernel(SOURCE, KernelRef("fsr_poison_shared"), CompileOptions(arch=info.arch))
        except CompilerMissing as e:
            self.why = str(e)
            return
        if not compiled.ok or compiled.binary is None:
            self.why = f"the poison kernel did not compile: {compiled.log.strip()[:200]}"
            return
        self._kernel = session.load(compiled.binary, ["uint32"])

    @property
    def available(self) -> bool:
        return self._kernel is not None

    @property
    def block_bytes(self) -> int:
        return self._bytes

    def __call__(self, footprint: int) -> None:
        """Queue the fill before a launch whose blocks use `footprint` bytes of shared memory
        (asynchronous; the launch after it on the same stream sees it). Two fills: one with the
        largest block the device allows, one with blocks of the kernel's own footprint, so the
        SMs' shared/L1 split is the one that kernel gets as well."""
        if self._kernel is None or footprint <= 0:
            return
        self._fill(self._bytes, 2 * self._sms, THREADS)
        per_sm = min(MAX_BLOCKS_PER_SM, max(1, self._per_sm // footprint))
        self._fill(min(footprint, self._bytes), 2 * self._sms * per_sm, 256)

    def _fill(self, nbytes: int, blocks: int, threads: int) -> None:
        self._kernel.launch([nbytes // 4], LaunchPlan(grid=(blocks, 1, 1), block=(threads, 1, 1), smem=nbytes))
