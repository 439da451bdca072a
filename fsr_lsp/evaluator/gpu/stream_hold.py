"""The stream held while the host queues a timed launch: a one-thread kernel spins on a flag in
host memory the GPU reads directly, and the host raises the flag once the start event, the launch
and the end event are all queued. The events then hold GPU time only, however long Python takes
to submit the launch (a thread switch, a collection, CUPTI's tracing).

A fixed spin before the start event (torch's `_sleep`) hid the host only while the host was faster
than the spin: on an H200 with the kernel clock tracing, a 2.6 us kernel read 5 us by events in one
timing and 14 us in the next. The spin is bounded (HOLD_TIMEOUT_S of the GPU's clock), so a host
that never raises the flag costs that long, never a hang.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

log = logging.getLogger(__name__)

HOLD_TIMEOUT_S = 0.2
# fsr_hold(flag, until, timeout_cycles): spin while *flag < until, at most timeout_cycles
# (hand-written PTX: loaded by the driver's JIT, no compiler needed).
_PTX = """
.version 7.0
.target sm_70
.address_size 64
.visible .entry fsr_hold(.param .u64 flag, .param .u32 until, .param .u64 timeout)
{
  .reg .pred %p<3>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<7>;
  ld.param.u64 %rd1, [flag];
  ld.param.u32 %r1, [until];
  ld.param.u64 %rd2, [timeout];
  mov.u64 %rd3, %clock64;
WAIT:
  ld.volatile.u32 %r2, [%rd1];
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  mov.u64 %rd4, %clock64;
  sub.s64 %rd5, %rd4, %rd3;
  setp.lt.s64 %p2, %rd5, %rd2;
  @%p2 bra WAIT;
DONE:
  ret;
}
"""


class StreamHold:
    """One flag and its spin kernel, for one worker's timings."""

    def __init__(self, cuda: Any, clock_khz: int) -> None:
        import numpy as np

        self._flag = cuda.pagelocked_zeros((1,), dtype=np.uint32, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
        self._pointer = np.intp(self._flag.base.get_device_pointer())
        self._module = cuda.module_from_buffer(_PTX.encode())
        self._spin = self._module.get_function("fsr_hold")
        self._spin.prepare("PIq")
        self._timeout = int(clock_khz * 1000 * HOLD_TIMEOUT_S)
        self._raised = 0

    def hold(self) -> Callable[[], None]:
        """Queue the spin; the returned call lets the stream go on."""
        self._raised = (self._raised + 1) & 0x7FFFFFFF or 1
        if self._raised == 1:
            self._flag[0] = 0  # the count wrapped: start the flag again below it
        until = self._raised
        self._spin.prepared_async_call((1, 1, 1), (1, 1, 1), None, self._pointer, until, self._timeout)

        def release() -> None:
            self._flag[0] = until

        return release


def stream_hold(cuda: Any, clock_khz: int) -> tuple[StreamHold | None, str]:
    """The hold, or None and why (the timing then spins a fixed time before each launch)."""
    try:
        return StreamHold(cuda, clock_khz), ""
    except Exception as e:  # noqa: BLE001 - no mapped host memory, or the driver refused the PTX
        log.info("no stream hold: %s", e)
        return None, f"no stream hold ({e})"
