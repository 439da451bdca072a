"""The speedup and its interval from one interleaved run: robust to the event timer's ticks."""

import numpy as np
import pytest

from fsr_lsp.evaluator.gpu.timing_stats import paired_speedup, speedup_interval, stats

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
    assert 1.05 < low <= high < 1.15, (low, high)


def test_the_paired_speedup_ignores_outliers_and_stats_keep_the_median():
    original = [2.0] * 10 + [50.0, 60.0]
    candidate = [1.0] * 10 + [1.0, 900.0]
    assert paired_speedup(original, candidate) == pytest.approx(2.0)
    s = stats([3.0, 1.0, 2.0, 4.0])
    assert (s.median_ms, s.min_ms, s.max_ms, s.reps) == (2.5, 1.0, 4.0, 4)


def test_a_slow_stretch_that_hits_both_of_a_pair_leaves_the_speedup_alone():
    rng = np.random.default_rng(9)
    original = 0.018 + rng.gamma(2.0, 0.0002, size=40)
    candidate = original / 1.12
    slow = np.arange(40) < 15  # a third of the run at lower clocks: both kernels of each pair slowed
    original[slow] *= 1.5
    candidate[slow] *= 1.5
    speedup = paired_speedup(quantized(original), quantized(candidate))
    low, high = speedup_interval(quantized(original), quantized(candidate), 0.95, 2)
    assert abs(speedup - 1.12) < 0.01 and 1.11 < low <= high < 1.13, (speedup, low, high)


def test_a_timing_is_settled_only_once_its_interval_is_narrow():
    import random

    from fsr_lsp.evaluator.gpu.timing_stats import settled

    rng = random.Random(1)
    steady = {"original": [2.0 * (1 + rng.gauss(0, 0.002)) for _ in range(20)],
              "candidate": [1.0 * (1 + rng.gauss(0, 0.002)) for _ in range(20)]}
    assert settled(steady, 0.005, seed=0)
    noisy = {"original": [2.0 * (1 + rng.gauss(0, 0.05)) for _ in range(20)],
             "candidate": [1.0 * (1 + rng.gauss(0, 0.05)) for _ in range(20)]}
    assert not settled(noisy, 0.005, seed=0)
    assert not settled(steady, 0.0, seed=0)  # precision 0: every run is taken
    alone = {"original": steady["original"], "ref": [5.0, 9.0, 1.0]}  # a ref never decides
    assert settled(alone, 0.005, seed=0)
    assert not settled({"original": noisy["original"]}, 0.005, seed=0)


def test_a_skewed_interval_settles_only_when_both_its_sides_are_within_precision():
    from fsr_lsp.evaluator.gpu.timing_stats import settled

    steady = [1.0] * 18 + [1.0] * 2
    slow_tail = {"original": [1.0] * 20, "candidate": steady[:14] + [1.3] * 6}  # a few runs far slower
    assert not settled(slow_tail, 0.005, seed=0)


def test_a_loser_is_settled_sooner_only_below_the_line_a_win_must_clear():
    import random

    from fsr_lsp.evaluator.gpu.timing_stats import settled

    rng = random.Random(4)

    def pairs(speedup: float, noise: float, n: int = 30) -> dict[str, list[float]]:
        return {"original": [1.0 * (1 + rng.gauss(0, noise)) for _ in range(n)],
                "candidate": [1.0 / speedup * (1 + rng.gauss(0, noise)) for _ in range(n)]}

    twin = pairs(0.95, 0.02)
    assert not settled(twin, 0.005, seed=0)  # to 0.5%: more runs
    assert settled(twin, 0.005, seed=0, win_above=1.02)  # wholly below 1.02 and within 2%: not a win
    near = pairs(1.02, 0.02)  # its interval reaches past 1.02: the question is open
    assert not settled(near, 0.005, seed=0, win_above=1.02)
    wide = pairs(0.9, 0.08)  # below the line, but too wide to rank
    assert not settled(wide, 0.005, seed=0, win_above=1.02)
    winner = pairs(1.3, 0.02)  # a win is timed to the precision whatever the line
    assert settled(winner, 0.005, seed=0, win_above=1.02) == settled(winner, 0.005, seed=0)
    assert settled({"original": [1.0] * 20}, 0.005, seed=0, win_above=1.02)  # one contender: as before
