"""PCP'19 (CP 2019 paper, Sect. 2.2-4; reference notes 2.1-2.5, 2.9) and its ablation PCP, PCP1-3:
scheduling and per-node allocation in one CP-SAT model, `model.PerNodeModel` (its layouts and
constraints are described there; it is also the model of the 2014 Eurora dispatcher, `eurora14`).

Dispatchers (only these differ, reference notes 2.1):

* `pcp` — every queued job (queue order, `q_length` huge), full node capacity, EWT tardiness, no
  clamp; `time_policy=paper`: 60 s, and 120 s more when the best plan starts nothing now.
* `pcp1` — fit-now selection of up to 100 jobs, EWT priority and tardiness objective, no clamp;
  `time_policy=paper`: 1 -> 16 s doubling, stop on optimum or k = 2 equal values.
* `pcp2` — pcp1 plus the underestimation fix (durations and remaining times >= 1).
* `pcp3` = `pcp19` — slowdown priority and objective.
"""

from __future__ import annotations

from ....base import registered
from ...built import BuiltModel
from ...frontend import CpDispatcher
from ...instance import Instance
from ...objectives import SLOWDOWN, TARDINESS
from ...option_sets import cp_options
from ...options import PerNode, options_of
from .model import PerNodeModel

# -- dispatchers ---------------------------------------------------------------------------------

class PerNodeDispatcher(CpDispatcher, PerNode):
    """CP'19 PCP family: the front end with `PerNodeModel`. `free_now` (option) restricts queued
    jobs to the nodes with room now (PCP1-3, the original); false lets plans use every node.
    `layout=units` builds the paper's model instead of the counts (same plans, larger model).

    A selected job that cannot start now (a `blocked` one, or one of the base version's queue
    order) is planned over every node at full capacity, even under `free_now`, whose restriction
    would leave it no node (`PerNodeModel`'s `plan_blocked`): the original left such a job out of
    the model, which its fit-now selection never passed, and here the solver's plan would then miss
    a job that the greedy plan and the objective count. It still cannot start now."""

    goal = TARDINESS
    options = cp_options(clamp=False, priority="ewt") + options_of(PerNode)

    def build(self, instance: Instance) -> BuiltModel:
        return PerNodeModel(instance, self.goal, free_now=self.free_now, redundant=self.redundant,
                            layout=self.layout, plan_blocked=True)


@registered()
class Pcp(PerNodeDispatcher):
    name = "pcp"
    summary = "PCP base (CP'19 ablation): every queued job, full node capacity, EWT tardiness, no clamp"
    selection = "queue"
    options = cp_options(fit_now=False, q_length=1_000_000_000, clamp=False, priority="ewt", paper_policy="pcp-base",
                         paper={"search": "portfolio"}) + options_of(
        PerNode, free_now=False)


@registered()
class Pcp1(PerNodeDispatcher):
    name = "pcp1"
    summary = "PCP1: fit-now selection (q_length 100), EWT priority and tardiness, no clamp"
    options = cp_options(clamp=False, priority="ewt", paper={"search": "portfolio"}) + options_of(PerNode)


@registered()
class Pcp2(PerNodeDispatcher):
    name = "pcp2"
    summary = "PCP2: PCP1 plus the underestimation fix (durations and remaining times >= 1)"
    options = cp_options(clamp=True, priority="ewt", paper={"search": "portfolio"}) + options_of(PerNode)


@registered("pcp19")
class Pcp3(PerNodeDispatcher):
    name = "pcp3"
    summary = "PCP'19 (= PCP3): slowdown priority and objective, per-node allocation in CP"
    goal = SLOWDOWN
    options = cp_options(clamp=True, priority="slowdown") + options_of(PerNode)

