"""The injection library, built from `fsr_capture.cpp` against the CUDA toolkit's own CUPTI
(native.py), once per (source, toolkit) and cached under ~/.cache/fsr-lsp."""

from __future__ import annotations

import os
from pathlib import Path

from ..native import BuildError, cuda_home, cupti_library, cupti_paths

SOURCE = Path(__file__).with_name("fsr_capture.cpp")
LIBRARY = "libfsr_capture.so"
__all__ = ["SOURCE", "LIBRARY", "BuildError", "cuda_home", "cupti_paths", "injection_library"]


def injection_library(nvcc: str = "", cache: Path | None = None) -> Path:
    """The built library's path (building it the first time, a few seconds); $FSR_CAPTURE_LIBRARY
    names a library built elsewhere."""
    if os.environ.get("FSR_CAPTURE_LIBRARY"):
        return Path(os.environ["FSR_CAPTURE_LIBRARY"])
    return cupti_library(SOURCE, LIBRARY, "the capture library", nvcc, cache)
