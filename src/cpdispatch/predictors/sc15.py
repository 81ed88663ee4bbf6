"""Gaussier et al.'s on-line linear predictor (SC'15), as their public code computes it.

The comparison baseline for `learned`: the predictor behind the published EASY++ figures
(predictsim's `predictor_sgdlinear`, their best cross-validated KTH-SP2 setting by default). A
linear model of the run time in seconds over 19 features and their pairwise products and squares,
learned one job at a time by Normalized Adaptive Gradient descent (Ross, Mineiro and Langford,
UAI 2013) on an asymmetric loss, weighted per job, with an L2 penalty; the prediction is the
absolute value of the model's output, at least 1 s and never above the requested time.

Followed from their code, because it produced their figures:
- "last run times" are `now - submit` of the user's last finished jobs (their code's expression;
  for a finished job it is its wait + run + time since it ended), capped at the request;
- the loss: `over` curve (of the over-prediction beyond `threshold` s) and `under` curve (of the
  under-prediction), each "abs" or "square" with a slope, times the job's weight `weight` (one of
  their five expressions of m = processors and r = run time);
- NAG's per-feature scale, gradient sums and normaliser, and the penalty added to each directional
  derivative (`ridge` * w_i, their lambda 4e9).
Different, and why:
- the user's "running jobs" are the user's unfinished jobs (queued or running), with their time
  since submission: a predictor here sees submissions and completions, never the dispatcher's
  starts, so that predictions do not depend on the dispatcher being compared;
- the correction of a running job that outlives its prediction is the project's (`Correction`:
  the next rung above the elapsed time, or the request with `correction="request"`), where their
  learned settings add the next rung's increment to the old prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..job import Job
from .base import Predictor, processors
from .correction import LADDER, Correction

_DAY, _WEEK = 86_400.0, 7 * 86_400.0
_TAU = 2 * math.pi
_BASE = 19  # features before the products
_PAIRS = np.triu_indices(16, k=1)  # products of features 1..16, as their code forms them

#: Their five job weights, of m (processors) and r (run time, s).
WEIGHTS = {
    "1": lambda m, r: 1.0,
    "5+log(r/m)": lambda m, r: 5 + math.log(r / m),
    "5+log(m/r)": lambda m, r: 5 + math.log(m / r),
    "11+log(1/(r*m))": lambda m, r: 11 + math.log(1 / (r * m)),
    "1+log(m*r)": lambda m, r: 1 + math.log(m * r),
}
CURVES = ("abs", "square")


@dataclass(slots=True)
class _User:
    finished: list[tuple[int, int]] = field(default_factory=list)  # (submit, run) of the last 3, newest last
    runtime_sum: float = 0.0
    cores_sum: float = 0.0
    done: int = 0
    last_end: int = 0
    unfinished: dict[str, tuple[int, int]] = field(default_factory=dict)  # job id -> (submit, processors)


class SC15Predictor(Predictor):
    """SC'15's `sgdlinear` predictor; defaults: their best cross-validated KTH-SP2 setting
    (square loss on over-prediction, absolute loss on under-prediction, threshold 0, weight
    1 + log(m r), eta 5000, lambda 4e9, quadratic features)."""

    name = "sc15"
    corrects_running = True

    def __init__(
        self,
        over: str = "square",
        over_slope: float = 1.0,
        under: str = "abs",
        under_slope: float = 1.0,
        threshold: float = 0.0,
        weight: str = "1+log(m*r)",
        eta: float = 5000.0,
        ridge: float = 4e9,
        ladder: tuple[int, ...] = LADDER,
        correction: str = "ladder",
    ) -> None:
        if over not in CURVES or under not in CURVES:
            raise ValueError(f"over and under must be one of {CURVES}")
        if weight not in WEIGHTS:
            raise ValueError(f"weight must be one of {sorted(WEIGHTS)}")
        if eta <= 0 or ridge < 0 or over_slope <= 0 or under_slope <= 0:
            raise ValueError("eta and the slopes must be > 0, ridge >= 0")
        self.over, self.under, self.over_slope, self.under_slope = over, under, over_slope, under_slope
        self.threshold, self.weight_name, self.eta, self.ridge = threshold, weight, eta, ridge
        self._weight = WEIGHTS[weight]
        self.correction = Correction(correction, ladder)
        d = _BASE + len(_PAIRS[0]) + (_BASE - 1)
        self.w = np.zeros(d)
        self._scale = np.full(d, 1e-9)  # NAG's s: the largest |x_i| seen
        self._grad2 = np.full(d, 1e-9)  # NAG's G: sum of squared directional derivatives
        self._norm = 1e-9  # NAG's N
        self._steps = 1.0  # NAG's n (their code adds 2 per step)
        self._users: dict[str, _User] = {}
        self._pending: dict[str, np.ndarray] = {}

    def features(self, job: Job, now: int) -> np.ndarray:
        """Their 19 features, then the products of features 1..16 and the squares of 1..18."""
        u = self._users.get(job.user) or _User()
        req = float(job.estimate)
        x = [1.0]
        lasts = []
        for i in range(1, 4):
            if i <= len(u.finished):
                submit, run = u.finished[-i]
                lasts.append(float(min(req, run if submit + run > now else now - submit)))
            else:
                lasts.append(req)
        x += lasts
        x.append(req)
        k = len(u.finished)
        two = 0.5 * (lasts[0] + lasts[1]) if k >= 2 else (lasts[0] if k == 1 else req)
        x += [two, 0.33 * sum(lasts) if k >= 3 else two]
        x.append(u.runtime_sum / u.done if u.done else 0.0)
        x.append(float(now - u.last_end) if u.last_end else 0.0)
        size = float(processors(job))
        x.append(size * u.done / u.cores_sum if u.cores_sum else 0.0)  # ratio to the user's mean
        ages = [now - s for s, _ in u.unfinished.values()]
        x += [float(sum(p for _, p in u.unfinished.values())), float(sum(ages)), float(len(ages)),
              float(max(ages, default=0))]
        d, w = _TAU * (now % _DAY) / _DAY, _TAU * (now % _WEEK) / _WEEK
        x += [math.cos(d), math.sin(d), math.cos(w), math.sin(w), size]
        base = np.array(x)
        mid = base[1:17]
        return np.concatenate((base, mid[_PAIRS[0]] * mid[_PAIRS[1]], base[1:] ** 2))

    def predict(self, job: Job, now: int) -> int:
        x = self.features(job, now)
        u = self._users.setdefault(job.user, _User())
        u.unfinished[job.id] = (now, processors(job))
        self._pending[job.id] = x
        if job.estimate <= 0:
            return 0
        return min(max(1, int(abs(float(self.w @ x)))), job.estimate)

    def observe(self, job: Job, runtime: int, now: int) -> None:
        x = self._pending.pop(job.id, None)
        u = self._users.setdefault(job.user, _User())
        submit = now - runtime
        entry = u.unfinished.pop(job.id, None)
        if entry is not None:
            submit = entry[0]
        size = processors(job)
        if x is not None:
            self._fit(x, float(runtime), self._weight(float(max(size, 1)), float(max(runtime, 1))))
        u.finished = [*u.finished[-2:], (submit, runtime)]
        u.runtime_sum += runtime
        u.cores_sum += size
        u.done += 1
        u.last_end = now

    def extend(self, job: Job, elapsed: int, predicted: int) -> int:
        return self.correction.extend(job, elapsed, predicted)

    def _slope(self, curve: str, slope: float, e: float) -> float:
        """d(loss)/d(prediction) of one side's curve at error e >= 0."""
        return slope if curve == "abs" else 2.0 * slope * e

    def _fit(self, x: np.ndarray, y: float, weight: float) -> None:
        """One NAG step on (x, y) with the job's weight."""
        ax = np.abs(x)
        grow = ax > self._scale
        self.w[grow] *= self._scale[grow] / ax[grow]
        self._scale[grow] = ax[grow]
        self._norm += float(np.sum((x / self._scale) ** 2))
        e = float(self.w @ x) - y
        if e > self.threshold:
            g = weight * self._slope(self.over, self.over_slope, e - self.threshold)
        elif e == self.threshold:
            g = 0.0
        else:
            g = -weight * self._slope(self.under, self.under_slope, self.threshold - e)
        grad = g * x + self.ridge * self.w
        self._grad2 += grad * grad
        self.w -= self.eta * grad / (np.sqrt(self._norm * self._grad2 / self._steps) * self._scale)
        self._steps += 2.0
