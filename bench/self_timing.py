"""No fake wins: every example's original submitted as its own candidate (the same-code short
cut off), timed interleaved with itself. A speedup here is timing bias; with the interval rule
(the whole 95% interval above 1 + min gain, default 2%) none may be called a win.
"""

from __future__ import annotations

import dataclasses

from _common import ROOT, save, table

from fsr_lsp.evaluator import EvalOptions, Evaluator, evaluate
from fsr_lsp.kernels import find_kernel, kernel_source
from fsr_lsp.source import SourceText

MIN_GAIN = 0.02
EXAMPLES = ["saxpy", "softmax", "layernorm", "matmul", "transpose", "stencil"]


def main() -> None:
    rows, records = [], []
    options = dataclasses.replace(EvalOptions(), skip_unchanged=False)
    with Evaluator() as ev:
        gpu = ev.start()
        for name in EXAMPLES:
            source = (ROOT / "examples" / f"{name}.cu").read_text()
            src = SourceText(source)
            itself = kernel_source(src, find_kernel(src, name)).definition
            r = evaluate(ev, source, name, itself, options)
            low, high = r.speedup_ci or (float("nan"), float("nan"))
            win = r.is_win(MIN_GAIN)
            rows.append([name, r.status, r.speedup or 0.0, low, high, r.bench_size, "WIN (wrong!)" if win else "no win"])
            records.append({"kernel": name, "status": r.status, "speedup": r.speedup, "interval": [low, high],
                            "win": win, "message": r.message})
    table(f"the original as its own candidate on {gpu.name} (a win needs the interval above {1 + MIN_GAIN:.2f})",
          ["kernel", "status", "speedup", "ci low", "ci high", "bench size", "verdict"], rows)
    save("self_timing", {"gpu": gpu.name, "min_gain": MIN_GAIN, "runs": records})


if __name__ == "__main__":
    main()
