"""Cooperative launches, through the driver API itself: pycuda has none. A kernel that syncs
its whole grid (`cooperative_groups::this_grid().sync()`) must be launched with
cuLaunchCooperativeKernel, which checks that every block can be resident at once; launched
plainly, `grid.sync()` fails ("unspecified launch failure") or hangs."""

from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any

from .driver_api import check, libcuda
from .packing import is_struct

_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_CTYPES: dict[str, Any] = {
    "float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "int16": ctypes.c_int16, "uint16": ctypes.c_uint16,
    "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "bool": ctypes.c_uint8,
    "float16": ctypes.c_uint16, "bfloat16": ctypes.c_uint16,  # their bit patterns
}


class CooperativeError(RuntimeError):
    """The driver refused a cooperative launch (e.g. more blocks than can be resident at once)."""


@lru_cache(maxsize=1)
def _driver() -> Any:
    lib = libcuda()
    lib.cuLaunchCooperativeKernel.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                                              ctypes.POINTER(ctypes.c_void_p)]
    return lib


def _check(code: int, what: str) -> None:
    check(code, what, CooperativeError)


class CooperativeKernel:
    """One kernel of a cubin, loaded into the current context for cooperative launches."""

    def __init__(self, cubin: bytes, entry: str) -> None:
        lib = _driver()
        self._module, self._fn = ctypes.c_void_p(), ctypes.c_void_p()
        _check(lib.cuModuleLoadData(ctypes.byref(self._module), cubin), "cuModuleLoadData")
        _check(lib.cuModuleGetFunction(ctypes.byref(self._fn), self._module, entry.encode()), "cuModuleGetFunction")
        self._smem_set = 0

    def address(self, name: str) -> tuple[int, int]:
        """This module's copy of the symbol: its device address and bytes."""
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        _check(_driver().cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(size), self._module, name.encode()),
               "cuModuleGetGlobal")
        return ptr.value, size.value

    def set_global(self, name: str, data: bytes) -> None:
        """This module's copy of a `__constant__` symbol (job/constants.py)."""
        ptr, size = self.address(name)
        data = data[:size]
        _check(_driver().cuMemcpyHtoD_v2(ctypes.c_uint64(ptr), ctypes.c_char_p(data), ctypes.c_size_t(len(data))),
               "cuMemcpyHtoD")

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
               values: list[Any], dtypes: list[str | None]) -> None:
        """Queue a cooperative launch on the default stream; `values` as LoadedKernel passes
        them (device pointers as ints, 16-bit floats as their bits)."""
        if smem > 48 * 1024 and smem != self._smem_set:
            _check(_driver().cuFuncSetAttribute(self._fn, _MAX_DYNAMIC_SHARED, smem), "cuFuncSetAttribute")
            self._smem_set = smem
        holders = [ctypes.c_uint64(v) if d is None else ctypes.create_string_buffer(v, len(v)) if is_struct(d)
                   else _CTYPES[d](v) for v, d in zip(values, dtypes)]
        params = (ctypes.c_void_p * max(len(holders), 1))(*[ctypes.cast(ctypes.byref(h), ctypes.c_void_p)
                                                            for h in holders])
        _check(_driver().cuLaunchCooperativeKernel(self._fn, *grid, *block, smem, None, params),
               "cuLaunchCooperativeKernel")
