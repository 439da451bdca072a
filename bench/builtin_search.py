"""The built-in generator on naive kernels of the usual families, each search within 60 s.

Target: geometric-mean speedup >= 1.4x with every winner verified. For scale: a block-size-only
search (Kernel Tuner) reaches about 1.26x on such kernels on an H200, unverified.
"""

from __future__ import annotations

import math
import sys

from _common import ROOT, save, table

from fsr_lsp.evaluator import Evaluator
from fsr_lsp.search import SearchConfig, run_search
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator
from fsr_lsp.search.gpu_bench import GpuBench

KERNELS = [("saxpy.cu", "saxpy"), ("softmax.cu", "softmax"), ("layernorm.cu", "layernorm"), ("matmul.cu", "matmul"),
           ("transpose.cu", "transpose"), ("stencil.cu", "stencil")]


def main(budget: float) -> None:
    rows, records, speedups = [], {}, []
    with Evaluator() as ev:
        gpu = ev.start()
        for file, name in KERNELS:
            source = (ROOT / "examples" / file).read_text()
            config = SearchConfig(rounds=4, candidates=8, time_budget=budget, fix_attempts=0, sanitize_winner=False)
            outcome = run_search(source, file, name, config, GpuBench(ev, source, name), BuiltinGenerator())
            best = outcome.best
            speedup = best.result.speedup if best else 1.0
            speedups.append(speedup)
            verified = sum(t.verified for t in outcome.tried)
            rows.append([name, outcome.baseline.original_time.median_ms if outcome.baseline else "-",
                         best.time_ms if best else "-", speedup, best.proposal.note if best else "no win",
                         f"{verified}/{len(outcome.tried)}", outcome.seconds])
            records[name] = {"status": outcome.status, "speedup": speedup, "winner": best.proposal.note if best else None,
                             "message": outcome.message, "tried": len(outcome.tried), "verified": verified,
                             "seconds": outcome.seconds}
    geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
    table(f"built-in generator on {gpu.name}: each search <= {budget:.0f} s, winners verified",
          ["kernel", "original ms", "best ms", "speedup", "winner", "verified", "search s"], rows)
    print(f"geometric-mean speedup: {geomean:.3f}x")
    save("builtin_search", {"gpu": gpu.name, "kernels": records, "geomean": geomean})


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
