"""How the tuner explores its space: first every launch shape (the knob that matters most, and
the one a brute-force sweep covers), then simulated annealing over all knobs together from the
best shapes, a batch of neighbours at a time so that they compile in parallel."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Callable

from .space import KNOBS, Config, Space

Measure = Callable[[list[Config]], list[float | None]]  # time in ms, None: failed or not measurable


@dataclass
class Annealer:
    space: Space
    measure: Measure
    seed: int = 0
    batch: int = 8  # neighbours measured per step
    temperature: float = 0.05  # relative slow-down accepted with probability 1/e at the start
    cooling: float = 0.8
    times: dict[Config, float | None] = field(default_factory=dict)  # every configuration measured
    stopped: bool = False  # the measure asked to stop (cancelled)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._current: Config | None = None
        self._t = self.temperature

    def skipped(self, c: Config) -> bool:
        """A shape class that failed twice and never passed is not tried again (a tree
        reduction over the block fails for every shape that is not a power of two)."""
        return self.space.shape_class(c) in self._dead_classes()

    def _dead_classes(self) -> set[str]:
        seen: dict[str, list[bool]] = {}
        for c, t in self.times.items():
            seen.setdefault(self.space.shape_class(c), []).append(t is not None)
        return {k for k, ok in seen.items() if k != "usual" and len(ok) >= 2 and not any(ok)}

    def sweep(self, deadline: float) -> None:
        """Every launch shape once, in batches: powers of two first (with the work split anew,
        where the space can: Space.restructured), then two other shapes as a probe (if both fail,
        the class is closed), then the rest."""
        shapes = self.space.block_configs()
        odd = [c for c in shapes if self.space.shape_class(c) == "odd"]
        self.measure_all([Config()] + self.space.restructured() + [c for c in shapes if c not in odd], deadline)
        self.measure_all(odd[:2], deadline)
        self.measure_all(odd[2:], deadline)

    def anneal(self, budget: int, deadline: float, starts: list[Config] | None = None) -> None:
        """Up to `budget` new configurations, from the fastest known (or `starts`)."""
        spent = 0
        current = self._pick_start(starts)
        while spent < budget and not self.stopped and time.monotonic() < deadline and current is not None:
            pool = [n for n in self.space.neighbours(current) if n not in self.times and not self.skipped(n)]
            if not pool:
                current = self._restart()
                continue
            batch = self.rng.sample(pool, min(self.batch, len(pool), budget - spent))
            self.measure_all(batch, deadline)
            spent += len(batch)
            measured = [(self.times[c], c) for c in batch if self.times.get(c) is not None]
            if measured:
                t_new, best = min(measured, key=lambda x: x[0])  # type: ignore[arg-type,return-value]
                t_cur = self.times.get(current)
                if t_cur is None or t_new <= t_cur or self.rng.random() < math.exp(-(t_new / t_cur - 1) / self._t):
                    current = best
            self._t *= self.cooling
        self._current = current

    def ranked(self) -> list[tuple[Config, float]]:
        """Measured configurations, fastest first."""
        return sorted(((c, t) for c, t in self.times.items() if t is not None), key=lambda x: x[1])

    def combined(self) -> Config | None:
        """Each knob at the value of the fastest configuration that changed only that knob from
        the best launch shape: the greedy guess annealing may not have stepped on."""
        ranked = self.ranked()
        if not ranked:
            return None
        best = ranked[0][0]
        merged = best
        for c, t in ranked:
            diff = [f for f in KNOBS if getattr(c, f) != getattr(best, f)]
            if len(diff) == 1 and t < self.times[best] * 1.02 and diff[0] != "block":  # type: ignore[operator]
                trial = _with(merged, diff[0], getattr(c, diff[0]))
                if self.space.legal(trial):
                    merged = trial
        return merged if merged not in self.times else None

    def _pick_start(self, starts: list[Config] | None) -> Config | None:
        known = [c for c in (starts or []) if self.times.get(c) is not None]
        if known:
            return min(known, key=lambda c: self.times[c])  # type: ignore[arg-type,return-value]
        ranked = self.ranked()
        return ranked[0][0] if ranked else (self._current or Config())

    def _restart(self) -> Config | None:
        """From a random one of the fastest few with neighbours left, else a random point."""
        for c, _ in self.rng.sample(self.ranked()[:5], min(5, len(self.ranked()))):
            if any(n not in self.times for n in self.space.neighbours(c)):
                self._t = self.temperature
                return c
        for _ in range(20):
            c = self.space.random(self.rng)
            if c not in self.times:
                self.measure_all([c], math.inf)
                if self.times.get(c) is not None:
                    return c
        return None

    def measure_all(self, configs: list[Config], deadline: float) -> None:
        todo = [c for c in dict.fromkeys(configs) if c not in self.times]
        while todo:
            if self.stopped or time.monotonic() >= deadline:
                return
            todo = [c for c in todo if not self.skipped(c)]
            chunk, todo = todo[:max(self.batch, 1)], todo[max(self.batch, 1):]
            results = self.measure(chunk)
            if len(results) < len(chunk):
                self.stopped = True  # the measure gave up part way: cancelled
            for c, t in zip(chunk, results):
                self.times[c] = t


def _with(c: Config, field_name: str, value: object) -> Config:
    from dataclasses import replace

    return replace(c, **{field_name: value})
