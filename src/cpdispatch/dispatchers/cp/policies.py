"""Time policies: how long CP-SAT searches and when a dispatcher stops, one strategy object each.

The papers' policies are kept for reproduction; their wall limits make runs machine-dependent and
cost seconds per decision:
  cp19      limits 1, 2, 4, 8, 16 s; each re-solve is hinted with the best plan so far; stop on
            OPTIMAL, INFEASIBLE, or k equal best values; running out counts as "not solved" (the
            queue length is halved) only when no plan was found (the authors' code also halves
            after a plan that kept improving; CP'19 Sect. 2.2 restarts only "if no solution is found").
  pcp20     stop at the 1-s mark if a plan exists, else extend by 0.5 s up to `max_retries` times
            (each extension is a fresh hinted solve: CP-SAT cannot move a running solve's deadline);
            a failure halves the number of jobs planned, not the queue length.
  doubling  the HCP base: 1 s, doubled only while no plan, below 150 s.
  pcp-base  the PCP base: 60 s, and 120 s more when the best plan starts nothing now.
  one-solve eurora14's phases under `time_policy=paper`: one solve of `initial_limit` seconds each.
  fast      (default) one solve of `fast_budget` deterministic seconds or `fast_conflicts`
            conflicts, whichever comes first, with quick restarts, and `initial_limit` wall seconds
            as a safety cap (reproducible unless the cap is hit); the greedy hint means there always
            is a plan. The conflict limit matters: CP-SAT under-counts deterministic time when it
            raises an objective bound by tiny steps.
`deterministic_time` > 0 replaces every policy's wall limits by deterministic ones: the value stands
for `initial_limit` seconds (1 s, the first limit of the CP'19 and PCP'20 policies) and every limit
scales alike (PCP base's 60 s become 60 times it), for runs that are reproducible across machines.

Each policy reads only the option families it lists in `families`, copied when it is built: a
dispatcher accepts the options of the policies it can run, and no other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, NamedTuple, Protocol

from ortools.sat.python import cp_model

from ..base import Paper
from .built import BuiltModel
from .instance import Instance, Plan
from .options import family, option, values

#: (best plan, proven optimal, solved: the queue length is reset rather than reduced)
Result = tuple[Plan | None, bool, bool]
#: CP'20 code: extend the search by 0.5 s while no solution; HCP base: double below 150 s.
PCP20_EXTENSION = 0.5
DOUBLING_CAP = 150.0
#: PCP base (notes 2.4): a first solve, then one with a doubled limit when the best plan starts
#: nothing now (the original's bound was 125 s).
PCP_BASE_LIMITS = (60.0, 120.0)


@family
class Limits:
    """What every policy reads: its limits in seconds, or in deterministic time."""

    initial_limit: float = option(1.0, "first time limit in seconds (cp19, pcp20, doubling); wall cap of fast")
    deterministic_time: float = option(0.0, "> 0: deterministic-time limits instead of wall limits (the value "
                                            "stands for initial_limit seconds; every limit scales alike)",
                                       paper=Paper.FREE)
    det_wall_cap: float = option(0.0, "with deterministic_time: a solve also stops after this many times its "
                                      "deterministic limit in wall seconds (0: never; CP-SAT under-counts "
                                      "deterministic time on some models); a decision so stopped gets the "
                                      "status suffix ':capped'", paper=Paper.FREE)
    limit_scale: float = option(1.0, "paper time policies: multiply every time limit (e.g. 0.1 for a faster "
                                     "machine and solver than the papers' OR-Tools 7.3)", paper=Paper.FREE)

    def solve_limits(self, seconds: float) -> tuple[float, float]:
        """(wall, deterministic) limits of a solve the paper gives `seconds`, times `limit_scale`;
        deterministic ones when `deterministic_time` > 0 (it stands for `initial_limit` seconds)."""
        scaled = seconds * self.limit_scale
        if self.deterministic_time > 0:
            return 0.0, self.deterministic_time * scaled / self.initial_limit
        return scaled, 0.0


@family
class FastOptions:
    """The fast policy's budget."""

    fast_budget: float = option(0.005, "fast policy: CP-SAT deterministic-time budget per decision")
    fast_conflicts: int = option(300, "fast policy: also stop after this many conflicts (0: no limit; "
                                      "deterministic)")


@family
class Cp19Options:
    k: int = option(2, "cp19: stop after k equal objective values")
    max_limit: float = option(16.0, "cp19: largest time limit in seconds")


@family
class RetryOptions:
    max_retries: int = option(4, "pcp20: 0.5-s extensions while no solution")


class SolveLimits(NamedTuple):
    """The arguments of one solve: wall and deterministic limits, quick restarts, conflicts."""

    wall: float
    dtime: float
    quick: bool = False
    conflicts: int = 0


class Solver(Protocol):
    """What a policy needs from the dispatcher it runs for."""

    hint: bool

    def solve_once(self, built: BuiltModel, hint: Plan | None, wall: float, dtime: float, quick: bool = False,
                   conflicts: int = 0) -> tuple[Any, Plan | None]: ...

    def plan_value(self, inst: Instance, plan: Plan) -> int: ...


