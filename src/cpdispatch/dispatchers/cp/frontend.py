"""The front end shared by every CP dispatcher (reference notes 2.2, 2.3, 3.2): one decision as a
pipeline, read top to bottom in `decide`.

1. *Prioritise* the queue (`priorities`); start it all at once if it fits now (the fast path).
2. *Select* the model's jobs and make their `Instance` (`selection`: times relative to now,
   durations clamped to >= 1 unless the ablation says not).
3. *Build* the model and the greedy plan (`ready`); `skip_solver` is the one place that decides
   not to solve.
4. *Solve*: CP-SAT improves on that plan under a time policy (`policies`, `optimise`); the better
   of the two is kept.
5. *Enact* the jobs planned at 0, checked against the free amounts (`fitting`, `enact`).
Every way a decision is reached has its own `Status`.

A subclass builds the model (`build`) and names its objective; class attributes say which
selection it makes; its options (`option_sets.cp_options`) say what its paper sets. It may
replace the solve (`optimise`: eurora14's phases) or add a second stage (`refine`: pcp20).

Left out on purpose: the CP'19 "dispatch skip" (notes 2.2 step 1). Between two calls with the
same queue and free amounts, time moves on: waits, priorities, EWT tardiness and the running
jobs' remaining times change, so the model and its optimum can change; skipping would change
decisions. The only skip kept is the exact one: no job fits now, so nothing can start.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from ...allocators import get_allocator
from ...errors import CpdispatchError
from ...job import Job
from ...snapshot import Decision, PlacementReport, QueuedJob, Snapshot, Start
from ..base import Dispatcher
from .built import BuiltModel, ModelTooLarge
from .fitting import extract_starts, fast_path
from .greedy import greedy_plan, left_shifted
from .instance import Instance, Plan
from .objectives import SLOWDOWN, Objective
from .option_sets import cp_options, front_end_problem
from .options import FitNow, FrontEnd
from .outcome import Outcome, Ready
from .policies import POLICIES, FastOptions, Limits, Result, SolveLimits
from .priorities import Priorities
from .profiles import apply_profile
from .selection import instance_of, select
from .solve import solve
from .status import Status, with_suffixes


class CpDispatcher(Dispatcher, FrontEnd, FitNow, Limits, FastOptions):
    """Base of every CP dispatcher. Subclasses set `goal` (the objective they minimise) and
    implement `build`.

    Class attributes that say which version it is (not options): `selection` "fit-now" (CP'19
    versions, PCP'20) or "queue" (HCP and PCP base, eurora14: the first jobs in queue order,
    fitting or not); `postpone_rest` (HCP base: the rest of the queue stays in the model, fixed at
    the end of the horizon). What the version's paper sets is in its options (`cp_options`).
    """

    goal: Objective = SLOWDOWN
    selection: ClassVar[str] = "fit-now"
    postpone_rest: ClassVar[bool] = False
    options = cp_options()

    def __init__(self, **values: Any) -> None:
        if set(values) <= {o.name for o in self.options}:  # an unknown option is the base class's error
            try:
                values = apply_profile(self.options, values)
            except ValueError as exc:
                raise CpdispatchError(f"dispatcher {self.name}: {exc}") from None
        super().__init__(**values)
        problem = self.check({**{o.name: o.default for o in self.options}, **values})
        if problem:
            raise CpdispatchError(f"dispatcher {self.name}: {problem}")
        self._capped = False  # a solve of the current decision was stopped by det_wall_cap
        self._alloc = get_allocator(self.allocator)
        self.priorities = Priorities(self.priority, self.ewt, self.duration_tiebreak)
        self.cur_q_length = self.q_length
        self.timing = POLICIES[self.time_policy](self)

    def check(self, v: Mapping[str, Any]) -> str | None:
        """What is wrong with the option values `v`, if anything (beyond their `choices`). Read
        from the mapping, not the attributes: checking an option is not using it
        (`tests/test_cp_options.py`)."""
        return front_end_problem(v)

    @abstractmethod
    def build(self, instance: Instance) -> BuiltModel:
        """The CP-SAT model of `instance` (jobs in priority order)."""

    def prepare(self, instance: Instance) -> BuiltModel | None:
        """`build`, except that the model may post its variables only at `BuiltModel.post`; None
        when `optimise` builds its own models."""
        return self.build(instance)

    @property
    def weighs_jobs(self) -> bool:
        return self.goal.kind != "makespan"

    def plan_value(self, inst: Instance, plan: Plan) -> int:
        """The objective value of `plan`, as the model computes it."""
        return self.goal.value(inst, plan)

    # -- prioritise and select ----------------------------------------------------------------

    def ewt_of(self, job: Job) -> int:
        return self.priorities.ewt_of(job)

    def order(self, snapshot: Snapshot) -> list[QueuedJob]:
        return self.priorities.order(snapshot)

    def select(self, snapshot: Snapshot, ordered: list[QueuedJob]) -> list[QueuedJob]:
        blocked = self.blocked if self.selection == "fit-now" else 0  # the queue selection has no such option
        return select(snapshot, ordered, self.selection, self.cur_q_length, blocked)

    def instance(self, snapshot: Snapshot, selected: list[QueuedJob]) -> Instance:
        return instance_of(snapshot, selected, clamp=self.clamp, ewt_of=self.ewt_of, weights=self._alloc.weights,
                           postpone_rest=self.postpone_rest)

    @property
    def models_blocked_jobs(self) -> bool:
        """Whether the model holds jobs that cannot start now (its placement accounts for them)."""
        return self.selection == "fit-now" and self.blocked > 0

    # -- decision -----------------------------------------------------------------------------

    def decide(self, snapshot: Snapshot) -> Decision:
        self._alloc.observe(snapshot)
        ordered = self.order(snapshot)
        self._capped = False
        start = self.skip_solver(snapshot, ordered)
        out = start if isinstance(start, Outcome) else self.optimise(start)
        if out.solved:
            self.cur_q_length = self.q_length
        elif out.solved is False:  # None: no solve was tried, the length stays
            planned = len(out.inst.jobs) if out.inst is not None else self.cur_q_length
            self.cur_q_length = self.timing.shrink(self.cur_q_length, planned)
        return self.enact(snapshot, ordered, out)

    def skip_solver(self, snapshot: Snapshot, ordered: list[QueuedJob]) -> Outcome | Ready:
        """The one place that decides not to solve, in this order: the whole queue fits now
        (FASTPATH), no job fits now (EMPTY), the greedy plan starts every selected job now
        (GREEDY_ALL_NOW: no objective can do better, all are monotone in the starts), the starting
        plan is proven optimal (RELAXATION), the model is over its size guard (TOO_LARGE, or
        TOO_LARGE_UNSOLVED without fallback, NO_PLAN without a greedy plan). Otherwise what the
        solve starts from."""
        if self.fastpath:
            starts = fast_path(snapshot, ordered, self._alloc.weights)
            if starts is not None:
                return Outcome(None, Status.FASTPATH, None, True, starts=starts)
        selected = self.select(snapshot, ordered)
        if not selected:
            return Outcome(None, Status.EMPTY, None, None)
        ready = self.ready(self.instance(snapshot, selected))
        inst, greedy = ready.inst, ready.greedy
        if self.shortcut and greedy is not None and not any(greedy.starts.values()) and not inst.postponed:
            return Outcome(greedy, Status.GREEDY_ALL_NOW, ready.value, True, inst=inst)
        if ready.proven:
            return Outcome(greedy, Status.RELAXATION, ready.value, True, inst=inst)
        if not ready.too_large:
            return ready
        if greedy is None:
            return Outcome(None, Status.NO_PLAN, None, False, inst=inst)
        if not self.fallback:
            return Outcome(None, Status.TOO_LARGE_UNSOLVED, None, None, inst=inst)
        return Outcome(greedy, Status.TOO_LARGE, ready.value, None, inst=inst)

    def ready(self, inst: Instance) -> Ready:
        """The model (unless over its size guard) and the greedy plan, which is not even made
        when nothing uses it (`hint`, `shortcut` and `fallback` off: the papers' set-up). Only
        the size guard and an inconsistent instance are caught: any other exception is a bug."""
        try:
            built, too_large = self.prepare(inst), False
        except ModelTooLarge:
            built, too_large = None, True
        greedy: Plan | None = None
        if too_large or self.hint or self.shortcut or self.fallback:
            try:
                greedy = built.greedy_plan(until=0) if built is not None else greedy_plan(inst)
            except ValueError:  # a job fits at no time (an inconsistent instance): the solver may cope
                greedy = None
        value = self.plan_value(inst, greedy) if greedy is not None else None
        return Ready(inst, built, greedy, value, too_large)

    def optimise(self, ready: Ready) -> Outcome:
        """The solver's plan under the time policy, or the greedy plan when the solver finds none
        (NO_SOLUTION) or a worse one (GREEDY_BETTER), or, when the solver's plan starts nothing now,
        that plan shifted left if that is better (SHIFTED); the last two only with `fallback` on."""
        inst, greedy, g_obj = ready.inst, ready.greedy, ready.value
        built = ready.built if ready.built is not None else self.build(inst)
        built.post()
        if self.search in ("fixed", "dive"):
            built.add_search()
        first = built.first_dive() if self.search == "dive" else None
        best, optimal, solved = self.run_policy(built, first or (greedy if self.hint else None))
        if best is None:
            if not self.fallback:
                return Outcome(None, Status.UNSOLVED, None, False, built, inst)
            status = Status.NO_SOLUTION if greedy is not None else Status.NO_PLAN
            return Outcome(greedy, status, g_obj, False, built, inst)
        b_obj = self.plan_value(inst, best)
        if self.fallback and g_obj is not None and greedy is not None and g_obj < b_obj:
            return Outcome(greedy, Status.GREEDY_BETTER, g_obj, solved, built, inst)
        if self.fallback and not optimal and 0 not in best.starts.values():
            shifted = left_shifted(inst, best)
            if shifted is not None and (s_obj := self.plan_value(inst, shifted)) < b_obj:
                return Outcome(shifted, Status.SHIFTED, s_obj, solved, built, inst)
        return Outcome(best, Status.OPTIMAL if optimal else Status.FEASIBLE, b_obj, solved, built, inst)

    def enact(self, snapshot: Snapshot, ordered: list[QueuedJob], out: Outcome) -> Decision:
        """The decision of `out`: the fast path's starts, or the plan's jobs at 0 that are valid
        now (then the second stage may move them)."""
        if out.starts is not None:
            return Decision(starts=out.starts, status=with_suffixes(out.status))
        built = out.built
        variables = built.variables if built is not None else None
        constraints = built.constraints if built is not None else None
        if out.plan is None or out.inst is None:
            return Decision(status=with_suffixes(out.status, self._capped), variables=variables,
                            constraints=constraints)
        # with blocked jobs in the model, its placement accounts for them: keep it
        reallocate = self.reallocate and not self.models_blocked_jobs
        starts, dropped = extract_starts(snapshot, out.inst, out.plan, reallocate)
        starts, stage2 = self.refine(snapshot, ordered, starts)
        later = {j: out.inst.time + s for j, s in out.plan.starts.items() if s > 0}
        return Decision(
            starts=starts, status=with_suffixes(out.status, self._capped, dropped), variables=variables,
            constraints=constraints, objective=float(out.objective) if out.objective is not None else None,
            plan=later, stage2=stage2,
        )

    def refine(
        self, snapshot: Snapshot, ordered: list[QueuedJob], starts: tuple[Start, ...]
    ) -> tuple[tuple[Start, ...], PlacementReport | None]:
        """A second stage that may move the jobs starting now to other nodes (never start others):
        none here; pcp20 has one."""
        return starts, None

    # -- solving --------------------------------------------------------------------------------

    def run_policy(self, built: BuiltModel, greedy: Plan | None) -> Result:
        """(best plan, proven optimal, solved) under the time policy (`policies`). `greedy` is the
        hint (None: cold solves); with `hint`, each re-solve is hinted with the best plan so far."""
        return self.timing.run(self, built, greedy)

    def solve_once(
        self, built: BuiltModel, hint: Plan | None, wall: float, dtime: float, quick: bool = False,
        conflicts: int = 0,
    ) -> tuple[Any, Plan | None]:
        """One CP-SAT solve from `hint` (`solve.solve`) with the dispatcher's solver options;
        returns the status and the best plan found."""
        status, plan, capped = solve(built, hint, SolveLimits(wall, dtime, quick, conflicts), workers=self.workers,
                                     seed=self.seed, det_wall_cap=self.det_wall_cap,
                                     fixed_search=self.search in ("fixed", "dive"))
        self._capped = self._capped or capped
        return status, plan
