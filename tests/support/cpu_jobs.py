"""Jobs on the CPU test double (fake_gpu.py): a spec'd source, its kernel and a candidate as
Python kernels (fake_kernels.py), run as the worker runs a job; and how a result's checks read."""

from __future__ import annotations

from fsr_lsp.evaluator.gpu.run import run_job
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.evaluator.records import Defences, EvalJob, TimingConfig
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from . import fake_kernels  # noqa: F401  (registers the Python kernels)
from .fake_gpu import FakeSession, binary

AXPY = """/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 }, { n = 1003 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
a = 1.5
x = "in[n]"
y = "inout[n]"
*/
__global__ void axpy(int n, float a, const float* x, float* y) { }
"""


def job(source: str, name: str, original: str, candidate: str | None, **defences) -> EvalJob:
    src = SourceText(source)
    k = find_kernel(src, name)
    spec = parse_spec(src, k).spec
    return EvalJob(kernel=name, original=binary(original), candidate=binary(candidate) if candidate else None,
                   sizes=build_plans(k, spec), seeds_per_size=2, base_seed=7,
                   timing=TimingConfig(warmup=1, min_reps=8, max_reps=8, target_seconds=0.0),
                   defences=Defences(**defences))


def run(source: str, name: str, original: str, candidate: str | None, **defences):
    return run_job(FakeSession(), job(source, name, original, candidate, **defences))


def states(result):
    return {c.name: c.status for c in result.checks}


def failed(result):
    return next(c for c in result.checks if c.status == "fail")
