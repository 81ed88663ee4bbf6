"""How a CP decision was reached: one status per reason, as decisions.csv shows it.

The prefixes group them: `greedy...` the greedy plan was enacted without a solve, `fallback:...`
it was enacted after one, `unsolved...` nothing started because there was no plan to enact
(counted together by `reproduce.causes`). A decision may add suffixes: `:capped` (a solve was
stopped by `det_wall_cap`) and `:dropped=N` (N planned starts were invalid and not enacted).
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    #: the whole queue fits now: started without a model (`fastpath`)
    FASTPATH = "fastpath"
    #: no queued job fits now: nothing can start
    EMPTY = "empty"
    #: the greedy plan starts every selected job now: no objective can do better (`shortcut`)
    GREEDY_ALL_NOW = "greedy"
    #: the model is over its size guard: the greedy plan, no solve
    TOO_LARGE = "greedy:too-large"
    #: the same with `fallback=false`: nothing starts
    TOO_LARGE_UNSOLVED = "unsolved:too-large"
    #: neither a greedy plan (no order of the jobs fits) nor the solver gave a plan: nothing starts
    NO_PLAN = "none"
    #: the solver's plan, proven optimal
    OPTIMAL = "optimal"
    #: pcp20: the proven optimum of HCP's relaxation kept its value once shifted onto the nodes, so
    #: it is optimal for the exact model, which is not solved (`relaxed_start`)
    RELAXATION = "relaxation"
    #: the solver's plan, not proven optimal
    FEASIBLE = "feasible"
    #: the solver's plan (not proven optimal) started nothing now; moved as early as its jobs fit
    #: in the order of its starts, it does, and is better (`fallback`): a search stopped early
    #: can leave a gap at the start that its own order fills
    SHIFTED = "shifted"
    #: eurora14: the plan of a pure phase ranks better than the composite's
    PHASE = "phase"
    #: the solver found no plan; the greedy plan is enacted (`fallback`)
    NO_SOLUTION = "fallback:no-solution"
    #: the starting plan (the greedy plan, or pcp20's shifted relaxation) is better than the
    #: solver's under the objective, and is enacted
    GREEDY_BETTER = "fallback:greedy-better"
    #: the solver found no plan and `fallback=false` (the papers'): nothing starts
    UNSOLVED = "unsolved"


def with_suffixes(status: Status, capped: bool = False, dropped: int = 0) -> str:
    """The text decisions.csv shows for `status` and what happened after it."""
    return status.value + (":capped" if capped else "") + (f":dropped={dropped}" if dropped else "")
