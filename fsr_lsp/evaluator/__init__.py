"""The evaluator: compile, verify and time a rewrite against the original kernel.

Plain data in (source text or an EvalJob), an EvalResult out. It knows nothing of editors
or language models. One subpackage per stage of an evaluation, in the order they run:

- `job/`: source, spec and candidate to a job: the candidate vetted, the runs planned (CPU);
- `compile/`: device code to cubin under limits, and what the compiler says (CPU);
- `gpu/`: the job run, checked and timed (inside the worker process);
- `sanitize/`: compute-sanitizer on a promoted candidate or the original;
- `profile/`: Nsight Compute on one kernel, for a prompt or per source line;
- `worker/`: the process boundary: the worker process, its client, JSON records, the GPU gate;
- `backends/`: where GPU work runs (this machine's GPUs, a Ray cluster).

At the top: the records (`records.py`), one call from source text to verdict (`api.py`), and what
this machine has for GPU work (`support.py`).
"""

from .api import JobControl, evaluate, run_prepared
from .compile.compiler import CompileOptions, KernelRef, compile_kernel, find_nvcc
from .worker.worker_client import Evaluator, EvaluatorUnavailable
from .job.prepare import EvalOptions, Prepared, prepare
from .records import (Check, CompileResult, EvalJob, EvalResult, GpuInfo, KernelBinary, Mismatch, Resources,
                      TimingConfig, TimingStats)

__all__ = [
    "Check", "JobControl", "CompileOptions", "CompileResult", "EvalJob", "EvalOptions", "EvalResult", "Evaluator",
    "EvaluatorUnavailable", "GpuInfo", "KernelBinary", "KernelRef", "Mismatch", "Prepared", "Resources",
    "TimingConfig", "TimingStats", "compile_kernel", "evaluate", "find_nvcc", "prepare", "run_prepared",
]
