"""The option set of a CP dispatcher version: the front end's option families, those of the time
policies it can run, with the version's own defaults, paper values and choices."""

from __future__ import annotations

from collections.abc import Mapping
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


def front_end_problem(v: Mapping[str, Any]) -> str | None:
    """What is wrong with the front end's option values `v`, if anything, beyond their choices."""
    counts = [n for n in ("q_length", "k", "workers") if n in v]
    if any(v[n] < 1 for n in counts) or v["initial_limit"] <= 0:
        return f"{', '.join(counts)}, initial_limit must be > 0"
    if v["det_wall_cap"] < 0:
        return "det_wall_cap must be >= 0"
    if v.get("blocked", 0) < 0:
        return "blocked must be >= 0"
    if not v["limit_scale"] > 0:
        return "limit_scale must be > 0"
    if v["limit_scale"] != 1.0 and v["time_policy"] == "fast":
        return "limit_scale scales the papers' time policies; the fast policy has fast_budget and fast_conflicts"
    return None
