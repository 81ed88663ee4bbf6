"""Tsafrir, Etsion & Feitelson (2007): predict a job from its user's last two actual run times.

`Last2Predictor` is the model as published (fixed relative to PCP21's code). `Last2PCP21Predictor`
reproduces what PCP21 shipped (`PCP21/predictor.py`, reference-code-notes 4.2), for the ablation.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..job import Job
from .base import Predictor
from .correction import LADDER, Correction


def _mean_ceil(values: Iterable[int]) -> int:
    vals = list(values)
    return -(-sum(vals) // len(vals))


class Last2Predictor(Predictor):
    """Mean of the user's last two actual run times (integer mean, rounded up), never above the job's
    estimate; the estimate when the user has no finished job yet.

    A running job that outlives its prediction is re-predicted by `correction` (`RULES`:
    Tsafrir's ``ladder`` of `ladder` rungs, or a jump to the ``request``), always above the elapsed
    time, so the dispatcher never plans with a job that should already have ended.

    Jobs with an empty user share one history: the trace cannot tell their users apart.
    """

    name = "last2"
    corrects_running = True

    def __init__(self, ladder: tuple[int, ...] = LADDER, correction: str = "ladder") -> None:
        self.correction = Correction(correction, ladder)
        self._last: dict[str, tuple[int, ...]] = {}

    def predict(self, job: Job, now: int) -> int:
        hist = self._last.get(job.user)
        if not hist:
            return job.estimate
        return min(_mean_ceil(hist), job.estimate)

    def observe(self, job: Job, runtime: int, now: int) -> None:
        prev = self._last.get(job.user, ())
        self._last[job.user] = (*prev[-1:], runtime)

    def extend(self, job: Job, elapsed: int, predicted: int) -> int:
        return self.correction.extend(job, elapsed, predicted)


class Last2PCP21Predictor(Predictor):
    """Bug-compatible with PCP21's shipped predictor, for the ablation only.

    Its history holds each finished job's *prediction* (the duration it was dispatched with, i.e.
    the walltime when its user had no history), not its run time; prediction = floor of the mean of
    the last <= 2 stored values, or the job's estimate without history; no cap at the estimate and
    no correction of running jobs. So it never learns a real run time: it propagates the user's
    earlier walltimes.
    """

    name = "last2-pcp21"  # distinct in summaries and reports
    corrects_running = False

    def __init__(self) -> None:
        self._last: dict[str, tuple[int, ...]] = {}
        self._given: dict[str, int] = {}

    def predict(self, job: Job, now: int) -> int:
        hist = self._last.get(job.user)
        pred = sum(hist) // len(hist) if hist else job.estimate
        self._given[job.id] = pred
        return pred

    def observe(self, job: Job, runtime: int, now: int) -> None:
        learned = self._given.pop(job.id, job.estimate)  # the bug: a prediction, not `runtime`
        prev = self._last.get(job.user, ())
        self._last[job.user] = (*prev[-1:], learned)
