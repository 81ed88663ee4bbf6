"""The front end shared by every CP dispatcher (reference notes 2.2, 2.3, 3.2).

One decision: sort the queue by priority; start the whole queue at once if it fits now (fast
path); otherwise select up to `cur_q_length` jobs that fit in the current free amounts, build an
`Instance` (times relative to now, durations clamped to >= 1 unless the ablation says not),
plan them greedily, let CP-SAT improve on that plan under a time policy, keep whichever of the
two is better, and start the jobs planned at 0 after checking them against the free amounts.
Subclasses only say how to build the model (`build`) and which objective it minimises.

Time policies (the papers' are kept for reproduction; their wall limits make runs machine-dependent
and cost seconds per decision):
  cp19     limits 1, 2, 4, 8, 16 s; each re-solve is hinted with the best plan so far; stop on
           OPTIMAL, INFEASIBLE, or k equal best values; running out counts as "not solved" (the
           queue length is halved) only when no plan was found (the authors' code also halves
           after a plan that kept improving; CP'19 Sect. 2.2 restarts only "if no solution is found").
  pcp20    stop at the 1-s mark if a plan exists, else extend by 0.5 s up to `max_retries` times
           (each extension is a fresh hinted solve: CP-SAT cannot move a running solve's deadline).
  doubling the HCP base: 1 s, doubled only while no plan, below 150 s.
  fast     (default) one solve of `fast_budget` deterministic seconds or `fast_conflicts`
           conflicts, whichever comes first, with quick restarts, and `initial_limit` wall seconds
           as a safety cap (reproducible unless the cap is hit); the greedy hint means there always
           is a plan. The conflict limit matters: CP-SAT under-counts deterministic time when it
           raises an objective bound by tiny steps (HPC2N: 5 ms deterministic took 160 ms).
`deterministic_time` > 0 replaces every policy's wall limits by deterministic ones: the value stands
for `initial_limit` seconds (1 s, the first limit of the CP'19 and PCP'20 policies) and every limit
scales alike (PCP base's 60 s become 60 times it), for runs that are reproducible across machines.

Left out on purpose: the CP'19 "dispatch skip" (notes 2.2 step 1). Between two calls with the
same queue and free amounts, time moves on: waits, priorities, EWT tardiness and the running
jobs' remaining times change, so the model and its optimum can change; skipping would change
decisions. The only skip kept is the exact one: no job fits now, so nothing can start.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from ortools.sat.python import cp_model

from ... import interrupt
from ...allocators import best_fit, get_allocator
from ...errors import CpdispatchError
from ...job import Job
from ...snapshot import Decision, PlacementReport, QueuedJob, Snapshot, Start
from ...system import units_fitting
from ..base import Dispatcher, Option
from ..ewt import EWT_PRESETS, parse_ewt
from .greedy import greedy_plan, plan_objective
from .instance import BuiltModel, CpJob, CpRunning, Instance, ModelTooLarge, Plan
from .profiles import apply_profile

PRIORITIES = ("slowdown", "ewt", "ewt-shipped")
POLICIES = ("fast", "paper", "cp19", "pcp20", "doubling")
SEARCHES = ("portfolio", "fixed", "paper")
#: CP'20 code: extend the search by 0.5 s while no solution; HCP base: double below 150 s.
PCP20_EXTENSION = 0.5
DOUBLING_CAP = 150.0

_SPECS: tuple[tuple[str, Any, str], ...] = (
    ("q_length", 100, "most jobs in a model; halved after an unsolved run (min 1), reset on success"),
    ("clamp", True, "underestimation fix: durations and remaining times >= 1 (false: versions 1)"),
    ("priority", "slowdown", "slowdown | ewt | ewt-shipped (the CP'19 code's precedence slip)"),
    ("ewt", "default=1600", "expected waiting time per queue 'queue=s,...,default=s', or 'eurora'"),
    ("time_policy", "fast", "fast | paper (the version's own) | cp19 | pcp20 | doubling (HCP base)"),
    ("fast_budget", 0.005, "fast policy: CP-SAT deterministic-time budget per decision"),
    ("fast_conflicts", 300, "fast policy: also stop after this many conflicts (0: no limit; deterministic)"),
    ("initial_limit", 1.0, "first time limit in seconds (cp19, pcp20, doubling); wall cap of fast"),
    ("max_limit", 16.0, "cp19: largest time limit in seconds"),
    ("max_retries", 4, "pcp20: 0.5-s extensions while no solution"),
    ("k", 2, "cp19: stop after k equal objective values"),
    ("workers", 1, "CP-SAT workers (1 = deterministic)"),
    ("seed", 0, "CP-SAT random seed"),
    ("deterministic_time", 0.0, "> 0: deterministic-time limits instead of wall limits (the value stands for "
                                "initial_limit seconds; every limit scales alike)"),
    ("det_wall_cap", 0.0, "with deterministic_time: a solve also stops after this many times its deterministic "
                          "limit in wall seconds (0: never; CP-SAT under-counts deterministic time on some "
                          "models); a decision so stopped gets the status suffix ':capped'"),
    ("fastpath", True, "start the whole queue without a model when it fits now"),
    ("search", "portfolio", "portfolio (CP-SAT default, greedy hint) | fixed (model's strategy) | paper "
                            "(the version's own: the solver's default for PCP, PCP1, PCP2, else fixed)"),
    ("fallback", True, "start the greedy plan when the solver finds none (false: start nothing, as the "
                       "papers' dispatchers)"),
    ("allocator", "scarce-fit", "allocation outside the model (fast path, greedy plan, HCP): "
                                "scarce-fit or best-fit (the papers')"),
    ("reallocate", False, "enact the demand-aware allocation of the jobs the model starts now when it "
                          "places them all (the model's objective does not see scarcity); not with blocked"),
    ("blocked", 0, "also model the first N queued jobs (priority order) that cannot start now, as "
                   "future starts, so that an allocation that delays them costs in the objective"),
    ("hint", True, "give CP-SAT the greedy plan (and each re-solve the best plan so far) as a hint (false: "
                   "the papers' cold solves)"),
    ("shortcut", True, "skip the solver when the greedy plan starts every selected job now"),
    ("limit_scale", 1.0, "paper time policies: multiply every time limit (e.g. 0.1 for a faster machine "
                         "and solver than the papers' OR-Tools 7.3)"),
    ("profile", "default", "default (ours) | paper: set every option as the dispatcher's paper does "
                           "(`cpdispatch dispatchers` lists them and the few that stay free)"),
)


def cp_options(**defaults: Any) -> tuple[Option, ...]:
    """The front end's options with per-version defaults (e.g. `clamp=False` for version 1)."""
    names = {name for name, _, _ in _SPECS}
    unknown = sorted(set(defaults) - names)
    if unknown:
        raise ValueError(f"unknown CP options {unknown}")
    return tuple(Option(name, defaults.get(name, default), text) for name, default, text in _SPECS)


