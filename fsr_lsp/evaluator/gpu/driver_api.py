"""The CUDA driver API through ctypes, for what pycuda lacks (cooperative launches, texture
objects, virtual memory): one handle on libcuda, and its error codes as exceptions naming the
call and the driver's name for the error."""

from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def libcuda() -> Any:
    return ctypes.CDLL("libcuda.so.1")


def check(code: int, what: str, error: type[Exception] = RuntimeError) -> None:
    """Raise `error` ("cuMemcpy3D: CUDA_ERROR_INVALID_VALUE") unless `code` is CUDA_SUCCESS."""
    if code:
        name = ctypes.c_char_p()
        libcuda().cuGetErrorName(code, ctypes.byref(name))
        raise error(f"{what}: {(name.value or b'CUDA error %d' % code).decode()}")
