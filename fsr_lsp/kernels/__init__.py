"""Kernel discovery: where the `__global__` kernels of a file are and what they take
(tree-sitter, with a token scanner for mid-edit files and macros), C types, the one bracket
matcher (brackets.py) and the preprocessor's view of a text (pptokens.py)."""

from .c_types import abi_signature, element_type, parse_param
from .attach import OrphanSpec
from .discover import (Discovery, KernelNotFound, KernelSource, discover, discover_kernels, find_kernel, kernel_at,
                       kernel_source, require_kernel)
from .kernel import Kernel, Param, SpecComment

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
    "KernelNotFound",
    "require_kernel",
    "parse_param",
]
