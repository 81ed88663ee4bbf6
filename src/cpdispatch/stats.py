"""Intervals over replicas (seeds, jittered traces): Student-t from `scipy.stats`, never a standard
deviation over jobs. A comparison of two dispatchers pairs their runs on the same replica."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    """A mean over n replicas with its 95% interval (NaN bounds when n < 2)."""

    mean: float
    low: float
    high: float
    n: int

    def excludes(self, value: float) -> bool:
        return self.n >= 2 and not self.low <= value <= self.high

    def contains(self, value: float) -> bool:
        return self.n >= 2 and self.low <= value <= self.high

    def text(self, spec: str = ".3g") -> str:
        if self.n < 2 or math.isnan(self.low):
            return f"{self.mean:{spec}} (n={self.n})"
        return f"{self.mean:{spec}} [{self.low:{spec}}, {self.high:{spec}}] (n={self.n})"


def mean_ci(values: Sequence[float], level: float = 0.95) -> Estimate:
    """Mean and Student-t interval of independent replicas."""
    from scipy import stats

    x = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if x.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = float(x.mean())
    if x.size < 2:
        return Estimate(mean, math.nan, math.nan, int(x.size))
    sem = float(stats.sem(x))
    if sem == 0:
        return Estimate(mean, mean, mean, int(x.size))
    low, high = stats.t.interval(level, x.size - 1, loc=mean, scale=sem)
    return Estimate(mean, float(low), float(high), int(x.size))


def paired_difference(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Estimate:
    """Mean of a_i - b_i over paired replicas, with its interval (a - b < 0: a is lower)."""
    if len(a) != len(b):
        raise ValueError("paired samples differ in length")
    return mean_ci([x - y for x, y in zip(a, b)], level)


def paired_ratio(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Estimate:
    """Geometric mean of a_i / b_i over paired replicas (an interval on log ratios, mapped back);
    pairs with a non-positive value are left out."""
    if len(a) != len(b):
        raise ValueError("paired samples differ in length")
    logs = [math.log(x / y) for x, y in zip(a, b) if x > 0 and y > 0]
    e = mean_ci(logs, level)
    if e.n == 0:
        return e
    return Estimate(math.exp(e.mean), math.exp(e.low) if e.n >= 2 else math.nan,
                    math.exp(e.high) if e.n >= 2 else math.nan, e.n)
