"""Job-duration predictors, by the names the command line and experiment files use."""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import CpdispatchError
from .base import Predictor
from .datadriven import DataDrivenPredictor
from .last2 import Last2PCP21Predictor, Last2Predictor
from .real import RealPredictor
from .walltime import WalltimePredictor

_CLASSES: dict[str, type[Predictor]] = {
    "walltime": WalltimePredictor,
    "real": RealPredictor,
    "last2": Last2Predictor,
    "datadriven": DataDrivenPredictor,
}

PREDICTORS: list[str] = list(_CLASSES)

#: Extra names accepted by `make_predictor` (not listed in PREDICTORS): the ablation baselines.
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {"last2-pcp21": ("last2", {"bug_compatible": True})}


def make_predictor(name: str, **opts: Any) -> Predictor:
    """A fresh predictor. Options are the class's constructor arguments; `last2` also takes
    `bug_compatible=True` for PCP21's shipped behaviour (see `Last2PCP21Predictor`), also reachable
    by the alias name `last2-pcp21` (so the command line can select it)."""
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


__all__ = [
    "ALIASES",
    "PREDICTORS",
    "DataDrivenPredictor",
    "Last2PCP21Predictor",
    "Last2Predictor",
    "Predictor",
    "RealPredictor",
    "WalltimePredictor",
    "make_predictor",
]
