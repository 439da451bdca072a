"""Kernel discovery: where the `__global__` kernels of a file are and what they take."""

from .c_types import abi_signature, element_type, parse_param
from .attach import OrphanSpec
from .discover import Discovery, KernelSource, discover, discover_kernels, find_kernel, kernel_at, kernel_source
from .model import Kernel, Param, SpecComment

__all__ = [
    "Discovery",
    "Kernel",
    "KernelSource",
    "OrphanSpec",
    "Param",
    "SpecComment",
    "abi_signature",
    "discover",
    "discover_kernels",
    "element_type",
    "find_kernel",
    "kernel_at",
    "kernel_source",
    "parse_param",
]
