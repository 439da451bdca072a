"""Timing repeatability: each example kernel measured 5 times (fresh inputs and seeds each
time, as separate evaluations). Target: spread of the five medians <= 2%."""

from __future__ import annotations

import statistics

from _common import ROOT, save, spread_pct, table

from fsr_lsp.evaluator import Evaluator, evaluate

KERNELS = [("saxpy.cu", "saxpy"), ("transpose.cu", "transpose"), ("matmul.cu", "matmul")]


def main() -> None:
    rows, records = [], {}
    with Evaluator() as ev:
        ev.start()
        for file, name in KERNELS:
            source = (ROOT / "examples" / file).read_text()
            results = [evaluate(ev, source, name) for _ in range(5)]
            bad = [r.message for r in results if not r.verified]
            if bad:
                raise SystemExit(f"{name}: {bad[0]}")
            medians = [r.original_time.median_ms for r in results]
            iqr = [r.original_time.spread_pct for r in results]
            rows.append([name, results[0].bench_size, statistics.median(medians), min(medians), max(medians),
                         spread_pct(medians), max(iqr), results[0].original_time.reps])
            records[name] = {"bench": results[0].bench_size, "medians_ms": medians, "spread_pct": spread_pct(medians),
                             "iqr_pct": iqr, "ref_ms": [r.ref_time.median_ms for r in results if r.ref_time]}
    table(f"timing repeatability on {ev.gpu.name}: 5 evaluations each",
          ["kernel", "bench size", "median ms", "min", "max", "spread %", "worst IQR %", "runs"], rows)
    save("repeatability", {"gpu": ev.gpu.name, "kernels": records})


if __name__ == "__main__":
    main()
