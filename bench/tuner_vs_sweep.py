"""The built-in tuner against a brute-force block-size sweep, on naive kernels it was never
tuned on (bench/naive_kernels/), both measured in the same run on the same GPU.

Sweep: every launch shape of the tuner's space (1D: 32..1024 by 32; 2D: x in 8..128, x*y in
32..1024), each verified and timed in full like any candidate; its column is the fastest
verified shape (1.00x when none beats the original). Ours: a search with the defaults a user
gets (sanitizers on the leaders and the winner), a 60 s budget. Time to win: seconds into
the search when the winner's full verdict came.

Targets (issue 11): ours never below the sweep (beyond the two measurements' noise), geomean
>= 1.5x, a verified win within 60 s per kernel.

Usage (on the GPU host): python bench/tuner_vs_sweep.py [BUDGET_S] [--ours-only] [KERNEL...]
"""

from __future__ import annotations

import math
import sys
import time

from _common import ROOT, save, table

from fsr_lsp.evaluator import Evaluator
from fsr_lsp.kernels import discover, kernel_source
from fsr_lsp.search import SearchConfig, run_search
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator
from fsr_lsp.search.gpu_bench import GpuBench
from fsr_lsp.search.generators.tuner import render, space_of
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

MIN_GAIN = SearchConfig().min_gain
KERNELS = sorted((ROOT / "bench" / "naive_kernels").glob("*.cu"))


def sweep(bench: GpuBench, source: str, gpu) -> tuple[float, str, float, int]:
    """(best speedup, its shape, its interval's low end, shapes verified), every shape in full."""
    src = SourceText(source)
    kernel = discover(src).kernels[0]
    spec = parse_spec(src, kernel).spec
    definition = kernel_source(src, kernel).definition
    space = space_of(kernel, spec, definition, gpu)
    proposals = [p for c in space.block_configs() if (p := render(c, space, kernel, spec, definition, gpu))]
    results = bench.evaluate(proposals)
    verified = sum(r.verified for r in results)
    # A shape counts as the search's winners do: its whole interval above 1 + min_gain.
    wins = [(r.speedup, p.note, r.speedup_ci[0] if r.speedup_ci else r.speedup)
            for p, r in zip(proposals, results) if r.is_win(MIN_GAIN)]
    if not wins:
        return 1.0, "original", 1.0, verified
    best = max(wins)
    return best[0], best[1], best[2], verified


def main(budget: float, only: list[str], with_sweep: bool = True) -> int:
    rows, records, ours_all, sweep_all = [], {}, [], []
    failures = []
    with Evaluator() as ev:
        gpu = ev.start()
        for path in KERNELS:
            if only and path.stem not in only:
                continue
            source = path.read_text()
            name = discover(SourceText(source)).kernels[0].name
            bench = GpuBench(ev, source, name)
            started = time.monotonic()
            s_speedup, s_shape, s_low, s_count = sweep(bench, source, gpu) if with_sweep else (1.0, "not run", 1.0, 0)
            sweep_s = time.monotonic() - started
            generator = BuiltinGenerator()
            config = SearchConfig(rounds=3, candidates=4, time_budget=budget, fix_attempts=0)
            outcome = run_search(source, str(path), name, config, bench, generator)
            best = outcome.best
            ours = best.result.speedup if best else 1.0
            high = best.result.speedup_ci[1] if best and best.result.speedup_ci else ours
            below = high < s_low  # ours is below the sweep beyond both intervals
            win_at = best.found_at if best else None
            if below:
                failures.append(f"{path.stem}: ours {ours:.2f}x below the sweep's {s_speedup:.2f}x")
            if win_at is None or win_at > 60:
                failures.append(f"{path.stem}: no verified win within 60 s")
            ours_all.append(ours)
            sweep_all.append(s_speedup)
            rows.append([path.stem, outcome.baseline.original_time.median_ms if outcome.baseline else "-",
                         s_speedup, s_shape, ours, best.proposal.note if best else "no win",
                         "below" if below else "ok", "-" if win_at is None else f"{win_at:.0f}",
                         f"{outcome.seconds:.0f}", generator.screened, f"{sweep_s:.0f}"])
            print(f"[tuner] {path.stem}: sweep {s_speedup:.2f}x ({s_shape}, {sweep_s:.0f} s), ours {ours:.2f}x "
                  f"({best.proposal.note if best else 'no win'}), win at {win_at if win_at is None else round(win_at)} s, "
                  f"{generator.screened} screened; {outcome.message}", flush=True)
            records[path.stem] = {"sweep": s_speedup, "sweep_shape": s_shape, "sweep_verified": s_count,
                                  "ours": ours, "ours_interval": best.result.speedup_ci if best else None,
                                  "winner": best.proposal.note if best else None, "win_at_s": win_at,
                                  "search_s": outcome.seconds, "screened": generator.screened,
                                  "verified": sum(t.verified for t in outcome.tried), "tried": len(outcome.tried),
                                  "message": outcome.message}
    geo = math.exp(sum(map(math.log, ours_all)) / len(ours_all))
    geo_sweep = math.exp(sum(map(math.log, sweep_all)) / len(sweep_all))
    table(f"built-in tuner vs a block-size sweep on {gpu.name} (search budget {budget:.0f} s)",
          ["kernel", "orig ms", "sweep", "sweep shape", "ours", "our winner", "vs sweep", "win at s", "search s",
           "screened", "sweep s"], rows)
    print(f"geomean: ours {geo:.3f}x, sweep {geo_sweep:.3f}x")
    for f in failures:
        print("TARGET MISSED:", f)
    if geo < 1.5:
        print(f"TARGET MISSED: geomean {geo:.3f}x < 1.5x")
    save("tuner_vs_sweep", {"gpu": gpu.name, "date": time.strftime("%Y-%m-%d"), "kernels": records,
                            "geomean": geo, "geomean_sweep": geo_sweep, "failures": failures})
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    with_sweep = "--ours-only" not in args
    args = [a for a in args if a != "--ours-only"]
    budget = float(args.pop(0)) if args and args[0].replace(".", "").isdigit() else 60.0
    sys.exit(main(budget, args, with_sweep))
