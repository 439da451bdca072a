"""The numbers of a timing: each contender's stats, the paired speedup and its bootstrap
interval, and when a timing has runs enough to stop.

A timing may stop before its most runs once its answer is settled: the speedup's interval is
narrow (at most `TimingConfig.precision` of the speedup either side), or, with one contender,
the median's is. Stopping on the noise reached, not on a count, is how nvbench ends a
measurement; a fast kernel timed against a near twin still runs to the most runs, and one far
ahead of the original stops after the fewest. A caller that only decides whether a candidate
wins (the search: its interval wholly above 1 + min_gain) has its answer sooner for a loser:
an interval wholly below that line and within LOSER_SLACK times the precision either side says
"not a win" whatever more runs would show, and its speedup still ranks it to that precision.
"""

from __future__ import annotations

from ..records import TimingStats

BOOTSTRAP_SAMPLES = 1000
SETTLE_SAMPLES = 200  # resamples for the mid-timing check: its interval only has to be roughly right
CHECK_EVERY = 10  # timed runs between two checks
LOSER_SLACK = 4  # a decided loser's interval may be this many times the precision wide (2% at 0.5%)


def stats(times: list[float]) -> TimingStats:
    s = sorted(times)
    n = len(s)

    def q(p: float) -> float:
        x = p * (n - 1)
        lo = int(x)
        hi = min(lo + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (x - lo)

    return TimingStats(median_ms=q(0.5), min_ms=s[0], max_ms=s[-1], p25_ms=q(0.25), p75_ms=q(0.75), reps=n)


def _iqm(sorted_rows):
    """The mean of the middle half of each sorted row. CUDA events tick in about 0.5 us: on a
    20 us kernel medians sit on those ticks; the mean of the middle half averages over them and
    still ignores the outliers."""
    n = sorted_rows.shape[1]
    lo, hi = n // 4, n - n // 4
    return sorted_rows[:, lo:max(hi, lo + 1)].mean(axis=1)


def paired_speedup(original: list[float], candidate: list[float]) -> float:
    """The speedup from the pairs: the geometric interquartile mean of original/candidate over
    the repetitions. Both of a pair ran back to back, so a slow moment (clocks, a neighbour)
    slows both and leaves their ratio alone; the middle half drops outliers, and averaging
    over it keeps the event timer's ticks out."""
    import numpy as np

    return float(_paired(np.asarray(original, dtype=float), np.asarray(candidate, dtype=float))[0])


def _paired(o, c):
    """Geometric IQM of o/c along the last axis (rows of resampled pairs)."""
    import numpy as np

    logs = np.sort(np.log(np.atleast_2d(o)) - np.log(np.atleast_2d(c)), axis=-1)
    return np.exp(_iqm(logs))


def speedup_interval(original: list[float], candidate: list[float], confidence: float, seed: int) -> tuple[float, float]:
    """Bootstrap interval of the paired speedup, resampling whole repetitions."""
    import numpy as np

    o, c = np.asarray(original, dtype=float), np.asarray(candidate, dtype=float)
    n = min(len(o), len(c))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(BOOTSTRAP_SAMPLES, n))
    ratios = _paired(o[:n][idx], c[:n][idx])
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def settled(times: dict[str, list[float]], precision: float, seed: int, win_above: float = 0.0) -> bool:
    """Whether the timed runs so far answer within `precision`: with a candidate and the original,
    the speedup's interval (SETTLE_SAMPLES resamples, 95%) lies within precision of the speedup
    either side, or (with `win_above`, the speedup a win's interval must clear) wholly below
    win_above and within LOSER_SLACK times precision; with one contender, its median's interval
    lies within precision of the median."""
    import numpy as np

    if precision <= 0:
        return False
    rng = np.random.default_rng(seed)
    if "original" in times and "candidate" in times:
        o, c = np.asarray(times["original"], dtype=float), np.asarray(times["candidate"], dtype=float)
        n = min(len(o), len(c))
        idx = rng.integers(0, n, size=(SETTLE_SAMPLES, n))
        ratios = _paired(o[:n][idx], c[:n][idx])
        centre = float(_paired(o[:n], c[:n])[0])
    else:
        (alone,) = [v for k, v in times.items() if k != "ref"] or [[]]
        if not alone:
            return False
        x = np.asarray(alone, dtype=float)
        ratios = np.median(x[rng.integers(0, len(x), size=(SETTLE_SAMPLES, len(x)))], axis=1)
        centre = float(np.median(x))
    low, high = np.percentile(ratios, [2.5, 97.5])
    if not centre > 0:
        return False
    if "candidate" in times and win_above > 0 and high < win_above:
        precision *= LOSER_SLACK  # not a win, whatever more runs would show
    return bool(centre - low <= precision * centre and high - centre <= precision * centre)
