"""A search on the scripted evaluator stand-in (scripted_bench.py): model answers whose verdict
the stand-in reads from a comment, the loop run on them, and a bench that judges the built-in
generator's rewrites by what they changed."""

from __future__ import annotations

from fsr_lsp.search import LLMConfig, SearchConfig, SearchControl, run_search
from fsr_lsp.search.generators.llm import LLMGenerator

from .fake_llm import answer
from .scripted_bench import ScriptedBench
from .search_helpers import example

SAXPY = example("saxpy.cu")
LOOP_KEY = "FSR_LOOP_KEY"  # the environment variable `search` names as the endpoint's key (a test sets it)


def kernel(verdict: str, tag: str = "") -> str:
    return answer(f"""```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {tag}
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: {verdict}
}}
```
{tag}""")


def search(llm, bench=None, store=None, cancel=None, progress=None, **config):
    cfg = SearchConfig(llm=LLMConfig(base_url=llm.base_url, model="m", api_key_env=LOOP_KEY, max_retries=1),
                       sanitize_winner=config.pop("sanitize_winner", False), **config)
    generator = LLMGenerator(cfg.llm, sleep=lambda s: None, parallel=1)
    bench = bench or ScriptedBench()
    return run_search(SAXPY, "examples/saxpy.cu", "saxpy", cfg, bench, generator, store,
                      SearchControl(progress, cancel)), bench


class BuiltinBench(ScriptedBench):
    """Verdicts from what the built-in rewrites changed: __restrict__ 1.1x, block 128 1.2x."""

    def _verdict(self, source):
        speedup = 1.0
        if "__restrict__" in source:
            speedup *= 1.1
        if "block = 128" in source:
            speedup *= 1.2
        if "block = 1024" in source:
            speedup *= 0.7
        return super()._verdict(f"__global__ void k() {{}} // verdict: verified {speedup}")
