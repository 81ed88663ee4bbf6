"""Job-duration predictors, by the names the command line and experiment files use."""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import CpdispatchError
from ..job import Job
from ..plugins import entry_points_of, import_object
from .base import Predictor
from .datadriven import DataDrivenPredictor
from .last2 import Last2PCP21Predictor, Last2Predictor
from .learned import LearnedPredictor
from .real import RealPredictor
from .sc15 import SC15Predictor
from .walltime import WalltimePredictor

_CLASSES: dict[str, type[Predictor]] = {
    "walltime": WalltimePredictor,
    "real": RealPredictor,
    "last2": Last2Predictor,
    "datadriven": DataDrivenPredictor,
    "learned": LearnedPredictor,
    "sc15": SC15Predictor,
}

PREDICTORS: list[str] = list(_CLASSES)

#: Extra names accepted by `make_predictor` (not listed in PREDICTORS): the ablation baselines.
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {"last2-pcp21": ("last2", {"bug_compatible": True})}


def _value(text: str) -> Any:
    """An option value as written in a spec: an int, a float, true/false, or the text itself."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``name,key=value,...`` (how the command line and campaign files give a predictor options,
    e.g. ``last2,correction=request``) as the name and its options."""
    name, *pairs = (part.strip() for part in spec.split(","))
    opts: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CpdispatchError(f"predictor {spec!r}: option {pair!r} is not KEY=VALUE")
        opts[key.strip().replace("-", "_")] = _value(value.strip())
    return name, opts


def make_predictor(name: str, **opts: Any) -> Predictor:
    """A fresh predictor. Options are the class's constructor arguments, given as keywords or in
    the name (`parse_spec`); the predictor is then named as written, so that results say which
    variant ran. `last2` also takes `bug_compatible=True` for PCP21's shipped behaviour (see
    `Last2PCP21Predictor`), also reachable by the alias name `last2-pcp21`."""
    if "," in name:
        spec = ",".join(part.strip() for part in name.split(","))
        name, written = parse_spec(name)
        predictor = make_predictor(name, **(written | opts))
        predictor.name = spec
        return predictor
    if name in ALIASES:
        name, extra = ALIASES[name]
        opts = extra | opts
    cls = _CLASSES.get(name)
    if cls is None:
        known = ", ".join(PREDICTORS + list(ALIASES))
        raise CpdispatchError(f"unknown predictor {name!r}; known: {known}")
    if name == "last2" and opts.pop("bug_compatible", False):
        cls = Last2PCP21Predictor
    try:
        inspect.signature(cls).bind(**opts)
    except TypeError as e:
        raise CpdispatchError(f"predictor {name!r}: bad options {sorted(opts)}: {e}") from None
    try:
        return cls(**opts)
    except ValueError as e:
        raise CpdispatchError(f"predictor {name!r}: {e}") from None


#: Entry-point group through which installed packages add predictors (a `Predictor` subclass).
ENTRY_POINT_GROUP = "cpdispatch.predictors"


class _Adapted(Predictor):
    """Any object with `predict(job, now)` (and optionally `observe(job, runtime, now)`,
    `extend(job, elapsed, predicted)`) as a `Predictor`."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.name = getattr(obj, "name", type(obj).__name__)
        self.corrects_running = bool(getattr(obj, "corrects_running", False))  # type: ignore[misc]

    def predict(self, job: Job, now: int) -> int:
        return int(self.obj.predict(job, now))

    def observe(self, job: Job, runtime: int, now: int) -> None:
        if hasattr(self.obj, "observe"):
            self.obj.observe(job, runtime, now)

    def extend(self, job: Job, elapsed: int, predicted: int) -> int:
        return int(self.obj.extend(job, elapsed, predicted)) if hasattr(self.obj, "extend") else predicted


def resolve_predictor(spec: Any) -> Predictor:
    """A predictor from a name (built-in, plugin entry point or ``module:attr``), a `Predictor`,
    a `Predictor` class, or any object with a `predict(job, now)` method."""
    if isinstance(spec, str):
        if ":" in spec:
            return resolve_predictor(import_object(spec))
        if spec not in _CLASSES and spec not in ALIASES and "," not in spec:
            found = entry_points_of(ENTRY_POINT_GROUP)
            if spec in found:
                return resolve_predictor(found[spec].load())
        return make_predictor(spec)
    if isinstance(spec, Predictor):
        return spec
    if isinstance(spec, type):
        return resolve_predictor(spec())
    if callable(getattr(spec, "predict", None)):
        return _Adapted(spec)
    raise CpdispatchError(f"not a predictor: {spec!r} (a name, or an object with predict(job, now))")


__all__ = [
    "ALIASES",
    "PREDICTORS",
    "DataDrivenPredictor",
    "Last2PCP21Predictor",
    "Last2Predictor",
    "LearnedPredictor",
    "Predictor",
    "RealPredictor",
    "SC15Predictor",
    "WalltimePredictor",
    "make_predictor",
    "parse_spec",
    "resolve_predictor",
]
