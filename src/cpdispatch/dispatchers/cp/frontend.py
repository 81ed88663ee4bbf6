"""The front end shared by every CP dispatcher (reference notes 2.2, 2.3, 3.2).

One decision: sort the queue by priority; start the whole queue at once if it fits now (fast
path); otherwise select up to `cur_q_length` jobs that fit in the current free amounts, build an
`Instance` (times relative to now, durations clamped to >= 1 unless the ablation says not),
plan them greedily, let CP-SAT improve on that plan under a time policy (`policies`), keep
whichever of the two is better, and start the jobs planned at 0 after checking them against the
free amounts (`fitting`). `skip_solver` is the one place that decides not to solve; every way a
decision is reached has its own `Status`.

A subclass builds the model (`build`) and names its objective; class attributes say which
version it is (selection, what `time_policy=paper` and `search=paper` mean); it may replace the
solve (`optimise`: eurora14's phases) or add a second stage (`refine`: pcp20). Its options are
option families (`options`, `policies`) mixed into the class.

Left out on purpose: the CP'19 "dispatch skip" (notes 2.2 step 1). Between two calls with the
same queue and free amounts, time moves on: waits, priorities, EWT tardiness and the running
jobs' remaining times change, so the model and its optimum can change; skipping would change
decisions. The only skip kept is the exact one: no job fits now, so nothing can start.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ...allocators import get_allocator
from ...errors import CpdispatchError
from ...job import Job
from ...snapshot import Decision, PlacementReport, QueuedJob, Snapshot, Start
from ..base import Dispatcher, Option, Paper
from ..ewt import parse_ewt
from .built import BuiltModel, ModelTooLarge
from .fitting import eligible, extract_starts, fast_path, take
from .greedy import greedy_plan, left_shifted, plan_objective
from .instance import CpJob, CpRunning, Instance, Plan
from .options import SEARCHES, FitNow, FrontEnd, options_of
from .policies import POLICIES, FastOptions, Limits, Result, SolveLimits, policy_families
from .profiles import apply_profile
from .solve import solve
from .status import Status, with_suffixes

__all__ = ["CpDispatcher", "Outcome", "Ready", "cp_options", "eligible", "extract_starts", "fast_path", "take"]

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


@dataclass
class Ready:
    """What a solve starts from: the instance, its model (None: over the size guard, `too_large`,
    or built by the subclass's own `optimise`), the starting plan (None: nothing uses it, or no
    job order fits) and its objective value. The starting plan is the greedy plan unless a
    subclass has a better one (pcp20's shifted relaxation), which may be `proven` optimal."""

    inst: Instance
    built: BuiltModel | None
    greedy: Plan | None
    value: int | None
    too_large: bool = False
    proven: bool = False


@dataclass
class Outcome:
    """What a decision enacts: the plan (or the fast path's `starts`), its status and objective,
    whether the run counts as solved (for the queue length; None: no solve was tried, the length
    stays), the model (for its size) and the instance."""

    plan: Plan | None
    status: Status
    objective: int | None
    solved: bool | None
    built: BuiltModel | None = None
    inst: Instance | None = None
    starts: tuple[Start, ...] | None = None


class CpDispatcher(Dispatcher, FrontEnd, FitNow, Limits, FastOptions):
    """Base of every CP dispatcher. Subclasses set `objective_kind` and implement `build`.

    Class attributes that say which version it is (not options): `selection` "fit-now" (CP'19
    versions, PCP'20) or "queue" (HCP and PCP base, eurora14: the first jobs in queue order,
    fitting or not); `postpone_rest` (HCP base: the rest of the queue stays in the model, fixed at
    the end of the horizon). What the version's paper sets is in its options (`cp_options`).
    """

    objective_kind: ClassVar[str] = "slowdown"
    selection: ClassVar[str] = "fit-now"
    postpone_rest: ClassVar[bool] = False
    options = cp_options()

    def __init__(self, **values: Any) -> None:
        known = {o.name: o for o in self.options}
        if set(values) <= set(known):  # an unknown option is the base class's error
            # `paper` as a value of an option is the option's paper value (time_policy, search)
            values = {k: known[k].paper if v == "paper" and "paper" in known[k].choices
                      and not isinstance(known[k].paper, Paper) else v for k, v in values.items()}
            try:
                values = apply_profile(self.options, values)
            except ValueError as exc:
                raise CpdispatchError(f"dispatcher {self.name}: {exc}") from None
        super().__init__(**values)
        problem = self.check({**{k: o.default for k, o in known.items()}, **values})
        if problem:
            raise CpdispatchError(f"dispatcher {self.name}: {problem}")
        self._capped = False  # a solve of the current decision was stopped by det_wall_cap
        self._alloc = get_allocator(self.allocator)
        self._ewt = parse_ewt(self.ewt)
        self._max_ewt = max(self._ewt.values())
        self.cur_q_length = self.q_length
        self.timing = POLICIES[self.time_policy](self)

    def check(self, v: Mapping[str, Any]) -> str | None:
        """What is wrong with the option values `v`, if anything (beyond their `choices`). Read
        from the mapping, not the attributes: checking an option is not using it
        (`tests/test_cp_options.py`)."""
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

    @abstractmethod
    def build(self, instance: Instance) -> BuiltModel:
        """The CP-SAT model of `instance` (jobs in priority order)."""

    def prepare(self, instance: Instance) -> BuiltModel | None:
        """`build`, except that the model may post its variables only at `BuiltModel.post`; None
        when `optimise` builds its own models."""
        return self.build(instance)

    @property
    def weighs_jobs(self) -> bool:
        return self.objective_kind != "makespan"

    def plan_value(self, inst: Instance, plan: Plan) -> int:
        """The objective value of `plan`, as the model computes it."""
        return plan_objective(self.objective_kind, inst, plan)

    # -- priorities and selection -------------------------------------------------------------

    def ewt_of(self, job: Job) -> int:
        return self._ewt.get(job.queue, self._ewt["default"])

    def priority_key(self, now: int) -> Callable[[QueuedJob], tuple[float, ...]]:
        """The sort key at time `now`, smaller first: (-priority, [duration,] area); ties then keep
        queue order. The priority is the job's marginal cost of waiting, so its weight multiplies
        it. (One closure per decision: the key runs for every queued job at every decision.)"""
        kind, tiebreak, max_ewt, ewt_of = self.priority, self.duration_tiebreak, self._max_ewt, self.ewt_of

        def key(q: QueuedJob) -> tuple[float, ...]:
            job, d = q.job, q.predicted
            wait = now - job.submit
            area = d * job.units * sum(job.req)
            if kind == "slowdown":
                first = -(wait + d) / d if d > 0 else -float(max(1, wait))
            elif kind == "ewt":
                first = -(max_ewt * (wait + 1)) / ewt_of(job)
            else:  # the shipped precedence: -(max_ewt * now - submit + 1) / ewt
                first = -(max_ewt * now - job.submit + 1) / ewt_of(job)
            first *= q.weight
            return (first, d, area) if tiebreak else (first, area)

        return key

    def order(self, snapshot: Snapshot) -> list[QueuedJob]:
        return sorted(snapshot.queued, key=self.priority_key(snapshot.time))

    def select(self, snapshot: Snapshot, ordered: list[QueuedJob]) -> list[QueuedJob]:
        """The model's jobs, in priority order: with fit-now selection, up to `cur_q_length` jobs
        that fit now, then the first `blocked` that do not (none when no job fits now)."""
        m = self.cur_q_length
        if self.selection == "queue":
            first = {q.job.id for q in snapshot.queued[:m]}
            return [q for q in ordered if q.job.id in first]
        out: list[QueuedJob] = []
        waiting = self.blocked
        ok = eligible(snapshot.free, [q.job for q in ordered])
        fitting = 0
        for q, fits in zip(ordered, ok):
            if fits and fitting < m:
                fitting += 1
                out.append(q)
            elif not fits and waiting > 0:
                waiting -= 1
                out.append(q)
            if fitting == m and waiting == 0:
                break
        return out if fitting else []

    @property
    def models_blocked_jobs(self) -> bool:
        """Whether the model holds jobs that cannot start now (its placement accounts for them)."""
        return self.selection == "fit-now" and self.blocked > 0

    def instance(self, snapshot: Snapshot, selected: list[QueuedJob]) -> Instance:
        now = snapshot.time

        def clamp(x: int) -> int:
            return max(1, x) if self.clamp else x

        def cp_job(q: QueuedJob) -> CpJob:
            return CpJob(q.job.id, q.job.units, q.job.req, clamp(q.predicted), now - q.job.submit,
                         self.ewt_of(q.job), q.job.queue, q.job.one_per_node, q.weight)

        jobs = tuple(cp_job(q) for q in selected)
        chosen = {j.id for j in jobs}
        postponed = tuple(cp_job(q) for q in snapshot.queued if q.job.id not in chosen) if self.postpone_rest else ()
        running = tuple(
            CpRunning(r.job.id, r.job.units, r.job.req, clamp(r.predicted_end - now), r.alloc, now - r.start)
            for r in snapshot.running
        )
        horizon = max(1, sum(r.remaining for r in running) + sum(j.duration for j in jobs + postponed))
        return Instance(now, snapshot.system, jobs, running, snapshot.free, horizon, self._alloc.weights, postponed)

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
