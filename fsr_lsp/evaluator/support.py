"""Whether this machine can run GPU evaluations at all, said in one line."""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import re
import subprocess
from pathlib import Path
from typing import Any

GPU_PACKAGES = ("pycuda", "torch")


def gpu_support_missing(needs: str) -> str:
    """'' when pycuda and torch are importable, else one line: `needs` says who needs them."""
    missing = [m for m in GPU_PACKAGES if importlib.util.find_spec(m) is None]
    if not missing:
        return ""
    return (f"{' and '.join(missing)} not installed: {needs} pip install 'fsr-lsp[gpu]' on a machine with a "
            "CUDA GPU and toolkit")


def find_cuda_tool(name: str) -> str | None:
    """A CUDA toolkit program (compute-sanitizer, ncu): on PATH, else in $CUDA_HOME/bin or
    /usr/local/cuda/bin, where installs put it without adding it to PATH."""
    found = shutil.which(name)
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and os.access(Path(home) / "bin" / name, os.X_OK):
            return str(Path(home) / "bin" / name)
    return None


def last_line(out: str) -> str:
    """The last non-blank line of a tool's output (what it says when it gives up)."""
    lines = [ln.strip() for ln in out.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def load(path: str) -> Any:
    """The object named `module:name` (a backend factory, a stand-in, a function run remotely)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def predicted_arch(device_index: int) -> str | None:
    """The nvcc arch of GPU `device_index` as nvidia-smi reports it, in well under a second: so
    that compiling starts while the worker loads torch and CUDA (about 5 s). The worker's own
    answer still decides; None where nvidia-smi cannot tell."""
    from .records import GpuInfo

    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    which = str(device_index)
    if visible is not None:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        if device_index >= len(ids):
            return None
        which = ids[device_index]
    try:
        out = subprocess.run([tool, "--query-gpu=compute_cap", "--format=csv,noheader", "-i", which],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    cap = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    if not re.fullmatch(r"\d+\.\d+", cap):
        return None
    return GpuInfo(device_index, "", cap, 0, 0, 0).arch
