"""The pcp20 dispatcher: the CP front end with PCP'20's model (`model`) and its second stage
(`second_stage`), registered under its name."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ....allocators import placement_cannot_matter
from ....errors import CpdispatchError
from ....job import Job
from ....snapshot import PlacementReport, QueuedJob, Snapshot, Start
from ...base import registered
from ..built import BuiltModel
from ..frontend import CpDispatcher
from ..instance import Instance
from ..option_sets import cp_options
from ..options import family, option, options_of
from ..outcome import Ready
from ..policies import SolveLimits
from .model import Pcp20Model
from .relaxed_start import relaxed_start
from .second_stage import SecondStage


@family
class Pcp20Options:
    """pcp20's own: the paper's tie-break, the model's variants and size guards, the second stage."""

    # Sect. 3: all different positions per job, and the implied cumulative per type
    all_different: bool = option(False, "the paper's all-different on unit positions instead of ordered units",
                                 paper=True)
    implied_cumulative: bool = option(True, "post the implied cumulative per resource type", paper=True)
    sparse_domains: bool = option(False, "exact no-straddling domains on positions (redundant; slower presolve)",
                                  paper=False)
    # the paper's model: no dropped, folded or fluid types, and no size guard
    reductions: bool = option(True, "exact reductions: drop types that cannot bind; a cumulative instead of a "
                                    "NoOverlap2D on 1-unit types (false: the paper's model)", paper=False)
    max_units: int = option(128, "most units with positions in a model, else the greedy plan (0: no limit)",
                            paper=0)
    max_running_boxes: int = option(0, "most fixed running boxes in a model, else the greedy plan (0: no limit)",
                                    paper=0)
    hint_replay: bool = option(True, "on models of fluid types only, CP-SAT follows the hint before its search "
                                     "(its default; with boxes it never does). false: faster on congested "
                                     "HPC2N, slightly longer waits of its short jobs (docs/pcp20-notes.md)")
    # the second stage is ours, and so is the relaxation's starting plan
    stage2: int = option(4, "second stage: re-place the jobs starting now, in a model with this many of the "
                            "queued jobs that do not start, when that lets one start earlier (0: off)", paper=0)
    stage2_budget: float = option(0.005, "second stage: CP-SAT deterministic-time budget per solve (two at most)")
    relaxed_start: float = option(0.005, "when the model places units or is over its size guard: first solve "
                                         "HCP's relaxation (one cumulative per type on the totals) for this "
                                         "deterministic time, shift its plan onto the nodes and start from it if "
                                         "better than the greedy plan (0: off)", paper=0.0)


@registered()
class Pcp20Dispatcher(CpDispatcher, Pcp20Options):
    """PCP'20: fit-now selection of up to `q_length` jobs, slowdown priority (the paper's tie-break
    on shorter duration is the option `duration_tiebreak`), total slowdown objective, the model
    of `model`; `time_policy=paper` is the PCP'20 wrapper's (1 s, then 0.5-s extensions while no
    solution, halving the queue length on failure)."""

    name = "pcp20"
    summary = ("PCP'20: joint scheduling and allocation, one NoOverlap2D per resource type (size independent "
               "of nodes); with the default reductions a type whose units all need 1 of it (every "
               "single-type SWF trace) gets a cumulative instead, nodes chosen after solving")
    objective_kind = "slowdown"
    #: a tenth of the other CP dispatchers' fast budget, and as good (docs/pcp20-notes.md); the
    #: paper's priority (-slowdown, d, area) (notes 3.2 step 2), time policy and search
    options = (cp_options(clamp=True, priority="slowdown", reallocate=True, fast_budget=0.0005,
                          paper_policy="pcp20", searches=("dive",),
                          paper={"duration_tiebreak": True, "search": "dive"})
               + options_of(Pcp20Options))

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        if self.stage2 < 0 or self.stage2_budget <= 0 or self.relaxed_start < 0:
            raise CpdispatchError(f"dispatcher {self.name}: stage2 and relaxed_start must be >= 0 and "
                                  "stage2_budget > 0")
        self._stage2 = SecondStage(self, self.stage2, self.stage2_budget, self.fast_conflicts, self.reductions)

    def refine(
        self, snapshot: Snapshot, ordered: list[QueuedJob], starts: tuple[Start, ...]
    ) -> tuple[tuple[Start, ...], PlacementReport | None]:
        if not self.stage2:
            return starts, None
        return self._stage2(snapshot, ordered, starts)

    def placement_room(self, snapshot: Snapshot, starts: tuple[Start, ...]) -> PlacementReport:
        """Whether the second stage would move `starts` (decided by any dispatcher) so that one of
        the queued jobs starts earlier; nothing is enacted (the simulator's room probe)."""
        t0 = time.perf_counter()
        if self.placement_never_matters([q.job for q in snapshot.queued]):
            return PlacementReport("fluid", (time.perf_counter() - t0) * 1e3, None, 0)
        self._alloc.observe(snapshot)
        return self._stage2(snapshot, self.order(snapshot), starts)[1]

    def placement_never_matters(self, jobs: Sequence[Job]) -> bool:
        """Whether the second stage answers "fluid" for any starts among `jobs` and any queue of
        them (said without ordering a queue): under the default reductions, each type stays fluid
        in any subset of such jobs, and no fold or dominance can make a request ask more."""
        return self.reductions and placement_cannot_matter(jobs)

    def ready(self, inst: Instance) -> Ready:
        """The greedy plan, or the shifted relaxation's plan when the model places units (or is
        over its size guard) and that plan is better (`relaxed_start`)."""
        ready = super().ready(inst)
        greedy, value = ready.greedy, ready.value
        if self.relaxed_start <= 0 or greedy is None or value is None or not any(greedy.starts.values()):
            return ready
        if not (ready.too_large or (isinstance(ready.built, Pcp20Model) and ready.built.places_units)):
            return ready
        wall = 0.0 if self.deterministic_time > 0 else self.initial_limit  # the fast policy's safety cap
        found = relaxed_start(self, inst, self.objective_kind, greedy,
                              SolveLimits(wall, self.relaxed_start, True, self.fast_conflicts))
        if found is not None and found.value <= value:  # as good: the greedy plan is optimal too if proven
            if found.value < value:
                ready.greedy, ready.value = found.plan, found.value
            ready.proven = found.proven
        return ready

    def build(self, instance: Instance) -> BuiltModel:
        built = self.prepare(instance)
        built.post()
        return built

    def prepare(self, instance: Instance) -> BuiltModel:
        return Pcp20Model(
            instance, self.objective_kind,
            all_different=self.all_different, implied_cumulative=self.implied_cumulative,
            sparse_domains=self.sparse_domains, fluid=self.reductions, drop_dominated=self.reductions,
            max_units=self.max_units, max_running_boxes=self.max_running_boxes, hint_replay=self.hint_replay,
            post=False,
        )
