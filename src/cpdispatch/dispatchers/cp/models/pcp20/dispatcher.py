"""The pcp20 dispatcher: the CP front end with PCP'20's model (`model`) and its second stage
(`second_stage`), registered under its name."""

from __future__ import annotations

import time
from typing import Any

from .....allocators import placement_cannot_matter
from .....errors import CpdispatchError
from .....snapshot import PlacementReport, QueuedJob, Snapshot, Start
from ....base import registered
from ...built import BuiltModel
from ...frontend import CpDispatcher
from ...instance import Instance
from ...objectives import SLOWDOWN
from ...option_sets import cp_options
from ...options import options_of
from ...options import values as family_value
from ...outcome import Ready
from ...policies import SolveLimits
from .model import Pcp20Model
from .options import Pcp20Options
from .relaxed_start import relaxed_start
from .second_stage import SecondStage


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
    goal = SLOWDOWN
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
        self.model_options = family_value(Pcp20Options, self)
        self._stage2 = SecondStage(
            self.stage2, SolveLimits(self.initial_limit, self.stage2_budget, True, self.fast_conflicts),
            self.reductions, self.goal, instance=self.instance, build=self.build, solve=self.solve_once)

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
        # said without ordering the queue: under the reductions, each type of such jobs stays fluid
        if self.reductions and placement_cannot_matter([q.job for q in snapshot.queued]):
            return PlacementReport("fluid", (time.perf_counter() - t0) * 1e3, None, 0)
        self._alloc.observe(snapshot)
        return self._stage2(snapshot, self.order(snapshot), starts)[1]

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
        found = relaxed_start(self, inst, self.goal, greedy,
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
        return Pcp20Model(instance, self.goal, self.model_options, post=False)
