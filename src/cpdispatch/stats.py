"""Intervals over replicas (seeds, jittered traces): Student-t from `scipy.stats`, never a standard
deviation over jobs. A comparison of two dispatchers pairs their runs on the same replica.

The one statistics module: the campaign report, `reproduce` and the benchmarks all take their
intervals and paired tests from here, so a number means the same thing wherever it is printed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A mean over n replicas with its interval (NaN bounds when n < 2); `p` is the two-sided p-value
    of a paired t test (NaN for a plain mean)."""

    mean: float
    low: float
    high: float
    n: int
    p: float = math.nan

    @property
    def half(self) -> float:
        """Half the interval's width (NaN without an interval): what `mean ± half` prints."""
        return (self.high - self.low) / 2 if self.n >= 2 else math.nan

    def excludes(self, value: float) -> bool:
        return self.n >= 2 and not self.low <= value <= self.high

    def contains(self, value: float) -> bool:
        return self.n >= 2 and self.low <= value <= self.high

    def text(self, spec: str = ".3g") -> str:
        if self.n < 2 or math.isnan(self.low):
            return f"{self.mean:{spec}} (n={self.n})"
        return f"{self.mean:{spec}} [{self.low:{spec}}, {self.high:{spec}}] (n={self.n})"


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    return x[np.isfinite(x)]


def t_quantile(df: int, level: float = LEVEL) -> float:
    """The two-sided Student t quantile with `df` degrees of freedom (12.706 for df 1 at 95%)."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, df))


def mean_ci(values: Sequence[float] | np.ndarray, level: float = LEVEL) -> Estimate:
    """Mean and Student-t interval of independent replicas (missing values left out)."""
    from scipy import stats

    x = _finite(values)
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


def paired_difference(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Estimate:
    """Mean of a_i - b_i over paired replicas, its interval and the paired t test's p-value
    (a - b < 0: a is lower); a pair with a missing side is left out."""
    from scipy import stats

    if len(a) != len(b):
        raise ValueError("paired samples differ in length")
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    d = mean_ci(x[keep] - y[keep], level)
    if d.n < 2 or d.low == d.high:  # no spread: no test (identical pairs give p = NaN in SciPy too)
        return d
    p = float(stats.ttest_rel(x[keep], y[keep]).pvalue)
    return Estimate(d.mean, d.low, d.high, d.n, p)


def paired_ratio(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Estimate:
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
