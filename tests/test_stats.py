"""cpdispatch.stats: the one statistics module (report, reproduce, benchmarks) against SciPy and textbook values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from cpdispatch.stats import mean_ci, paired_difference, paired_ratio, t_quantile


def test_t_quantile_matches_the_tables() -> None:
    for df, t in ((1, 12.7062), (2, 4.3027), (3, 3.1824), (10, 2.2281), (30, 2.0423), (200, 1.9719)):
        assert t_quantile(df) == pytest.approx(t, abs=1e-4)
    assert t_quantile(10, 0.99) == pytest.approx(3.1693, abs=1e-4)


def test_interval_of_a_known_sample() -> None:
    x = [12.1, 9.8, 11.4, 10.2, 13.0, 8.7]
    e = mean_ci(x)
    low, high = scipy_stats.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=scipy_stats.sem(x))
    assert (e.mean, e.low, e.high, e.n) == pytest.approx((np.mean(x), low, high, 6))
    # by hand: sd 1.5895, half width t(0.975, 5) * sd / sqrt(6) = 2.5706 * 0.6489 = 1.6681
    assert e.half == pytest.approx(1.6681, abs=1e-3)
    assert e.text(".2f") == "10.87 [9.20, 12.53] (n=6)"


def test_missing_values_single_replica_and_no_spread() -> None:
    e = mean_ci([1.0, float("nan"), None, 3.0])  # type: ignore[list-item]
    assert e.n == 2 and e.mean == 2.0
    one = mean_ci([5.0])
    assert one.n == 1 and one.mean == 5.0 and math.isnan(one.low) and math.isnan(one.half)
    assert not one.excludes(0.0) and not one.contains(5.0)
    assert mean_ci([]).n == 0
    flat = mean_ci([4.0, 4.0, 4.0])
    assert (flat.low, flat.high, flat.half) == (4.0, 4.0, 0.0)


def test_paired_difference_is_the_paired_t_test() -> None:
    a = [10.0, 12.0, 9.0, 15.0, 11.0]
    b = [8.0, 11.5, 8.0, 12.0, 10.5]
    d = paired_difference(a, b)
    diffs = np.subtract(a, b)
    low, high = scipy_stats.t.interval(0.95, 4, loc=diffs.mean(), scale=scipy_stats.sem(diffs))
    assert (d.mean, d.low, d.high, d.n) == pytest.approx((diffs.mean(), low, high, 5))
    assert d.p == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue)
    assert d.excludes(0.0) and d.p < 0.05
    # the pairing matters: unpaired, the same samples' intervals overlap widely
    assert mean_ci(a).low < mean_ci(b).high


def test_paired_difference_drops_incomplete_pairs_and_checks_lengths() -> None:
    d = paired_difference([1.0, 2.0, float("nan"), 4.0], [0.5, 1.0, 3.0, 2.0])
    assert d.n == 3 and d.mean == pytest.approx((0.5 + 1.0 + 2.0) / 3)
    same = paired_difference([1.0, 2.0], [1.0, 2.0])
    assert (same.mean, same.half, same.n) == (0.0, 0.0, 2) and math.isnan(same.p)
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([1.0], [1.0, 2.0])


def test_paired_ratio_is_a_geometric_mean() -> None:
    r = paired_ratio([2.0, 8.0], [1.0, 2.0])
    assert r.mean == pytest.approx(math.sqrt(2 * 4))
    logs = np.log([2.0, 4.0])
    low, high = scipy_stats.t.interval(0.95, 1, loc=logs.mean(), scale=scipy_stats.sem(logs))
    assert (r.low, r.high) == pytest.approx((math.exp(low), math.exp(high)))
    assert paired_ratio([0.0], [1.0]).n == 0  # a non-positive value has no log ratio
