"""A round's leaders confirmed one at a time against together (issue 59: one compute-sanitizer
child checking several candidates of a round). Three saxpy rewrites, two of them staging
through shared memory (so racecheck runs on them), each confirmed as a search confirms its
leaders: more seeds, then memcheck and racecheck. Each way starts as after a search's round
(the sanitizer children loaded, their contexts made), the two ways in turn.

    python bench/confirm_batch.py [TURNS]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from _common import console, save, table
from throughput import SOURCE, SPEC

from fsr_lsp.evaluator import EvalOptions, Evaluator
from fsr_lsp.evaluator.backends import EvalRequest, LocalBackend
from fsr_lsp.search.gpu_bench import CONFIRM_SEEDS


def leader(block: int, shared: bool) -> str:
    spec = SPEC.replace("block = 256", f"block = {block}").replace('grid  = "cdiv(n, 256)"', f'grid  = "cdiv(n, {block})"')
    if not shared:
        body = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = a * x[i] + y[i];\n"
    else:
        body = (f"    __shared__ float s[{block}];\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    s[threadIdx.x] = i < n ? x[i] : 0.0f;\n    __syncthreads();\n"
                "    if (i < n) y[i] = a * s[threadIdx.x] + y[i];\n")
    return f"{spec}\n__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)\n{{\n{body}}}\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("turns", nargs="?", type=int, default=3)
    args = parser.parse_args()
    leaders = [leader(128, True), leader(512, True), leader(128, False)]
    rows, records = [], []
    with tempfile.TemporaryDirectory() as cache, Evaluator() as ev:
        backend = LocalBackend(ev)
        strict = EvalOptions(cache_dir=cache, seeds_per_size=CONFIRM_SEEDS)
        requests = [EvalRequest(SOURCE, "saxpy", text, strict, action="confirm") for text in leaders]
        backend.evaluate([EvalRequest(SOURCE, "saxpy", None, strict)])  # the worker up, the original measured
        for r in requests:  # every leader compiled once: neither way pays the compiler
            backend.evaluate([EvalRequest(SOURCE, "saxpy", r.candidate, strict)])
        times: dict[str, list[float]] = {"one at a time": [], "together": []}
        for turn in range(args.turns):
            for way in times:
                backend.keep_warm(wait=True)  # as after a round: children loaded, contexts made
                started = time.perf_counter()
                results = [backend.evaluate([r])[0] for r in requests] if way == "one at a time" \
                    else backend.evaluate(requests)
                seconds = time.perf_counter() - started
                times[way].append(seconds)
                confirmed = sum(r.confirmed for r in results)
                tools = sorted({c.name for r in results for c in r.checks if c.name.startswith("sanitizer")
                                and c.status == "pass"})
                rows.append([turn + 1, way, seconds, f"{confirmed}/{len(results)}", ", ".join(tools)])
                records.append({"turn": turn + 1, "way": way, "seconds": seconds, "confirmed": confirmed,
                                "messages": [r.message[:200] for r in results if not r.confirmed]})
        backend.close_warm()
        gpu = ev.gpu.name if ev.gpu else "?"
    table(f"three leaders confirmed (saxpy rewrites, two through shared memory), {gpu}",
          ["turn", "way", "seconds", "confirmed", "sanitizers passed"], rows)
    for way, values in times.items():
        console.print(f"{way}: median {statistics.median(values):.2f} s over {len(values)} turns")
    save("confirm_batch", {"gpu": gpu, "runs": records})


if __name__ == "__main__":
    main()
