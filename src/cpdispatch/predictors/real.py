"""The oracle: the real run time from the trace, the upper bound on what prediction can give."""

from __future__ import annotations

from ..job import Job
from .base import Predictor


class RealPredictor(Predictor):
    """Predicts `job.runtime`, the trace's run time. It is the only predictor allowed to read it.

    With kill-at-walltime a job whose run time exceeds its walltime ends earlier than predicted;
    the oracle still reports the trace value, so that it stays independent of simulation options.
    """

    name = "real"

    def predict(self, job: Job, now: int) -> int:
        return job.runtime
