"""Tsafrir's correction: a running job that outlived its prediction gets a new, larger one.

Shared by the learned predictors (last2, datadriven), which can underestimate: without it a
dispatcher would plan with a job that should already have ended.
"""

from __future__ import annotations

from bisect import bisect_right

from ..job import Job

#: Rungs (seconds) a prediction climbs when a running job outlives it: 1, 5, 15, 30 min,
#: 1, 2, 5, 10, 20, 50, 100 h; past the top rung, further multiples of 100 h.
LADDER: tuple[int, ...] = (60, 300, 900, 1800, 3600, 7200, 18000, 36000, 72000, 180000, 360000)


def checked_ladder(ladder: tuple[int, ...]) -> tuple[int, ...]:
    """`ladder` as a tuple; ValueError unless strictly increasing positive seconds."""
    if not ladder or list(ladder) != sorted(set(ladder)) or ladder[0] <= 0:
        raise ValueError("ladder must be strictly increasing positive seconds")
    return tuple(ladder)


def next_rung(elapsed: int, ladder: tuple[int, ...] = LADDER) -> int:
    """The smallest rung strictly above `elapsed` (multiples of the top rung beyond the ladder)."""
    i = bisect_right(ladder, elapsed)
    if i < len(ladder):
        return ladder[i]
    top = ladder[-1]
    return (elapsed // top + 1) * top


def raise_prediction(job: Job, elapsed: int, predicted: int, ladder: tuple[int, ...] = LADDER) -> int:
    """The next rung above `elapsed`, capped at the estimate while the estimate is still ahead;
    a job already past its estimate (no kill) just gets the next rung. Always > elapsed."""
    if elapsed < predicted:
        return predicted
    new = next_rung(elapsed, ladder)
    est = job.estimate
    if est > elapsed:
        new = min(new, est)
    return new
