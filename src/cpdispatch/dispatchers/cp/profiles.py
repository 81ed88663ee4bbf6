"""`profile=paper`: a CP dispatcher as its paper ran it, one switch instead of a set of options.

Our defaults (the fast policy, the greedy hint, fallback and shortcut, the fast path, scarce-fit
allocation, pcp20's reductions and re-allocation) change what a dispatcher is. Under
`profile=paper` every option is fixed: to its paper value where its declaration gives one
(`options.option(..., paper=...)`, or the dispatcher's own where it declares its options), else to
the dispatcher's own default, which for the ablation versions already is the version's (clamp,
priority, queue length, free_now). Only the options declared `Paper.FREE` keep the value given.

What no option can give back, and the reproduction states: the solver generation (CP-SAT, not
OR-Tools 7.3's CP solver, hence `limit_scale` and `deterministic_time`), CP-SAT's presolve switched
off on pcp20 models with boxes (a solver setting, not a model change), and the predictor, which is
a factor of each experiment (W, D, R), not a setting of the dispatcher.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import Option, Paper


def paper_overrides(options: Sequence[Option]) -> dict[str, Any]:
    """What `profile=paper` sets on a dispatcher with `options`: the paper's values where they
    differ from the defaults."""
    return {o.name: o.paper for o in options if not isinstance(o.paper, Paper) and o.paper != o.default}


def free_options(options: Sequence[Option]) -> tuple[str, ...]:
    """The options that keep their own value under the paper profile."""
    return tuple(o.name for o in options if o.paper is Paper.FREE)


def apply_profile(options: Sequence[Option], given: Mapping[str, Any]) -> dict[str, Any]:
    """The option values of a dispatcher with `options` built with `given`: `paper` as the value
    of an option that accepts it is the option's paper value (time_policy, search); then, under
    the default profile, unchanged; under `paper`, every option fixed (the paper's or the
    default), `given` checked against it. Returns the values, or raises ValueError with a one-line
    reason."""
    known = {o.name: o for o in options}
    given = {k: known[k].paper if v == "paper" and "paper" in known[k].choices and not isinstance(known[k].paper, Paper)
             else v for k, v in given.items()}
    defaults = {o.name: o.default for o in options}
    if given.get("profile", defaults.get("profile", "default")) != "paper":
        return dict(given)
    free = free_options(options)
    fixed = {**defaults, **paper_overrides(options)}
    for key, value in given.items():
        if key not in free and value != fixed[key]:
            raise ValueError(f"option {key}={value!r} conflicts with profile=paper, which sets {key}={fixed[key]!r} "
                             f"(drop it, or use profile=default; free under the profile: "
                             f"{', '.join(f for f in free if f != 'profile')})")
    return {k: given.get(k, v) if k in free else v for k, v in fixed.items()}
