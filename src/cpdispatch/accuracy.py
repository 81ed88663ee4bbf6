"""How good the durations a dispatcher planned with were, measured after the run.

Over completed jobs only: a killed job's run time is censored, a rejected one never ran. Accuracy
A = actual / predicted as in the CP'19 paper (A > 1: under-estimation, A < 1: over-estimation),
with both durations clamped to >= 1 s so that zero-length jobs and zero predictions are defined
and an exact prediction always scores A = 1 (the oracle must score 100 % within the band).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .records import JobRecord

QUANTILES: tuple[int, ...] = (1, 5, 10, 25, 50, 75, 90, 95, 99)  # enough to draw CP'19 Fig. 1
BAND: tuple[float, float] = (0.75, 1.25)  # the CP'19 paper's "accurate" band of A


def prediction_accuracy(records: Iterable[JobRecord]) -> dict[str, Any]:
    """count, mae_s, mean_accuracy (mean of min(p, r) / max(p, r), Tsafrir's and SC'15's
    accuracy), under_rate, over_rate, exact_rate, ratio_q01..ratio_q99 (quantiles of A),
    within_band (share with 0.75 <= A <= 1.25). Rates and statistics are None when count is 0.
    `p` is the prediction the job was submitted with (the one it started with)."""
    pred: list[int] = []
    act: list[int] = []
    for r in records:
        if r.status != "completed" or r.start is None or r.end is None or r.predicted is None:
            continue
        pred.append(r.predicted)
        act.append(r.end - r.start)
    out: dict[str, Any] = {"count": len(pred)}
    keys = ["mae_s", "mean_accuracy", "under_rate", "over_rate", "exact_rate"]
    keys += [f"ratio_q{q:02d}" for q in QUANTILES] + ["within_band"]
    if not pred:
        return out | dict.fromkeys(keys)
    p = np.asarray(pred, dtype=np.int64)
    a = np.asarray(act, dtype=np.int64)
    ratio = np.maximum(a, 1) / np.maximum(p, 1)
    qs = np.quantile(ratio, [q / 100 for q in QUANTILES])
    out |= {
        "mae_s": float(np.abs(p - a).mean()),
        "mean_accuracy": float(np.minimum(ratio, 1 / ratio).mean()),
        "under_rate": float((p < a).mean()),
        "over_rate": float((p > a).mean()),
        "exact_rate": float((p == a).mean()),
    }
    out |= {f"ratio_q{q:02d}": float(v) for q, v in zip(QUANTILES, qs, strict=True)}
    out["within_band"] = float(((ratio >= BAND[0]) & (ratio <= BAND[1])).mean())
    return out
