"""`fsr eval`'s table: the checks, the timing, and the speedup's interval with its verdict."""

from pathlib import Path

from rich.console import Console

from fsr_lsp.cli.tables import render_result
from fsr_lsp.evaluator.records import Check, EvalResult, TimingStats


def shown(result: EvalResult, min_gain: float = 0.02) -> str:
    console = Console(record=True, width=160)
    render_result(result, Path("k.cu"), Path("new.cu"), console, min_gain=min_gain)
    return console.export_text()


def timed(speedup: float, ci: tuple[float, float]) -> EvalResult:
    t = TimingStats(1.0, 0.9, 1.1, 0.95, 1.05, 100)
    return EvalResult(kernel="k", status="verified", message="ok", speedup=speedup, speedup_ci=ci, original_time=t,
                      candidate_time=t, bench_size="n=1", checks=[Check("guard bands", "pass", "bands unchanged"),
                                                                  Check("unmapped pages", "skip", "no driver API")])


def test_the_interval_and_whether_it_clears_the_minimum_gain():
    text = shown(timed(1.53, (1.51, 1.55)))
    assert "speedup 1.530x, 95% interval 1.510-1.550: a win: the whole interval is above 1.02x" in text
    text = shown(timed(1.004, (0.998, 1.01)))
    assert "95% interval 0.998-1.010: no win: the interval does not clear 1.02x" in text
    assert "no win" in shown(timed(1.04, (1.03, 1.05)), min_gain=0.05)


def test_which_layers_ran_are_listed():
    text = shown(timed(1.2, (1.1, 1.3)))
    assert "guard bands" in text and "unmapped pages" in text and "no driver API" in text
