"""Where the evaluator worker's start goes (it is in every search's first win): the imports, the
CUDA context, the bandwidth probe, and the whole start as a search sees it (spawn to ready).

    python bench/worker_start.py
"""

from __future__ import annotations

import subprocess
import sys
import time

from _common import ROOT

STEPS = r"""
import time, os
os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import pycuda.driver
t2 = time.perf_counter()
torch.empty(1, device="cuda")
t3 = time.perf_counter()
from fsr_lsp.evaluator.gpu.session import GpuSession
t4 = time.perf_counter()
s = GpuSession(0)
t5 = time.perf_counter()
s.measure_bandwidth()
t6 = time.perf_counter()
print(f"import torch {t1-t0:.2f} s; import pycuda.driver {t2-t1:.2f} s; CUDA context {t3-t2:.2f} s; "
      f"fsr's session module {t4-t3:.2f} s; GpuSession() {t5-t4:.2f} s; one bandwidth probe {t6-t5:.2f} s")
"""


def main() -> None:
    print(f"fsr eval's own imports, before it starts the worker: {_imports():.2f} s")
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", STEPS], capture_output=True, text=True, cwd=ROOT)
        print(out.stdout.strip() or out.stderr[-2000:])
    from fsr_lsp.evaluator import Evaluator

    for _ in range(2):
        t = time.perf_counter()
        with Evaluator() as ev:
            ev.start()
            print(f"Evaluator().start(), spawn to ready: {time.perf_counter() - t:.2f} s")


def _imports() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import fsr_lsp.cli.eval_cmd"], check=True, cwd=ROOT)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
