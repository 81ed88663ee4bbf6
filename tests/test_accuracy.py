"""Prediction accuracy metrics on a hand-computed case."""

from __future__ import annotations

import pytest

from cpdispatch.accuracy import prediction_accuracy
from cpdispatch.job import Job
from cpdispatch.records import JobRecord


def rec(status: str, start: int | None, end: int | None, predicted: int | None) -> JobRecord:
    return JobRecord(Job("j", 0, 1, (1,), 1000, 0), status, start, end, predicted)


def test_hand_case() -> None:
    records = [
        rec("completed", 0, 100, 100),  # exact, A = 1
        rec("completed", 10, 60, 100),  # over by 50, A = 0.5
        rec("completed", 0, 300, 200),  # under by 100, A = 1.5
        rec("completed", 5, 5, 0),  # 0 s predicted 0: exact, A = 1 (both clamped to 1 s)
        rec("completed", 0, 10, 0),  # under by 10, A = 10 / 1
        rec("killed", 0, 1000, 10),  # censored: ignored
        rec("rejected", None, None, None),  # never ran: ignored
    ]
    m = prediction_accuracy(records)
    assert m["count"] == 5
    assert m["mae_s"] == pytest.approx(32.0)  # (0 + 50 + 100 + 0 + 10) / 5
    assert m["mean_accuracy"] == pytest.approx((1 + 0.5 + 1 / 1.5 + 1 + 0.1) / 5)  # min(p, r) / max(p, r)
    assert (m["under_rate"], m["over_rate"], m["exact_rate"]) == pytest.approx((0.4, 0.2, 0.4))
    # A sorted: 0.5, 1, 1, 1.5, 10 (linear interpolation between order statistics)
    assert m["ratio_q05"] == pytest.approx(0.6)
    assert m["ratio_q25"] == pytest.approx(1.0)
    assert m["ratio_q50"] == pytest.approx(1.0)
    assert m["ratio_q75"] == pytest.approx(1.5)
    assert m["ratio_q95"] == pytest.approx(8.3)
    assert m["within_band"] == pytest.approx(0.4)


def test_band_edges_inclusive() -> None:
    m = prediction_accuracy([rec("completed", 0, 75, 100), rec("completed", 0, 125, 100)])
    assert m["within_band"] == 1.0


def test_empty() -> None:
    m = prediction_accuracy([rec("rejected", None, None, None)])
    assert m["count"] == 0 and m["mae_s"] is None and m["within_band"] is None
