"""Our `learned` predictor's numpy IRLS fit against learning libraries, on the same on-line replay.

Every competitor is a `LearnedPredictor` subclass: the same features (`FEATURES`, from what is known
at submission), the same log1p(run time) target, the same quantile (0.6), the same warm-up (the
estimate until `refit_every` jobs have finished), the same cap to [1, estimate] and Tsafrir's
correction; only the learner differs:

- learned        as shipped (make_predictor("learned")): IRLS quantile regression refitted every
                 `refit_every` finished jobs on the last `window` (20,000);
- learned-N      the same, refitted every N = 500 / 5,000 finished jobs;
- sklearn-qr     scikit-learn's exact QuantileRegressor (a linear programme; HiGHS's interior point,
                 sklearn-qr-simplex, not run by default: solver="highs"), learned's schedule and window;
- sgd-pinball    scikit-learn's SGDRegressor, one partial_fit per finished job (absolute loss weighted
                 tau / 1 - tau by the residual's sign: the pinball subgradient);
- sgd-huber      the same with the Huber loss (asymmetric by the same weights);
- lgbm-500/5000  LightGBM quantile trees, refitted every 500 / 5,000 finished jobs on the last 20,000;
- river          river's LinearRegression with the Quantile loss, learn_one per finished job and
                 predict_one per submission (river-scaled: behind river's StandardScaler).

The replay is `bench_predictors.replay` (each job predicted at its submission, observed at its
recorded end). Printed per trace and competitor: MAE (s), mean accuracy min(p, r) / max(p, r),
under-estimation rate, cost (microseconds per job, predict + observe, refits included; `learn` is
the part spent learning), and the predictor's total seconds. Numeric libraries run on one thread.
A competitor whose library is missing is skipped; one that exceeds `--budget` seconds on a trace
is stopped, with its measured rate.

    python benchmarks/bench_predictor_libraries.py                           # kth, hpc2n, curie
    python benchmarks/bench_predictor_libraries.py --traces kth --competitors learned,sklearn-qr,river
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

import numpy as np

from cpdispatch import read_workload
from cpdispatch.job import Job
from cpdispatch.predictors import make_predictor
from cpdispatch.predictors.learned import FEATURES, LearnedPredictor
from cpdispatch.system import load_system

try:  # run as a script or as a module
    from bench_predictors import TRACES, WORKLOADS, accuracy, replay
except ImportError:  # pragma: no cover
    from benchmarks.bench_predictors import TRACES, WORKLOADS, accuracy, replay  # type: ignore[no-redef]

NAMES = FEATURES[1:]  # without "bias": the libraries fit their own intercept


def _seconds(y: float, job: Job) -> int:
    """A log1p prediction in seconds, capped to [1, estimate] exactly as `LearnedPredictor.predict`."""
    pred = round(math.expm1(min(y, 40.0)))
    return max(1, min(pred, job.estimate)) if job.estimate > 0 else 0


class SklearnQuantile(LearnedPredictor):
    """The exact pinball-loss minimiser on the window (scikit-learn's QuantileRegressor, HiGHS), on
    `learned`'s refit schedule; predictions through `LearnedPredictor.predict` (same linear form)."""

    name = "sklearn-qr"

    def __init__(self, alpha: float = 1e-4, solver: str = "highs-ipm", **kw: Any) -> None:
        from sklearn.linear_model import QuantileRegressor

        super().__init__(**kw)
        self.model = QuantileRegressor(quantile=self.quantile, alpha=alpha, solver=solver)

    def _fit(self) -> None:
        n = min(self._seen, self.window)
        self.model.fit(self._x[:n, 1:], self._y[:n])
        self.weights = [float(self.model.intercept_), *map(float, self.model.coef_)]


class SklearnSGD(LearnedPredictor):
    """scikit-learn's SGDRegressor, one `partial_fit` per finished job; the residual's sign at the
    current weights sets the sample weight (tau above, 1 - tau below), so the absolute loss
    (epsilon_insensitive, epsilon 0) steps along the pinball loss's subgradient. Its weights are
    copied into `LearnedPredictor`'s linear prediction once `refit_every` jobs have finished."""

    name = "sgd-pinball"

    def __init__(self, loss: str = "epsilon_insensitive", epsilon: float = 0.0, eta0: float = 0.01,
                 alpha: float = 1e-6, **kw: Any) -> None:
        from sklearn.linear_model import SGDRegressor

        super().__init__(**kw)
        self.model = SGDRegressor(loss=loss, epsilon=epsilon, eta0=eta0, alpha=alpha, fit_intercept=False)
        self._w = np.zeros(len(FEATURES))

    def _learn(self, x: list[float], y: float) -> None:
        row = np.asarray([x])
        weight = self.quantile if y > float(row[0] @ self._w) else 1.0 - self.quantile
        self.model.partial_fit(row, [y], sample_weight=[weight])
        self._w = self.model.coef_
        self._seen += 1
        if self._seen >= self.refit_every:
            self.weights = self._w.tolist()


class LightGBMQuantile(LearnedPredictor):
    """LightGBM quantile trees refitted every `refit_every` finished jobs on the window; each job is
    predicted at submission by the trees of the moment (one `Booster.predict` call per job)."""

    name = "lgbm"

    def __init__(self, n_estimators: int = 100, num_leaves: int = 31, learning_rate: float = 0.1,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.params: dict[str, Any] = {
            "objective": "quantile", "alpha": self.quantile, "n_estimators": n_estimators,
            "num_leaves": num_leaves, "learning_rate": learning_rate, "n_jobs": 1, "verbose": -1,
        }
        self.model: Any = None

    def _fit(self) -> None:
        from lightgbm import LGBMRegressor

        n = min(self._seen, self.window)
        self.model = LGBMRegressor(**self.params).fit(self._x[:n, 1:], self._y[:n])

    def predict(self, job: Job, now: int) -> int:
        pred = super().predict(job, now)  # bookkeeping, and the estimate before the first fit
        if self.model is None:
            return pred
        x = self._pending[job.id][0]
        return _seconds(float(self.model.booster_.predict(np.asarray([x[1:]]), num_threads=1)[0]), job)


class RiverQuantile(LearnedPredictor):
    """river's LinearRegression with the Quantile loss (plain SGD), learn_one per finished job and
    predict_one per submission once `refit_every` jobs have finished; `scale`: behind river's
    StandardScaler."""

    name = "river"

    def __init__(self, scale: bool = False, lr: float = 0.01, **kw: Any) -> None:
        from river import linear_model, optim, preprocessing

        super().__init__(**kw)
        reg = linear_model.LinearRegression(optimizer=optim.SGD(lr), loss=optim.losses.Quantile(self.quantile),
                                            intercept_lr=lr)
        self.model: Any = preprocessing.StandardScaler() | reg if scale else reg

    def _learn(self, x: list[float], y: float) -> None:
        self.model.learn_one(dict(zip(NAMES, x[1:], strict=True)), y)
        self._seen += 1

    def predict(self, job: Job, now: int) -> int:
        pred = super().predict(job, now)  # bookkeeping, and the estimate before `refit_every` jobs
        if self._seen < self.refit_every:
            return pred
        x = self._pending[job.id][0]
        return _seconds(float(self.model.predict_one(dict(zip(NAMES, x[1:], strict=True)))), job)


def shipped() -> LearnedPredictor:
    """`learned` as the command line makes it."""
    p = make_predictor("learned")
    assert isinstance(p, LearnedPredictor)
    return p


#: name -> (library needed or None, factory)
COMPETITORS: dict[str, tuple[str | None, Callable[[], LearnedPredictor]]] = {
    "learned": (None, shipped),
    "learned-500": (None, lambda: LearnedPredictor(refit_every=500)),
    "learned-5000": (None, lambda: LearnedPredictor(refit_every=5000)),
    "sklearn-qr": ("sklearn", SklearnQuantile),
    "sklearn-qr-simplex": ("sklearn", lambda: SklearnQuantile(solver="highs")),
    "sgd-pinball": ("sklearn", SklearnSGD),
    "sgd-huber": ("sklearn", lambda: SklearnSGD(loss="huber", epsilon=0.1)),
    "lgbm-500": ("lightgbm", lambda: LightGBMQuantile(refit_every=500)),
    "lgbm-5000": ("lightgbm", lambda: LightGBMQuantile(refit_every=5000)),
    "river": ("river", RiverQuantile),
    "river-scaled": ("river", lambda: RiverQuantile(scale=True)),
}
#: library -> (module imported before measuring, so imports are not counted and threads are limited; pip name)
LIBRARIES = {"sklearn": ("sklearn.linear_model", "scikit-learn"), "lightgbm": ("lightgbm", "lightgbm"),
             "river": ("river.linear_model", "river")}


class OverBudget(Exception):
    """A competitor ran past its time budget."""


def instrument(p: LearnedPredictor, budget: float) -> list[float]:
    """Time `p`'s learning (`_learn`, refits included) into the returned one-item list, and raise
    `OverBudget` at a `_learn` call once `budget` seconds have passed."""
    learn, spent, deadline = p._learn, [0.0], time.perf_counter() + budget

    def timed(x: list[float], y: float) -> None:
        t0 = time.perf_counter()
        learn(x, y)
        t1 = time.perf_counter()
        spent[0] += t1 - t0
        if t1 > deadline:
            raise OverBudget

    setattr(p, "_learn", timed)  # noqa: B010 (a method is not assignable for mypy)
    return spent


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """BLAS and OpenMP pools limited to one thread (when threadpoolctl is installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(1):
        yield


def lgbm_predict_overhead(p: LightGBMQuantile, rows: int = 2000) -> str:
    """Microseconds per one-row predict of the last trees, through the Booster and the sklearn wrapper."""
    x = np.asarray([p._x[0, 1:]])
    out = []
    for f in (p.model.booster_.predict, p.model.predict):
        t0 = time.perf_counter()
        for _ in range(rows):
            f(x, num_threads=1)
        out.append((time.perf_counter() - t0) / rows * 1e6)
    return f"one-row predict {out[0]:.0f} us (Booster.predict), {out[1]:.0f} us (LGBMRegressor.predict)"


def versions() -> str:
    names = ["numpy", "scikit-learn", "scipy", "lightgbm", "river"]
    found = []
    for n in names:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found.append(f"{n} {metadata.version(n)}")
    return ", ".join(found)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default="kth,hpc2n,curie")
    ap.add_argument("--competitors", default=",".join(n for n in COMPETITORS if n != "sklearn-qr-simplex"))
    ap.add_argument("--budget", type=float, default=600.0, help="seconds per competitor and trace (default 600)")
    args = ap.parse_args()
    print(versions())
    names = []
    for name in args.competitors.split(","):
        lib = COMPETITORS[name][0]
        if lib is not None:
            module, package = LIBRARIES[lib]
            try:
                importlib.import_module(module)
            except ImportError as e:
                print(f"skipped {name}: {package} is not usable ({e}); pip install {package}")
                continue
        names.append(name)
    print(f"{'trace':<7} {'competitor':<13} {'jobs':>8} {'MAE s':>7} {'accuracy':>8} {'under':>6} {'us/job':>8} "
          f"{'learn':>8} {'total s':>8}")
    for key in args.traces.split(","):
        system, file = TRACES[key]
        wl = read_workload(str(WORKLOADS / file), load_system(system))
        n = len(wl.jobs)
        for name in names:
            p = COMPETITORS[name][1]()
            learn = instrument(p, args.budget)
            t0 = time.perf_counter()
            try:
                with one_thread():
                    pred, run, spent = replay(wl, p)
            except OverBudget:
                wall = time.perf_counter() - t0
                print(f"{key:<7} {name:<13} stopped after {wall:.0f} s at {p._seen:,} of {n:,} finished jobs "
                      f"({wall / max(p._seen, 1) * 1e6:,.0f} us/job, {learn[0]:.0f} s learning): "
                      f"~{wall / max(p._seen, 1) * n:,.0f} s for the whole trace", flush=True)
                continue
            a = accuracy(pred, run)
            print(f"{key:<7} {name:<13} {n:>8,} {a['mae']:>7.0f} {a['acc']:>8.3f} {a['under']:>6.3f} "
                  f"{spent / n * 1e6:>8.1f} {learn[0] / n * 1e6:>8.1f} {spent:>8.1f}", flush=True)
            if isinstance(p, LightGBMQuantile) and p.model is not None:
                with one_thread():
                    print(f"{'':<7} {name:<13} {lgbm_predict_overhead(p)}", flush=True)


if __name__ == "__main__":
    main()
