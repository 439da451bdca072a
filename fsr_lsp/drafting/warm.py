"""A first draft's one-time costs, paid on a thread when the editor starts the server.

A draft runs some dozen tree-sitter queries over the kernel and its launch, each compiled on
first use (about 25 ms each on a 2-core machine: the CUDA grammar is large). The first hover on
a kernel waits 0.1 s for its draft, so without this it answered "drafting the spec..." even
where the workspace's launches were long read. A small kernel drafted from its launch, in a
folder of its own, compiles them beforehand.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from ..kernels import find_kernel
from ..source import SourceText
from .resolver import workspace_spec
from .workspace import LaunchIndex

log = logging.getLogger("fsr_lsp.drafting")

SAMPLE = """__global__ void fsr_warm(float* y, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + y[i];
}

int main()
{
    const int n = 1000;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    fsr_warm<<<(n + 255) / 256, 256>>>(y, x, n);
    return 0;
}
"""


def warm_drafting() -> None:
    """Draft SAMPLE's kernel once (its queries compiled and kept); never raises."""
    try:
        with tempfile.TemporaryDirectory(prefix="fsr-warm-") as folder:
            path = Path(folder) / "fsr_warm.cu"
            kernel = find_kernel(SourceText(SAMPLE), "fsr_warm")
            if kernel is not None:
                workspace_spec(LaunchIndex(Path(folder)), path, SAMPLE, kernel, {path: SAMPLE})
    except Exception:  # noqa: BLE001 - only a head start: the first real draft says what is wrong
        log.debug("warming the drafting failed", exc_info=True)