def resolve_ewt(text: str) -> str:
    """Expand the 'eurora' preset (shared with the PBS dispatcher's parser)."""
    return EWT_PRESETS.get(text.strip(), text)


@dataclass
class Outcome:
    """What the solve produced: the plan to enact, its status and objective, whether the run
    counts as solved (for the queue length; None: no solve was tried, the length stays), and the
    model (for its size)."""

    plan: Plan | None
    status: str
    objective: int | None
    solved: bool | None
    built: BuiltModel | None = None


class _Collector(cp_model.CpSolverSolutionCallback):
    """Keeps the latest (= best, when minimising) solution as a plan."""

    def __init__(self, built: BuiltModel) -> None:
        super().__init__()
        self.built = built
        self.plan: Plan | None = None

    def on_solution_callback(self) -> None:
        self.plan = self.built.extract(self)


class CpDispatcher(Dispatcher):
    """Base of every CP dispatcher. Subclasses set `objective_kind` and implement `build`.

    Class switches for the versions: `selection` "fit-now" (CP'19 versions, PCP'20) or "queue"
    (HCP base: the first jobs in queue order, fitting or not); `postpone_rest` (HCP base: the
    rest of the queue stays in the model, fixed at the end of the horizon); `duration_tiebreak`
    (PCP'20's shorter-duration tie-break before area); `paper_policy` (what time_policy=paper
    means); `paper_search` (what search=paper means: CP'19 Sect. 5, PCP to PCP2 use the solver's
    default search, every other version the custom one).
    """

    objective_kind: ClassVar[str] = "slowdown"
    selection: ClassVar[str] = "fit-now"
    postpone_rest: ClassVar[bool] = False
    paper_search: ClassVar[str] = "fixed"
    duration_tiebreak: ClassVar[bool] = False
    paper_policy: ClassVar[str] = "cp19"
    options = cp_options()

    q_length: int
    clamp: bool
    priority: str
    ewt: str
    time_policy: str
    fast_budget: float
    fast_conflicts: int
    initial_limit: float
    max_limit: float
    max_retries: int
    k: int
    workers: int
    seed: int
    deterministic_time: float
    det_wall_cap: float
    fastpath: bool
    search: str
    fallback: bool
    allocator: str
    reallocate: bool
    blocked: int
    hint: bool
    shortcut: bool
    limit_scale: float
    profile: str

    def __init__(self, **values: Any) -> None:
        defaults = {o.name: o.default for o in self.options}
        if set(values) <= set(defaults):  # an unknown option is the base class's error
            try:
                values = apply_profile(type(self).name, defaults, values)
            except ValueError as exc:
                raise CpdispatchError(f"dispatcher {self.name}: {exc}") from None
        super().__init__(**values)
        for opt, allowed in (("priority", PRIORITIES), ("time_policy", POLICIES), ("search", SEARCHES)):
            if getattr(self, opt) not in allowed:
                raise CpdispatchError(f"dispatcher {self.name}: {opt} must be one of {', '.join(allowed)}")
        if self.q_length < 1 or self.k < 1 or self.workers < 1 or self.initial_limit <= 0:
            raise CpdispatchError(f"dispatcher {self.name}: q_length, k, workers, initial_limit must be > 0")
        if self.det_wall_cap < 0:
            raise CpdispatchError(f"dispatcher {self.name}: det_wall_cap must be >= 0")
        self._capped = False  # a solve of the current decision was stopped by det_wall_cap
        if self.allocator not in ("best-fit", "scarce-fit"):
            raise CpdispatchError(f"dispatcher {self.name}: allocator must be best-fit or scarce-fit")
        if self.blocked < 0:
            raise CpdispatchError(f"dispatcher {self.name}: blocked must be >= 0")
        if not self.limit_scale > 0:
            raise CpdispatchError(f"dispatcher {self.name}: limit_scale must be > 0")
        if self.limit_scale != 1.0 and self.time_policy == "fast":
            raise CpdispatchError(f"dispatcher {self.name}: limit_scale scales the papers' time policies; "
                                  "the fast policy has fast_budget and fast_conflicts")
        self._alloc = get_allocator(self.allocator)
        self._ewt = parse_ewt(resolve_ewt(self.ewt))
        self._max_ewt = max(self._ewt.values())
        self.cur_q_length = self.q_length
        self.policy = self.paper_policy if self.time_policy == "paper" else self.time_policy
        self.search_kind = self.paper_search if self.search == "paper" else self.search

    @abstractmethod
    def build(self, instance: Instance) -> BuiltModel:
        """The CP-SAT model of `instance` (jobs in priority order)."""

    def prepare(self, instance: Instance) -> BuiltModel:
        """`build`, except that the model may post its variables only at `BuiltModel.post`."""
        return self.build(instance)

    @property
    def weighs_jobs(self) -> bool:
        return self.objective_kind != "makespan"

    # -- priorities and selection -------------------------------------------------------------

    def ewt_of(self, job: Job) -> int:
        return self._ewt.get(job.queue, self._ewt["default"])

    def priority_key(self, q: QueuedJob, now: int) -> tuple[float, ...]:
        """Sort key, smaller first: (-priority, [duration,] area); ties then keep queue order. The
        priority is the job's marginal cost of waiting, so its weight multiplies it."""
        job, d = q.job, q.predicted
        wait = now - job.submit
        area = d * sum(job.units * a for a in job.req)
        if self.priority == "slowdown":
            first = -(wait + d) / d if d > 0 else -float(max(1, wait))
        elif self.priority == "ewt":
            first = -(self._max_ewt * (wait + 1)) / self.ewt_of(job)
        else:  # the shipped precedence: -(max_ewt * now - submit + 1) / ewt
            first = -(self._max_ewt * now - job.submit + 1) / self.ewt_of(job)
        first *= q.weight
        return (first, d, area) if self.duration_tiebreak else (first, area)

    def order(self, snapshot: Snapshot) -> list[QueuedJob]:
        now = snapshot.time
        return sorted(snapshot.queued, key=lambda q: self.priority_key(q, now))

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
        if self.fastpath:
            starts = fast_path(snapshot, ordered, self._alloc.weights)
            if starts is not None:
                self.cur_q_length = self.q_length
                return Decision(starts=starts, status="fastpath")
        selected = self.select(snapshot, ordered)
        if not selected:
            return Decision(status="empty")
        inst = self.instance(snapshot, selected)
        self._capped = False
        out = self.optimise(inst)
        if self._capped:
            out.status += ":capped"
        if out.solved:
            self.cur_q_length = self.q_length
        elif out.solved is None:  # no solve was tried: the length stays
            pass
        elif self.policy == "pcp20":  # the PCP'20 wrapper halves the number of planned jobs
            self.cur_q_length = max(1, min(self.cur_q_length, len(selected)) // 2)
        else:
            self.cur_q_length = max(1, self.cur_q_length // 2)
        built = out.built
        variables = built.variables if built is not None else None
        constraints = built.constraints if built is not None else None
        if out.plan is None:
            return Decision(status=out.status, variables=variables, constraints=constraints)
        # with blocked jobs in the model, its placement accounts for them: keep it
        starts, dropped = extract_starts(snapshot, inst, out.plan, self.reallocate and not self.blocked)
        starts, stage2 = self.refine(snapshot, ordered, starts)
        status = out.status if not dropped else f"{out.status}:dropped={dropped}"
        later = {j: inst.time + s for j, s in out.plan.starts.items() if s > 0}
        return Decision(
            starts=starts, status=status, variables=variables, constraints=constraints,
            objective=float(out.objective) if out.objective is not None else None,
            plan=later, stage2=stage2,
        )

    def refine(
        self, snapshot: Snapshot, ordered: list[QueuedJob], starts: tuple[Start, ...]
    ) -> tuple[tuple[Start, ...], PlacementReport | None]:
        """A second stage that may move the jobs starting now to other nodes (never start others):
        none here; pcp20 has one."""
        return starts, None

    def optimise(self, inst: Instance) -> Outcome:
        """The greedy plan, improved by the solver when it can. Only the solver's own outcomes (no
        plan in time, infeasible) and the model's size guard lead to the greedy plan or the
        fallback; any other exception is a bug and propagates. The greedy plan is not even made
        when nothing uses it (`hint`, `shortcut` and `fallback` off: the papers' set-up)."""
        kind = self.objective_kind
        try:
            built: BuiltModel | None = self.prepare(inst)
        except ModelTooLarge:  # the model's own size guard: the greedy plan, no solve tried
            built = None
        greedy: Plan | None = None
        if built is None or self.hint or self.shortcut or self.fallback:
            try:
                greedy = built.greedy_plan(until=0) if built is not None else greedy_plan(inst)
            except ValueError:  # a job fits at no time (an inconsistent instance): the solver may cope
                greedy = None
        g_obj = plan_objective(kind, inst, greedy) if greedy is not None else None
        if self.shortcut and greedy is not None and not any(greedy.starts.values()) and not inst.postponed:
            # every job starts now: no objective can do better (all are monotone in the starts)
            return Outcome(greedy, "greedy", g_obj, True)
        if built is None:
            if greedy is None:
                return Outcome(None, "fallback", None, False)
            if not self.fallback:
                return Outcome(None, "unsolved:too-large", None, None)
            return Outcome(greedy, "greedy:too-large", g_obj, None)
        built.post()
        if self.search_kind == "fixed":
            built.add_search()
        best, optimal, solved = self.run_policy(built, greedy if self.hint else None)
        if best is None:
            if self.fallback:
                return Outcome(greedy, "fallback", g_obj, False, built)
            return Outcome(None, "unsolved", None, False, built)
        b_obj = plan_objective(kind, inst, best)
        if self.fallback and g_obj is not None and greedy is not None and g_obj < b_obj:
            return Outcome(greedy, "fallback", g_obj, solved, built)
        return Outcome(best, "optimal" if optimal else "feasible", b_obj, solved, built)

    # -- time policies --------------------------------------------------------------------------

    def fast_limits(self) -> tuple[float, float]:
        """(wall, deterministic) limits of the fast policy's one solve."""
        det = self.deterministic_time
        return (0.0, det) if det > 0 else (self.initial_limit, self.fast_budget)

    def solve_limits(self, seconds: float) -> tuple[float, float]:
        """(wall, deterministic) limits of a solve the paper gives `seconds`, times `limit_scale`;
        deterministic ones when `deterministic_time` > 0 (it stands for `initial_limit` seconds)."""
        scaled = seconds * self.limit_scale
        if self.deterministic_time > 0:
            return 0.0, self.deterministic_time * scaled / self.initial_limit
        return scaled, 0.0

    def run_policy(self, built: BuiltModel, greedy: Plan | None) -> tuple[Plan | None, bool, bool]:
        """(best plan, proven optimal, solved) under the selected time policy. `greedy` is the
        hint (None: cold solves); with `hint`, each re-solve is hinted with the best plan so far."""
        kind, inst = self.objective_kind, built.instance
        if self.policy == "fast":
            wall, dtime = self.fast_limits()
            status, plan = self.solve_once(built, greedy, wall, dtime, quick=True, conflicts=self.fast_conflicts)
            return plan, status == cp_model.OPTIMAL, plan is not None
        best: Plan | None = None
        best_obj: int | None = None
        values: list[int] = []
        seconds = self.initial_limit
        step = 0
        while True:
            status, plan = self.solve_once(built, (best or greedy) if self.hint else None, *self.solve_limits(seconds))
            if plan is not None:
                obj = plan_objective(kind, inst, plan)
                if best_obj is None or obj < best_obj:
                    best, best_obj = plan, obj
            if status == cp_model.OPTIMAL:
                return best, True, True
            if status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
                return best, False, False
            step += 1
            if self.policy == "cp19":
                if best_obj is not None:
                    values.append(best_obj)
                    if len(values) >= self.k and len(set(values[-self.k:])) == 1:
                        return best, False, True
                seconds *= 2
                if seconds > self.max_limit + 1e-9:  # out of time: unsolved only if nothing was found
                    return best, False, best is not None
            elif self.policy == "pcp20":
                if best is not None:
                    return best, False, True
                if step > self.max_retries:
                    return None, False, False
                seconds = PCP20_EXTENSION
            else:  # doubling (HCP base): only while no solution, below 150 s
                if best is not None:
                    return best, False, True
                seconds *= 2
                if seconds >= DOUBLING_CAP:
                    return None, False, False

    def solve_once(
        self, built: BuiltModel, hint: Plan | None, wall: float, dtime: float, quick: bool = False,
        conflicts: int = 0,
    ) -> tuple[Any, Plan | None]:
        """One CP-SAT solve from `hint`; returns the status and the best plan found. `quick`: the
        portfolio search restarts quickly (measured on HPC2N: within a tiny budget it finds nearly
        all the improvements over the hint that a 3-s solve finds; the default branching, lost in
        the huge start domains, finds few)."""
        built.model.clear_hints()
        if hint is not None:
            built.add_hint(hint)
        solver = cp_model.CpSolver()
        p = solver.parameters
        p.num_workers = self.workers
        p.random_seed = self.seed
        p.catch_sigint_signal = False  # Ctrl-C stops the run, not just this solve (see interrupt.py)
        if wall > 0:
            p.max_time_in_seconds = wall
        if interrupt.stopping():
            p.max_time_in_seconds = 0.0  # the run is stopping: return the hint at once
        cap = dtime * self.det_wall_cap if dtime > 0 else 0.0
        if dtime > 0:
            p.max_deterministic_time = dtime
            if cap > 0 and not interrupt.stopping():
                p.max_time_in_seconds = cap
        if conflicts > 0:
            p.max_number_of_conflicts = conflicts
        if hint is not None:
            # symmetry reductions in presolve may map the hinted point to an infeasible one
            # (identical nodes are interchangeable); keep the hint usable
            p.keep_symmetry_in_presolve = True
        for name, value in built.solver_parameters.items():
            setattr(p, name, value)
        if self.search_kind == "fixed":
            p.search_branching = cp_model.FIXED_SEARCH
        elif quick:
            p.search_branching = cp_model.PORTFOLIO_WITH_QUICK_RESTART_SEARCH
        cb = _Collector(built)
        with interrupt.solving(solver):
            status = solver.solve(built.model, cb)
        if cap > 0 and solver.wall_time >= cap and solver.deterministic_time < dtime:
            self._capped = True
        if cb.plan is None and status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            cb.plan = built.extract(solver)
        return status, None if cb.plan is None else built.complete(cb.plan, until=0)


# -- helpers shared with the model modules and tests ----------------------------------------------


def eligible(free: np.ndarray, jobs: list[Job]) -> list[bool]:
    """Fit-now test (notes 2.2 step 2): summed over nodes, the units fitting in the current free
    amounts reach the job's units. One numpy pass per distinct per-unit request."""
    totals = free.sum(axis=0).tolist()
    out = [all(j.units * a <= t for a, t in zip(j.req, totals)) for j in jobs]
    groups: dict[tuple[tuple[int, ...], bool], list[int]] = {}
    for i, j in enumerate(jobs):
        if out[i]:
            groups.setdefault((j.req, j.one_per_node), []).append(i)
    for (req, one), members in groups.items():
        units = np.array([jobs[i].units for i in members], dtype=np.int64)
        fit = np.sort(np.minimum(units_fitting(free, req, one), int(units.max())))
        cum = np.concatenate(([0], np.cumsum(fit)))
        below = np.searchsorted(fit, units, side="left")  # nodes where fewer than `units` fit
        room = cum[below] + units * (len(fit) - below)  # sum over nodes of min(fit, units)
        for i, r, u in zip(members, room.tolist(), units.tolist()):
            out[i] = r >= u
    return out


def fast_path(
    snapshot: Snapshot, ordered: list[QueuedJob], weights: np.ndarray | None = None
) -> tuple[Start, ...] | None:
    """Starts for the whole queue if every job fits now together (best fit in priority order,
    demand-aware with `weights`)."""
    need = [0] * len(snapshot.system.types)
    for q in ordered:
        for k, a in enumerate(q.job.req):
            need[k] += a * q.job.units
    if any(x > t for x, t in zip(need, snapshot.free.sum(axis=0).tolist())):
        return None
    work = np.array(snapshot.free, dtype=np.int64)
    cap = snapshot.system.capacity
    starts = []
    for q in ordered:
        nodes = best_fit(work, cap, q.job.req, q.job.units, weights, q.job.one_per_node)
        if nodes is None:
            return None
        starts.append(Start(q.job.id, nodes))
    return tuple(starts)


def take(work: np.ndarray, nodes: tuple[int, ...], job: CpJob) -> bool:
    """Subtract `job` on `nodes` from `work` if that is valid (right unit count, in range, fits)."""
    if len(nodes) != job.units:
        return False
    if not nodes:
        return True
    idx = np.asarray(nodes)
    if idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= work.shape[0]:
        return False
    uniq, counts = np.unique(idx, return_counts=True)
    if job.one_per_node and len(uniq) < len(idx):
        return False
    need = counts[:, None] * np.asarray(job.req, dtype=np.int64)
    if (work[uniq] < need).any():
        return False
    work[uniq] -= need
    return True


def extract_starts(
    snapshot: Snapshot, inst: Instance, plan: Plan, reallocate: bool = False
) -> tuple[tuple[Start, ...], int]:
    """Jobs planned at 0, in priority order: on the plan's nodes, checked against a working copy
    of the free amounts (invalid ones dropped and counted), or, when the plan has no nodes (HCP),
    placed by (demand-aware) best fit, skipping those that do not fit.

    `reallocate` (with scarcity weights): the model chose which jobs start now, but its objective
    is blind to where; if the demand-aware best fit places all of them, in priority order, its
    allocation is enacted instead of the model's."""
    cap = snapshot.system.capacity
    if reallocate and inst.weights is not None and plan.nodes:
        work = np.array(snapshot.free, dtype=np.int64)
        placed = []
        for job in inst.jobs:
            if plan.starts.get(job.id) == 0:
                got = best_fit(work, cap, job.req, job.units, inst.weights, job.one_per_node)
                if got is None:
                    break
                placed.append(Start(job.id, got))
        else:
            return tuple(placed), 0
    work = np.array(snapshot.free, dtype=np.int64)
    starts: list[Start] = []
    dropped = 0
    for job in inst.jobs:
        if plan.starts.get(job.id) != 0:
            continue
        nodes = plan.nodes.get(job.id)
        if nodes is None:
            got = best_fit(work, cap, job.req, job.units, inst.weights, job.one_per_node)
            if got is not None:
                starts.append(Start(job.id, got))
        elif take(work, tuple(nodes), job):
            starts.append(Start(job.id, tuple(int(n) for n in nodes)))
        else:
            dropped += 1
    return tuple(starts), dropped
