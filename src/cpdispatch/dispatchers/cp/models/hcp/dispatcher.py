"""HCP'19 and its ablation (CP 2019 paper, Sect. 2.2-4; reference notes 2.6-2.7).

Hybrid: CP-SAT schedules the jobs against each resource type's system total (one cumulative per
type, node boundaries ignored), then the jobs planned at 0 are placed by best fit in priority
order, skipping those the nodes cannot hold (they wait for the next call).

Versions (only these differ): `hcp` — the first m jobs in queue order, the rest of the queue kept
in the model but fixed at the end of the horizon (s = eoh - d: when their total demand exceeds a
type's capacity the model is infeasible and, with `fallback=false`, nothing starts: the failure
mode version 1 fixes by leaving them out), EWT-weighted waiting, no clamp, the time limit doubled
only while no solution (`time_policy=paper`); `hcp1` — fit-now
selection, EWT priority, no clamp; `hcp2` — plus the clamp; `hcp3` = `hcp19` — slowdown priority
and objective.
"""

from __future__ import annotations

from ....base import registered
from ...built import BuiltModel
from ...frontend import CpDispatcher
from ...instance import Instance
from ...objectives import EWT_WAIT, SLOWDOWN
from ...option_sets import cp_options
from .model import HcpModel


class _Hcp(CpDispatcher):
    goal = EWT_WAIT

    def build(self, instance: Instance) -> BuiltModel:
        return HcpModel(instance, self.goal)


@registered()
class Hcp(_Hcp):
    name = "hcp"
    summary = "HCP base (CP'19 ablation): first jobs in queue order, EWT waiting, no clamp"
    selection = "queue"
    postpone_rest = True
    options = cp_options(fit_now=False, clamp=False, priority="ewt", ewt="default=1800", paper_policy="doubling")


@registered()
class Hcp1(_Hcp):
    name = "hcp1"
    summary = "HCP1: fit-now selection, EWT priority and waiting objective, no clamp"
    options = cp_options(clamp=False, priority="ewt")


@registered()
class Hcp2(_Hcp):
    name = "hcp2"
    summary = "HCP2: HCP1 plus the underestimation fix (durations >= 1)"
    options = cp_options(clamp=True, priority="ewt")


@registered("hcp19")
class Hcp3(_Hcp):
    name = "hcp3"
    summary = "HCP'19 (= HCP3): slowdown priority and objective, cumulative on totals, best-fit allocation"
    goal = SLOWDOWN
    options = cp_options(clamp=True, priority="slowdown")
