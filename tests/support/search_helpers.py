"""Building search contexts and proposals for tests, without a GPU."""

from __future__ import annotations

from pathlib import Path

from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.evaluator.records import EvalResult, GpuInfo, TimingStats
from fsr_lsp.kernels import find_kernel, kernel_source
from fsr_lsp.search.context import RoundContext
from fsr_lsp.search.workload import classify
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec, render_spec

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
# A naive transpose's spec, one thread an element in 32x32 blocks (the shape public programs launch)
TRANSPOSE_SPEC = """/* @fsr
bench = { N = 2048 }
grid = ["(N + 32 - 1) / 32", "(N + 32 - 1) / 32"]
block = [32, 32]
[args]
A = "in[N * N]"
B = "out[N * N]"
N = "N"
*/
"""
GPU = GpuInfo(0, "Scripted GPU", "9.0", 132, 60 << 20, 140 << 30, bandwidth_gbps=4300.0)


def baseline(ms: float = 1.0) -> EvalResult:
    return EvalResult(kernel="k", status="verified", message="ok", gpu=GPU,
                      original_time=TimingStats(ms, ms, ms, ms, ms, 10))


def context(source: str, name: str, round_: int = 0, history=None, seeds=None, mode="fsr") -> RoundContext:
    src = SourceText(source)
    kernel = find_kernel(src, name)
    spec = parse_spec(src, kernel).spec
    texts = kernel_source(src, kernel)
    text = texts.unit
    bench = build_plans(kernel, spec)[-1]
    spec_text = texts.spec or render_spec(spec)
    return RoundContext(kernel=kernel, kernel_text=text, spec=spec, spec_text=spec_text, bench=bench, gpu=GPU,
                        baseline=baseline(), workload=classify(text, bench), round=round_, rounds=4, mode=mode,
                        history=list(history or []), seeds=list(seeds or []), definition_text=texts.definition,
                        declarations=texts.declarations)


def example(name: str) -> str:
    return (EXAMPLES / name).read_text()


def relaunched(text: str, name: str, source: str, block: tuple[int, ...] = (256,)):
    """A candidate checked as a search checks it, whose `@fsr` block, over the original's spec,
    changes the launch (to `block` threads a block) and nothing else: (kernel, spec, the check)."""
    src = SourceText(text)
    kernel = find_kernel(src, name)
    spec = parse_spec(src, kernel).spec
    checked = check_candidate(src, kernel, spec, source)
    assert checked.ok, checked.reason
    assert checked.launch_changed and checked.spec.block == block and checked.spec.args == spec.args
    return kernel, spec, checked
