"""Kernels that launch kernels (dynamic parallelism) compile only as relocatable device code
(`-rdc=true`) and load only linked with the device runtime, `libcudadevrt.a`. The compiler
says when a file needs it; the GPU session links such a cubin before loading it. Every kernel
of such a file needs it, not only the one that launches: the file does not compile without."""

from __future__ import annotations

import os
import re
from pathlib import Path

RDC_FLAG = "-rdc=true"
_NEEDS_RDC = re.compile(r"requires separate compilation mode|relocatable device code|-rdc=true")


def needs_relocatable(log: str, flags: tuple[str, ...]) -> bool:
    """The compile failed for want of `-rdc=true`, and was not already given it."""
    return RDC_FLAG not in flags and bool(_NEEDS_RDC.search(log))


def relocatable(flags: tuple[str, ...]) -> tuple[str, ...]:
    """The flags that compile relocatable device code (nvcc's alone: it knows -rdc and cudadevrt)."""
    return (*flags, RDC_FLAG)


def is_relocatable(flags: tuple[str, ...]) -> bool:
    return RDC_FLAG in flags


def device_runtime(nvcc: str | None) -> Path:
    """libcudadevrt.a of the toolkit whose nvcc compiled the code (else CUDA_HOME's)."""
    homes = [Path(nvcc).resolve().parent.parent] if nvcc else []
    homes += [Path(h) for h in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if h]
    for home in homes:
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            if (home / sub / "libcudadevrt.a").is_file():
                return home / sub / "libcudadevrt.a"
    raise FileNotFoundError("libcudadevrt.a not found (a kernel that launches kernels needs the CUDA toolkit's "
                            "device runtime): set CUDA_HOME")
