"""`profile=paper`: a CP dispatcher as its paper ran it, one switch instead of a set of options.

Our defaults (the fast policy, the greedy hint, fallback and shortcut, the fast path, scarce-fit
allocation, pcp20's reductions and re-allocation) change what a dispatcher is. Under
`profile=paper` every option is fixed: those listed here to the paper's value, every other one to
the dispatcher's own default, which for the ablation versions already is the version's (clamp,
priority, queue length, free_now). Only the options in `FREE` may be given beside the profile.

What no option can give back, and the reproduction states: the solver generation (CP-SAT, not
OR-Tools 7.3's CP solver, hence `limit_scale` and `deterministic_time`), CP-SAT's presolve switched
off on pcp20 models with boxes (a solver setting, not a model change), and the predictor, which is
a factor of each experiment (W, D, R), not a setting of the dispatcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROFILES = ("default", "paper")
#: options that keep their own value under a profile
FREE = ("profile", "seed", "limit_scale", "deterministic_time", "det_wall_cap")
#: options a dispatcher's paper varies or does not give (CP'14: one model per objective; delta unreported)
FREE_BY_DISPATCHER: dict[str, tuple[str, ...]] = {"eurora14": ("objective", "tolerance")}

#: every CP dispatcher (CP'19 Sect. 4-5 and reference notes 2.2-2.9; PCP'20 Sect. 3-4, notes 3.2)
PAPER_COMMON: dict[str, Any] = {
    "time_policy": "paper",  # the version's own limits and stopping rules
    "search": "paper",  # the version's own search
    "hint": False,  # each solve starts cold (notes 2.3: the model is rebuilt, no warm start)
    "shortcut": False,  # the model is always solved
    "fastpath": False,  # no whole-queue start without a model
    "fallback": False,  # no plan in time: nothing starts (notes 2.9)
    "allocator": "best-fit",  # HCP's allocator (notes 2.7); the PCP family places in the model
    "reallocate": False,  # the model's own placement is what runs
    "blocked": 0,  # only jobs that fit now enter the model (notes 2.2 step 4)
    "workers": 1,  # one search thread, as the papers' solver
    "ewt": "eurora",  # the Eurora queues' expected waiting times (CP'19 Sect. 5), 1800 s elsewhere
}

_PCP19_FAMILY: dict[str, Any] = {
    "layout": "units",  # one optional interval per unit that fits on each node (CP'19 Sect. 4)
    "redundant": False,  # the per-type total cumulative is ours
}

#: what each dispatcher's paper sets beyond `PAPER_COMMON`
PAPER_BY_DISPATCHER: dict[str, dict[str, Any]] = {
    "pcp20": {
        "duration_tiebreak": True,  # priority (-slowdown, d, area) (notes 3.2 step 2)
        "all_different": True,  # Sect. 3: all different positions per job
        "implied_cumulative": True,  # Sect. 3: the implied cumulative per type
        "sparse_domains": False,
        "reductions": False,  # the paper's model: no dropped, folded or fluid types
        "max_units": 0,  # no size guard
        "max_running_boxes": 0,
        "stage2": 0,  # the second stage is ours
        "relaxed_start": 0.0,  # so is the relaxation's starting plan
    },
    "pcp": _PCP19_FAMILY,
    "pcp1": _PCP19_FAMILY,
    "pcp2": _PCP19_FAMILY,
    "pcp3": _PCP19_FAMILY,
    "eurora14": {
        "q_length": 1_000_000_000,  # the 2014 dispatcher plans every queued job
        **_PCP19_FAMILY,
    },
}


def paper_overrides(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """What `profile=paper` sets on the dispatcher registered as `name` whose options (name ->
    default) are `options`: the paper's values where they differ from the defaults."""
    wanted = {**PAPER_COMMON, **PAPER_BY_DISPATCHER.get(name, {})}
    return {k: v for k, v in wanted.items() if k in options and options[k] != v}


def apply_profile(name: str, options: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The option values of a dispatcher built with `given`: unchanged under the default profile;
    under `paper`, every option fixed (the paper's or the default), `given` checked against it.
    Returns the values, or raises ValueError with a one-line reason."""
    profile = given.get("profile", options.get("profile", "default"))
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (profiles: {', '.join(PROFILES)})")
    if profile == "default":
        return dict(given)
    free = free_options(name)
    fixed = {**options, **paper_overrides(name, options)}
    for key, value in given.items():
        if key not in free and value != fixed[key]:
            raise ValueError(f"option {key}={value!r} conflicts with profile=paper, which sets {key}={fixed[key]!r} "
                             f"(drop it, or use profile=default; free under the profile: {', '.join(free[1:])})")
    out = {k: v for k, v in fixed.items() if k not in free}
    out.update({k: v for k, v in given.items() if k in free})
    return out


def free_options(name: str) -> tuple[str, ...]:
    """The options of dispatcher `name` that keep their own value under the paper profile."""
    return FREE + FREE_BY_DISPATCHER.get(name, ())
