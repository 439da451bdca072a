"""Out-of-bounds defences that need no sanitizer.

Guard bands, in every verification launch: each buffer sits inside a larger allocation with
canary bands before and after it (NaN for floating types on the first run, byte patterns
otherwise), checked after the launch. A write outside the buffer changes a band; a read
outside it that feeds a result turns that result into NaN. The buffer itself keeps the
256-byte alignment cudaMalloc promises, so correct `float4` casts still work.

Unmapped pages, once per buffer, placement and size: the buffer is placed against address
space that is reserved but not mapped (driver virtual memory API), either starting at the
first mapped byte (a read before the start faults) or, where its length keeps the 256-byte
alignment, ending at the last one (a read past the end faults). A fault ends the worker's
context, so each launch has one buffer placed so: a fault names it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from ..records import ArgPlan
from .buffers import FLOATS, POISON_BYTE, storage_dtype
from .driver_api import libcuda

ALIGN = 256  # what cudaMalloc promises and vectorised kernels rely on
BAND_MIN = 4096
BAND_MAX = 1 << 20


def round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def band_bytes(nbytes: int) -> int:
    """Bands grow with the buffer (a 2D kernel overrunning a row writes a row's worth) but stay
    small next to it."""
    return min(max(BAND_MIN, round_up(nbytes // 8, ALIGN)), BAND_MAX)


@dataclass
class Guarded:
    """One buffer inside its guard bands (a region of its run's arena: GuardedSet)."""

    arg: ArgPlan
    whole: Any  # uint8 tensor: band | buffer | padding + band
    before: int  # bytes before the buffer
    nbytes: int
    band_before: Any  # the canary bytes as written
    band_after: Any
    dtype: Any  # the buffer's torch storage dtype

    @property
    def tensor(self) -> Any:
        """The buffer itself (a view: launches write through it)."""
        return self.whole[self.before:self.before + self.nbytes].view(self.dtype)

    def bands(self) -> tuple[Any, Any]:
        """The bytes before the buffer and after it (views)."""
        return self.whole[:self.before], self.whole[self.before + self.nbytes:]

    def violations(self) -> Any:
        """Changed band bytes, as a device scalar (no synchronisation)."""
        before, after = self.bands()
        return (before != self.band_before).sum() + (after != self.band_after).sum()

    def extent(self) -> tuple[int, int]:
        """(bytes written before the start, bytes written past the end), to the farthest changed
        byte, in whole elements of the buffer's type."""
        band_before, band_after = self.bands()
        before = (band_before != self.band_before).nonzero()
        after = (band_after != self.band_after).nonzero()
        size = self.dtype.itemsize
        return (round_up(self.before - int(before[0].item()), size) if before.numel() else 0,
                round_up(int(after[-1].item()) + 1, size) if after.numel() else 0)


REGION_ALIGN = 512  # each buffer's region in a run's arena starts where torch's own allocations do


class GuardedSet:
    """One run's buffers, each inside its bands, in one allocation: a launch's check reads every
    band in one comparison (verification checks after each of its hundred-odd launches a
    candidate, and a comparison per band was most of a small kernel's check: issue 59)."""

    def __init__(self, torch: Any, whole: Any, guards: dict[str, Guarded], written: Any) -> None:
        self.torch, self.whole, self.guards, self._written = torch, whole, guards, written

    def violations(self) -> Any:
        """Changed band bytes of every buffer, as a device scalar (no synchronisation)."""
        if not self.guards:
            return self.torch.zeros((), dtype=self.torch.int64)
        return (self.torch.cat([b for g in self.guards.values() for b in g.bands()]) != self._written).sum()

    def overrun(self) -> tuple[str, Guarded] | None:
        """The first buffer (in the run's order) whose bands changed, where any did (a wait)."""
        if not self.guards or not int(self.violations().item()):
            return None
        return next(((name, g) for name, g in self.guards.items() if int(g.violations().item())), None)


def guarded_set(torch: Any, device: Any, args: list[ArgPlan], which: str, contents: dict[str, Any]) -> GuardedSet:
    """`args`' buffers with canary bands, in one arena: each `contents` entry copied in, the
    others holding the run's poison (the bands hold it too)."""
    layout = []
    offset = 0
    for arg in args:
        dtype = storage_dtype(torch, arg.dtype)
        nbytes = arg.numel * dtype.itemsize
        band = band_bytes(nbytes)
        size = band + round_up(nbytes, ALIGN) + band
        layout.append((arg, dtype, offset, nbytes, band, size))
        offset = round_up(offset + size, REGION_ALIGN)
    whole = torch.empty(max(offset, 1), dtype=torch.uint8, device=device)
    regions = []
    for arg, dtype, start, nbytes, band, size in layout:
        region = whole[start:start + size]
        if which == "A" and arg.dtype in FLOATS:
            region.view(dtype).fill_(float("nan"))
        else:
            region.fill_(POISON_BYTE[which])
        regions.append((arg, dtype, region, nbytes, band))
    bands = [b for _, _, region, nbytes, band in regions for b in (region[:band], region[band + nbytes:])]
    written = torch.cat(bands) if bands else whole[:0]
    guards: dict[str, Guarded] = {}
    at = 0
    for arg, dtype, region, nbytes, band in regions:
        after = region.numel() - band - nbytes
        g = Guarded(arg, region, band, nbytes, written[at:at + band], written[at + band:at + band + after], dtype)
        at += band + after
        if contents.get(arg.name) is not None:
            g.tensor.copy_(contents[arg.name])
        guards[arg.name] = g
    return GuardedSet(torch, whole, guards, written)


def guarded(torch: Any, device: Any, arg: ArgPlan, which: str, content: Any | None) -> Guarded:
    """A buffer with canary bands: `content` copied in, or (for `out`) the run's poison."""
    return guarded_set(torch, device, [arg], which, {arg.name: content}).guards[arg.name]


def describe_overrun(arg: str, size: str, extent: tuple[int, int]) -> str:
    """'writes up to 4 bytes past the end of `c` at n=1 (guard bands)'."""
    before, after = extent
    parts = []
    if after:
        parts.append(f"writes up to {after} bytes past the end of `{arg}`")
    if before:
        parts.append(f"writes up to {before} bytes before the start of `{arg}`")
    return " and ".join(parts) + f" at {size} (guard bands)"


# ------------------------------------------------------------------ unmapped pages

_PINNED, _DEVICE, _READWRITE, _MINIMUM = 0x1, 0x1, 0x3, 0x0


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class UnmappedUnavailable(RuntimeError):
    pass


@dataclass
class _Arena:
    base: int  # reserved: [one unmapped granule][mapped][one unmapped granule]
    reserved: int
    mapped: int
    handle: int


class UnmappedPages:
    """Arenas of mapped memory between unmapped granules, kept across jobs (the sizes of a
    search repeat), with at most `keep` alive at once."""

    def __init__(self, device_index: int, keep: int = 8) -> None:
        try:
            self._cu = libcuda()
        except OSError as e:
            raise UnmappedUnavailable(f"libcuda not loadable: {e}") from None
        self._prop = _AllocationProp(type=_PINNED, requestedHandleTypes=0, location=_Location(_DEVICE, device_index))
        self._access = _AccessDesc(location=_Location(_DEVICE, device_index), flags=_READWRITE)
        granularity = ctypes.c_size_t()
        self._check("cuMemGetAllocationGranularity",
                    self._cu.cuMemGetAllocationGranularity(ctypes.byref(granularity), ctypes.byref(self._prop), _MINIMUM))
        self.granularity = granularity.value
        self._arenas: dict[int, _Arena] = {}
        self._keep = keep

    def _check(self, what: str, code: int) -> None:
        if code != 0:
            raise UnmappedUnavailable(f"{what} failed with CUDA error {code}")

    def place(self, nbytes: int, at_end: bool) -> int:
        """A device address for a buffer of `nbytes`: its first byte is the first mapped byte,
        or (at_end) its last byte the last mapped one."""
        if at_end and nbytes % ALIGN:
            raise ValueError("an end placement needs a length that keeps the 256-byte alignment")
        g = self.granularity
        mapped = round_up(nbytes, g) + (0 if at_end else g)  # at the start: room past the end, no fault there
        arena = self._arena(mapped)
        first = arena.base + g
        return first + arena.mapped - nbytes if at_end else first

    def _arena(self, mapped: int) -> _Arena:
        arena = self._arenas.pop(mapped, None)
        if arena is None:
            while len(self._arenas) >= self._keep:
                self._free(self._arenas.pop(next(iter(self._arenas))))
            arena = self._map(mapped)
        self._arenas[mapped] = arena  # most recently used last
        return arena

    def _map(self, mapped: int) -> _Arena:
        cu, g = self._cu, self.granularity
        reserved = mapped + 2 * g
        base = ctypes.c_uint64()
        self._check("cuMemAddressReserve", cu.cuMemAddressReserve(ctypes.byref(base), ctypes.c_size_t(reserved),
                                                                  ctypes.c_size_t(g), ctypes.c_uint64(0),
                                                                  ctypes.c_ulonglong(0)))
        handle = ctypes.c_uint64()
        code = cu.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(mapped), ctypes.byref(self._prop), ctypes.c_ulonglong(0))
        if code != 0:
            cu.cuMemAddressFree(base, ctypes.c_size_t(reserved))
            self._check("cuMemCreate", code)
        arena = _Arena(base.value, reserved, mapped, handle.value)
        try:
            self._check("cuMemMap", cu.cuMemMap(ctypes.c_uint64(arena.base + g), ctypes.c_size_t(mapped),
                                                ctypes.c_size_t(0), ctypes.c_uint64(arena.handle), ctypes.c_ulonglong(0)))
            self._check("cuMemSetAccess", cu.cuMemSetAccess(ctypes.c_uint64(arena.base + g), ctypes.c_size_t(mapped),
                                                            ctypes.byref(self._access), ctypes.c_size_t(1)))
        except UnmappedUnavailable:
            self._free(arena)
            raise
        return arena

    def _free(self, arena: _Arena) -> None:
        cu, g = self._cu, self.granularity
        cu.cuMemUnmap(ctypes.c_uint64(arena.base + g), ctypes.c_size_t(arena.mapped))
        cu.cuMemRelease(ctypes.c_uint64(arena.handle))
        cu.cuMemAddressFree(ctypes.c_uint64(arena.base), ctypes.c_size_t(arena.reserved))

    def close(self) -> None:
        while self._arenas:
            self._free(self._arenas.pop(next(iter(self._arenas))))


def placements(nbytes: int) -> list[str]:
    """Where one buffer of this length is put against unmapped pages: always with its start
    there; with its end there too when the length keeps the 256-byte alignment."""
    return ["start", "end"] if nbytes % ALIGN == 0 else ["start"]
