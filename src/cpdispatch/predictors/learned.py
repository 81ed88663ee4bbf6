"""A run-time predictor learned on-line, in the spirit of Gaussier et al. (SC'15).

A linear model of log run time over features known at submission (`FEATURES`: the requested time
and processors, the user's recent run times, last-two's prediction and how well it has done for
this user lately, the user's unfinished jobs, the time of day and of the week), fitted by
quantile regression on the jobs finished so far.

Why these choices (measured in docs/quality.md):
- log-seconds: run times span six orders of magnitude; in log space a minute's error on a short
  job weighs as much as an hour's on a long one, which is what a dispatcher cares about.
- pinball loss of level `quantile` = tau: the tunable asymmetry. Under-estimating costs tau, over-
  estimating 1 - tau per unit of error, so tau > 0.5 punishes under-estimation tau / (1 - tau) times
  harder. Quantiles commute with the monotone map back to seconds, so the model predicts the
  tau-quantile of the run time itself. The median-like fit keeps exact repeats exact, where least
  squares (and SC'15's squared losses) blend them towards the requested time.
- Refits on a window of recent jobs by iteratively reweighted least squares, not per-job gradient
  steps: on-line pinball steps of any size we tried either lagged or oscillated (KTH-SP2 mean
  accuracy 0.34-0.51 against 0.53 for the refits), and a window follows a workload that drifts.
- "Trust": last-two is nearly exact for users who resubmit the same job and poor for others; a
  feature that says how well it did for this user lately lets one global model weigh it per user.
- Time of day and week as sine and cosine: the trace's time origin (time zone, epoch) is unknown to
  the predictor, and for a linear model a phase shift is only a change of weights.

The user's "unfinished jobs" (queued or running) stand in for SC'15's "running jobs": the
predictor sees submissions and completions, not starts, and must not depend on the dispatcher.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from ..job import Job
from .base import Predictor, processors
from .correction import LADDER, Correction

_DAY, _WEEK = 86_400.0, 7 * 86_400.0
_TAU = 2 * math.pi


def _log(x: float) -> float:
    return math.log1p(max(x, 0.0))


_controller: ThreadpoolController | None = None


def _one_blas_thread() -> Any:
    """A context in which BLAS uses one thread: a refit's small products gain nothing from more,
    and where the cores are busy (a campaign's workers) the extra threads spin and multiply the
    refit's time several times over."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")


@dataclass(slots=True)
class _User:
    """What the predictor knows of one user: finished jobs' run times and unfinished jobs."""

    last: deque[int] = field(default_factory=lambda: deque(maxlen=2))  # run times, for last2's mean
    last_log: deque[float] = field(default_factory=lambda: deque(maxlen=3))  # log1p(run time), newest last
    log_sum: float = 0.0  # sum of log1p(run time) over all finished jobs
    done: int = 0
    unfinished: int = 0
    unfinished_size: int = 0
    last_submit: int | None = None
    by_request: dict[int, float] = field(default_factory=dict)  # requested time -> log1p(last run time)
    by_name: dict[str, float] = field(default_factory=dict)  # executable -> log1p(last run time)
    last_request: int = 0  # requested time of the last finished job
    miss: float = 1.0  # moving average of |log error| of last2's prediction on this user's jobs


FEATURES: tuple[str, ...] = (
    "bias", "log_request", "log_size",
    "has_last1", "log_last1", "has_last2", "log_last2", "has_last3", "log_last3",
    "log_last2_prediction", "mean_log_all",
    "has_same_request", "log_same_request", "has_same_name", "log_same_name",
    "log_last_request", "same_request_as_last",
    "trust", "trust_x_last2", "trust_x_request",
    "log_unfinished", "log_unfinished_size", "log_since_last_submit",
    "day_sin", "day_cos", "week_sin", "week_cos",
)
_LAST2 = FEATURES.index("log_last2_prediction")


class LearnedPredictor(Predictor):
    """On-line linear quantile regression of log run time; never above the job's estimate.

    Every `refit_every` finished jobs the model is refitted on the last `window` finished jobs:
    `iterations` IRLS steps from the last weights towards the minimum of the pinball loss of level
    `quantile` plus a `ridge` penalty on the slopes; `quantile` (tau in (0, 1)) is the asymmetry,
    0.5 the median. Until `refit_every` jobs have finished it predicts the estimate. `correction`
    and `ladder`: how a running job that outlives its prediction is re-predicted, as for last2.
    """

    name = "learned"
    corrects_running = True

    def __init__(
        self,
        quantile: float = 0.6,
        window: int = 20_000,
        refit_every: int = 1000,
        ridge: float = 1.0,
        iterations: int = 3,
        ladder: tuple[int, ...] = LADDER,
        correction: str = "ladder",
    ) -> None:
        if not 0.0 < quantile < 1.0:
            raise ValueError("quantile must be in (0, 1)")
        if window < 1 or refit_every < 1 or iterations < 1 or ridge < 0:
            raise ValueError("window, refit_every and iterations must be >= 1, ridge >= 0")
        self.quantile, self.window, self.refit_every, self.ridge = quantile, window, refit_every, ridge
        self.correction = Correction(correction, ladder)
        self.iterations = iterations
        n = len(FEATURES)
        self.weights = [0.0] * n
        self.weights[1] = 1.0  # before the first fit: "the requested time", the walltime predictor
        self._x = np.zeros((window, n))
        self._y = np.zeros(window)
        self._seen = 0  # finished jobs learned from
        self._users: dict[str, _User] = {}
        self._pending: dict[str, tuple[list[float], int]] = {}  # job id -> features, size

    # -- features -------------------------------------------------------------------------------

    def features(self, job: Job, now: int) -> list[float]:
        """The feature vector of `job` submitted at `now` (in `FEATURES` order), from what is known
        at `now` only. A value the user's history cannot give yet is the requested time, flagged."""
        u = self._users.get(job.user) or _User()
        req = _log(job.estimate)
        x = [1.0, req, _log(processors(job))]
        logs = u.last_log
        for i in range(1, 4):  # most recent first
            x += [1.0, logs[-i]] if i <= len(logs) else [0.0, req]
        two = u.last
        x.append(_log(min(-(-sum(two) // len(two)), job.estimate)) if two else req)  # last2's prediction
        x.append(u.log_sum / u.done if u.done else req)
        for seen in (u.by_request.get(job.estimate), u.by_name.get(job.name) if job.name else None):
            x += [1.0, seen] if seen is not None else [0.0, req]
        x += [_log(u.last_request), float(u.last_request == job.estimate)] if u.done else [req, 0.0]
        trust = math.exp(-2.0 * u.miss)  # how well last-two has done for this user lately
        x += [trust, trust * x[_LAST2], trust * req]
        since = now - u.last_submit if u.last_submit is not None else 30 * _DAY
        x += [_log(u.unfinished), _log(u.unfinished_size), _log(since)]
        d, w = _TAU * (now % _DAY) / _DAY, _TAU * (now % _WEEK) / _WEEK
        x += [math.sin(d), math.cos(d), math.sin(w), math.cos(w)]
        return x

    # -- Predictor ------------------------------------------------------------------------------

    def predict(self, job: Job, now: int) -> int:
        x = self.features(job, now)
        u = self._users.setdefault(job.user, _User())
        size = processors(job)
        u.unfinished += 1
        u.unfinished_size += size
        u.last_submit = now
        self._pending[job.id] = (x, size)
        y = sum(w * v for w, v in zip(self.weights, x, strict=True))
        pred = round(math.expm1(min(y, 40.0)))
        return max(1, min(pred, job.estimate)) if job.estimate > 0 else 0

    def observe(self, job: Job, runtime: int, now: int) -> None:
        pending = self._pending.pop(job.id, None)
        u = self._users.setdefault(job.user, _User())
        y = _log(runtime)
        if pending is not None:
            u.unfinished -= 1
            u.unfinished_size -= pending[1]
            self._learn(pending[0], y)
            u.miss = 0.5 * u.miss + 0.5 * abs(y - pending[0][_LAST2])
        u.last.append(runtime)
        u.last_log.append(y)
        u.log_sum += y
        u.done += 1
        u.by_request[job.estimate] = y
        u.last_request = job.estimate
        if job.name:
            u.by_name[job.name] = y

    def extend(self, job: Job, elapsed: int, predicted: int) -> int:
        return self.correction.extend(job, elapsed, predicted)

    def _learn(self, x: list[float], y: float) -> None:
        """Remember (x, y); refit on the window every `refit_every` jobs."""
        k = self._seen % self.window
        self._x[k], self._y[k] = x, y
        self._seen += 1
        if self._seen % self.refit_every == 0:
            self._fit()

    def _fit(self) -> None:
        """Quantile regression by iteratively reweighted least squares (a few steps from the
        last weights): the pinball loss sum(rho_tau(r)) equals a weighted square sum with weights
        rho_tau(r) / r^2, so each step solves a weighted ridge problem."""
        with _one_blas_thread():
            self._irls()

    def _irls(self) -> None:
        n = min(self._seen, self.window)
        x, y = self._x[:n], self._y[:n]
        tau = self.quantile
        w = np.asarray(self.weights)
        shrink = np.full(len(w), self.ridge)
        shrink[0] = 0.0  # the intercept is not shrunk
        for _ in range(self.iterations):
            r = y - x @ w
            a = np.where(r > 0, tau, 1.0 - tau) / np.maximum(np.abs(r), 0.05)
            xa = x * a[:, None]
            w = np.linalg.solve(xa.T @ x + np.diag(shrink), xa.T @ y)
        self.weights = w.tolist()
