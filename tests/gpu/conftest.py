"""GPU tests: one evaluator (worker process) for the whole session; skipped without a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.evaluator import EvalOptions, Evaluator, EvaluatorUnavailable, TimingConfig

KERNELS = Path(__file__).parent / "kernels"
# Short timing: these tests check verdicts, not speed (bench/ measures speed).
QUICK = EvalOptions(timing=TimingConfig(warmup=2, min_reps=10, max_reps=40, target_seconds=0.05))


@pytest.fixture(scope="session")
def evaluator():
    ev = Evaluator(timeout=90.0)
    try:
        ev.start()
    except EvaluatorUnavailable as e:
        pytest.skip(f"no GPU evaluation here: {e}")
    yield ev
    ev.close()


def kernel_text(name: str) -> str:
    return (KERNELS / name).read_text()
