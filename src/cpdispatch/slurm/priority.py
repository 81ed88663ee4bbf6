"""Slurm's own priority as the dispatcher's job weights (`slurm dispatch --priority slurm`): fair
share, QOS, age and partition factors then order the queue inside the dispatcher's objective,
while the dispatcher still decides when and where each job starts."""

from __future__ import annotations

from collections.abc import Sequence

from ..dispatchers.base import Dispatcher
from ..errors import CpdispatchError

#: `--priority` values: the papers' objective (every weight 1), or Slurm's priorities.
PRIORITIES = ("papers", "slurm")


def check_priority(priority: str, dispatcher: Dispatcher) -> None:
    """Refuse a `--priority` the dispatcher would silently ignore."""
    if priority not in PRIORITIES:
        raise CpdispatchError(f"--priority {priority}: expected one of {', '.join(PRIORITIES)}")
    if priority == "slurm" and not dispatcher.weighs_jobs:
        raise CpdispatchError(f"--priority slurm: dispatcher {dispatcher.name} has no per-job objective to weigh "
                              "(use a CP dispatcher such as pcp20, pcp19 or hcp19)")


def slurm_weights(priorities: Sequence[int]) -> list[float]:
    """Each job's priority over the queue's highest, so that the ratios between jobs are Slurm's.
    A priority of 0 is one Slurm has not computed (a job held since its submission, not yet
    taken over): such a job gets the mean weight of the others rather than the least or the most."""
    known = [p for p in priorities if p > 0]
    if not known:
        return [1.0] * len(priorities)
    top = max(known)
    mean = sum(known) / len(known) / top
    return [p / top if p > 0 else mean for p in priorities]
