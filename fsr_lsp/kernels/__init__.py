"""Kernel discovery: where the `__global__` kernels of a file are and what they take."""

from .ctypes import abi_signature, element_type, parse_param
from .discover import discover_kernels, find_kernel, kernel_at
from .model import Kernel, Param, SpecComment

__all__ = [
    "Kernel",
    "Param",
    "SpecComment",
    "abi_signature",
    "discover_kernels",
    "element_type",
    "find_kernel",
    "kernel_at",
    "parse_param",
]
