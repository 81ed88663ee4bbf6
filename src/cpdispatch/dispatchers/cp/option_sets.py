"""The option set of a CP dispatcher version: the front end's option families, those of the time
policies it can run, with the version's own defaults, paper values and choices."""

from __future__ import annotations

from typing import Any

from ..base import Option
from .options import SEARCHES, FitNow, FrontEnd, options_of
from .policies import policy_families

#: the time policies a CP dispatcher runs unless it says otherwise
RUNNABLE = ("fast", "cp19", "pcp20", "doubling")


def cp_options(*, fit_now: bool = True, policies: tuple[str, ...] = RUNNABLE, paper_policy: str = "cp19",
               searches: tuple[str, ...] = (), paper: dict[str, Any] | None = None, **defaults: Any
               ) -> tuple[Option, ...]:
    """The front end's options with a version's own defaults (e.g. `clamp=False` for version 1)
    and `paper` values: those of the fit-now selection unless `fit_now` is false (the queue-order
    selection), and those the time `policies` it can run and its `paper_policy` read; `searches`
    are the searches its model adds to the front end's (pcp20's dive)."""
    runnable = tuple(dict.fromkeys((*policies, paper_policy)))
    return options_of(
        FrontEnd, *((FitNow,) if fit_now else ()), *policy_families(runnable), **defaults,
        paper={"time_policy": paper_policy, **(paper or {})},
        choices={"time_policy": (*runnable, "paper"), "search": (*SEARCHES, *searches)})