class TimePolicy(ABC):
    """One time policy, built from the option values of a dispatcher (`source`)."""

    name: ClassVar[str]
    #: the option families it reads
    families: ClassVar[tuple[type, ...]] = (Limits,)

    def __init__(self, source: object) -> None:
        self.limits = values(Limits, source)

    @abstractmethod
    def run(self, solver: Solver, built: BuiltModel, hint: Plan | None) -> Result:
        """The best plan within the policy's limits; `hint` (None: cold) hints the first solve."""

    def first_solve(self) -> SolveLimits:
        """The limits of the policy's first solve (eurora14 gives each phase one)."""
        return SolveLimits(*self.limits.solve_limits(self.limits.initial_limit))

    def shrink(self, q_length: int, planned: int) -> int:
        """The queue length after a run that did not count as solved."""
        return max(1, q_length // 2)


class OneSolve(TimePolicy):
    """One solve of the first limits: eurora14's phases under `time_policy=paper`."""

    name = "one-solve"

    def run(self, solver: Solver, built: BuiltModel, hint: Plan | None) -> Result:
        status, plan = solver.solve_once(built, hint, *self.first_solve())
        return plan, status == cp_model.OPTIMAL, plan is not None


class Fast(OneSolve):
    """One solve of the fast budget, with quick restarts."""

    name = "fast"
    families = (Limits, FastOptions)

    def __init__(self, source: object) -> None:
        super().__init__(source)
        self.fast = values(FastOptions, source)

    def first_solve(self) -> SolveLimits:
        det = self.limits.deterministic_time
        wall, dtime = (0.0, det) if det > 0 else (self.limits.initial_limit, self.fast.fast_budget)
        return SolveLimits(wall, dtime, True, self.fast.fast_conflicts)


class Repeated(TimePolicy):
    """Solves until a stop: each re-solve hinted with the best plan so far (when hints are on), else
    with `hint` again (the search's own first solution, `search=dive`, or none)."""

    def run(self, solver: Solver, built: BuiltModel, hint: Plan | None) -> Result:
        best: Plan | None = None
        best_value: int | None = None
        history: list[int] = []  # the best value after each solve, once there is one
        seconds = self.limits.initial_limit
        step = 0
        while True:
            status, plan = solver.solve_once(built, (best or hint) if solver.hint else hint,
                                             *self.limits.solve_limits(seconds))
            if plan is not None:
                value = solver.plan_value(built.instance, plan)
                if best_value is None or value < best_value:
                    best, best_value = plan, value
            if status == cp_model.OPTIMAL:
                return best, True, True
            if status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
                return best, False, False
            step += 1
            if best_value is not None:
                history.append(best_value)
            after = self.next_limit(step, seconds, best, history)
            if isinstance(after, tuple):
                return after
            seconds = after

    @abstractmethod
    def next_limit(self, step: int, seconds: float, best: Plan | None, history: list[int]) -> float | Result:
        """The next solve's seconds, or the result (the policy stops)."""


class Cp19(Repeated):
    name = "cp19"
    families = (Limits, Cp19Options)

    def __init__(self, source: object) -> None:
        super().__init__(source)
        self.cp19 = values(Cp19Options, source)

    def next_limit(self, step: int, seconds: float, best: Plan | None, history: list[int]) -> float | Result:
        k = self.cp19.k
        if len(history) >= k and len(set(history[-k:])) == 1:
            return best, False, True
        seconds *= 2
        if seconds > self.cp19.max_limit + 1e-9:  # out of time: unsolved only if nothing was found
            return best, False, best is not None
        return seconds


class Pcp20(Repeated):
    name = "pcp20"
    families = (Limits, RetryOptions)

    def __init__(self, source: object) -> None:
        super().__init__(source)
        self.retries = values(RetryOptions, source)

    def next_limit(self, step: int, seconds: float, best: Plan | None, history: list[int]) -> float | Result:
        if best is not None:
            return best, False, True
        if step > self.retries.max_retries:
            return None, False, False
        return PCP20_EXTENSION

    def shrink(self, q_length: int, planned: int) -> int:
        """The PCP'20 wrapper halves the number of jobs it planned."""
        return max(1, min(q_length, planned) // 2)


class Doubling(Repeated):
    name = "doubling"

    def next_limit(self, step: int, seconds: float, best: Plan | None, history: list[int]) -> float | Result:
        if best is not None:
            return best, False, True
        seconds *= 2
        return (None, False, False) if seconds >= DOUBLING_CAP else seconds


class PcpBase(TimePolicy):
    """`time_policy=paper` of the PCP base: the retry is skipped when the first solve proved
    optimality or infeasibility (it would return the same plan); solved means a plan that starts
    a job now."""

    name = "pcp-base"

    def run(self, solver: Solver, built: BuiltModel, hint: Plan | None) -> Result:
        best: Plan | None = None
        best_value: int | None = None
        optimal = False
        for seconds in PCP_BASE_LIMITS:
            status, plan = solver.solve_once(built, (best or hint) if solver.hint else hint,
                                             *self.limits.solve_limits(seconds))
            if plan is not None:
                value = solver.plan_value(built.instance, plan)
                if best_value is None or value < best_value:
                    best, best_value = plan, value
            optimal = status == cp_model.OPTIMAL
            if optimal or status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
                break
            if best is not None and 0 in best.starts.values():
                break
        return best, optimal, best is not None and 0 in best.starts.values()


#: every policy by name (`time_policy`, or a dispatcher's `paper_policy`)
POLICIES: dict[str, type[TimePolicy]] = {p.name: p for p in (Fast, Cp19, Pcp20, Doubling, PcpBase, OneSolve)}


def policy_families(names: tuple[str, ...]) -> tuple[type, ...]:
    """The option families the policies `names` read, each once, in order."""
    out: list[type] = []
    for name in names:
        out += [f for f in POLICIES[name].families if f not in out]
    return tuple(out)
