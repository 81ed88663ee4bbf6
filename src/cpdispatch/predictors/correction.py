"""What a predictor says when a running job outlives its prediction.

Shared by the predictors that can underestimate (last2, learned, sc15, datadriven): without a
correction a dispatcher would plan with a job that should already have ended. Two rules:

- ``ladder`` (Tsafrir, Etsion & Feitelson 2007): the next rung of `LADDER` above the elapsed time,
  capped at the request while the request is still ahead;
- ``request``: straight to the request, as SC'15's code does (their ``reqtime`` corrector).

Under both, a job already past its request (no kill at walltime) climbs the ladder, so the new
prediction is always above the elapsed time.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ..job import Job

#: Rungs (seconds) a prediction climbs when a running job outlives it: 1, 5, 15, 30 min,
#: 1, 2, 5, 10, 20, 50, 100 h; past the top rung, further multiples of 100 h.
LADDER: tuple[int, ...] = (60, 300, 900, 1800, 3600, 7200, 18000, 36000, 72000, 180000, 360000)

RULES: tuple[str, ...] = ("ladder", "request")


def next_rung(elapsed: int, ladder: tuple[int, ...] = LADDER) -> int:
    """The smallest rung strictly above `elapsed` (multiples of the top rung beyond the ladder)."""
    i = bisect_right(ladder, elapsed)
    if i < len(ladder):
        return ladder[i]
    top = ladder[-1]
    return (elapsed // top + 1) * top


@dataclass(frozen=True)
class Correction:
    """A correction rule (one of `RULES`) and its ladder; ValueError on a bad one, so a typo in a
    predictor option fails when the predictor is built."""

    rule: str = "ladder"
    ladder: tuple[int, ...] = LADDER

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"correction must be one of {', '.join(RULES)}, not {self.rule!r}")
        ladder = tuple(self.ladder) if isinstance(self.ladder, (tuple, list)) else ()
        if (not ladder or not all(isinstance(r, int) for r in ladder) or list(ladder) != sorted(set(ladder))
                or ladder[0] <= 0):
            raise ValueError("ladder must be strictly increasing positive seconds")
        object.__setattr__(self, "ladder", ladder)

    def extend(self, job: Job, elapsed: int, predicted: int) -> int:
        """The prediction of a job running for `elapsed` seconds that was predicted `predicted`:
        unchanged while still ahead, else as the rule says; always > elapsed."""
        if elapsed < predicted:
            return predicted
        request = job.estimate
        if request <= elapsed:
            return next_rung(elapsed, self.ladder)
        if self.rule == "request":
            return request
        return min(next_rung(elapsed, self.ladder), request)
