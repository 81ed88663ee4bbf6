"""The user's estimate as the prediction: what a dispatcher sees when nothing is learned."""

from __future__ import annotations

from ..job import Job
from .base import Predictor


class WalltimePredictor(Predictor):
    """Predicts `job.estimate` (the requested walltime, or the reader's documented default)."""

    name = "walltime"

    def predict(self, job: Job, now: int) -> int:
        return job.estimate
