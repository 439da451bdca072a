"""The speedup and its interval from one interleaved run: robust to the event timer's ticks."""

import numpy as np
import pytest

from fsr_lsp.evaluator.gpu.timing import interquartile_mean, speedup_interval, stats

TICK = 0.0005  # ms: CUDA events resolve about half a microsecond


def quantized(ms: np.ndarray) -> list[float]:
    return list(np.round(ms / TICK) * TICK)


@pytest.mark.parametrize("seed", range(20))
def test_the_same_kernel_against_itself_is_never_a_win_even_at_20_us(seed):
    rng = np.random.default_rng(seed)
    base = 0.018 + rng.gamma(2.0, 0.0003, size=(2, 100))  # two contenders, one distribution
    low, high = speedup_interval(quantized(base[0]), quantized(base[1]), 0.95, seed)
    assert low < 1.02 and high > 0.98, (low, high)


def test_a_real_ten_percent_gain_clears_the_minimum():
    rng = np.random.default_rng(5)
    original = 0.018 + rng.gamma(2.0, 0.0003, size=100)
    candidate = original / 1.10 + rng.normal(0, 0.0002, size=100)
    low, high = speedup_interval(quantized(original), quantized(candidate), 0.95, 1)
    assert 1.05 < low < 1.10 < high < 1.15, (low, high)


def test_interquartile_mean_ignores_outliers_and_stats_keep_the_median():
    times = [1.0] * 10 + [50.0, 60.0]
    assert interquartile_mean(times) == pytest.approx(1.0)
    s = stats([3.0, 1.0, 2.0, 4.0])
    assert (s.median_ms, s.min_ms, s.max_ms, s.reps) == (2.5, 1.0, 4.0, 4)
