"""Whether this machine can run GPU evaluations at all, said in one line."""

from __future__ import annotations

import importlib.util

GPU_PACKAGES = ("pycuda", "torch")


def gpu_support_missing(needs: str) -> str:
    """'' when pycuda and torch are importable, else one line: `needs` says who needs them."""
    missing = [m for m in GPU_PACKAGES if importlib.util.find_spec(m) is None]
    if not missing:
        return ""
    return (f"{' and '.join(missing)} not installed: {needs} pip install 'fsr-lsp[gpu]' on a machine with a "
            "CUDA GPU and toolkit")
