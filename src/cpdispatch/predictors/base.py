"""The on-line duration predictor interface: predictions use only jobs completed so far."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from ..job import Job


class Predictor(ABC):
    """Gives each queued job the duration a dispatcher plans with.

    The simulator calls `predict` when a job is queued, `observe` when a job ends (with its actual
    run time), and, for predictors with `corrects_running = True`, `extend` when a running job
    outlives its prediction. Nothing else reaches the predictor: it cannot see the future.
    """

    name: str = ""  # an instance built with options is named after them (`make_predictor`)
    corrects_running: ClassVar[bool] = False

    @abstractmethod
    def predict(self, job: Job, now: int) -> int:
        """Predicted duration (seconds, >= 0) of `job`, queued at `now`."""

    def observe(self, job: Job, runtime: int, now: int) -> None:
        """`job` ended at `now` after running `runtime` seconds."""

    def extend(self, job: Job, elapsed: int, predicted: int) -> int:
        """A running job has run `elapsed` >= `predicted` seconds: its new predicted duration."""
        return predicted


def processors(job: Job) -> int:
    """Processors a job asks (units x the first resource type: cores on every preset), the size
    the SWF-era predictors' features use."""
    return job.units * (job.req[0] if job.req else 1)
