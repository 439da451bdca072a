"""The evaluator: compile, verify and time a rewrite against the original kernel.

Plain data in (source text or an EvalJob), an EvalResult out. It knows nothing of editors
or language models.
"""

from .api import evaluate, run_prepared
from .compiler import CompileOptions, KernelRef, compile_kernel, find_nvcc
from .worker_client import Evaluator, EvaluatorUnavailable
from .prepare import EvalOptions, Prepared, prepare
from .records import (Check, CompileResult, EvalJob, EvalResult, GpuInfo, KernelBinary, Mismatch, Resources,
                      TimingConfig, TimingStats)

__all__ = [
    "Check", "CompileOptions", "CompileResult", "EvalJob", "EvalOptions", "EvalResult", "Evaluator",
    "EvaluatorUnavailable", "GpuInfo", "KernelBinary", "KernelRef", "Mismatch", "Prepared", "Resources",
    "TimingConfig", "TimingStats", "compile_kernel", "evaluate", "find_nvcc", "prepare", "run_prepared",
]
