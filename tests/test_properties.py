"""Invariants of every dispatcher on random heterogeneous systems and workloads.

For each run: capacity never exceeded per node and type at any time, no start before
submission, the units of a one-per-node job on distinct nodes, every job completed/killed/rejected
(rejected ones with a reason), identical output for identical inputs.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpdispatch.dispatchers import all_names, make_dispatcher
from cpdispatch.predictors import make_predictor
from cpdispatch.simulator import SimOptions, simulate
from cpdispatch.validate import schedule_errors

from .strategies import systems, workloads

BASELINES = ["fifo", "sjf", "ljf", "easy", "easy-sjf", "conservative", "slurm-backfill", "pbs"]
#: CP dispatchers run with a small deterministic budget so that examples stay quick and reproducible.
CP = {name: {"deterministic_time": "0.2", "workers": "1"} for name in
      ["hcp", "hcp1", "hcp2", "hcp3", "pcp1", "pcp2", "pcp3", "pcp20", "eurora14"]}


def _names() -> list[str]:
    known = set(all_names())
    return [n for n in BASELINES + list(CP) if n in known]


def _fingerprint(result):  # type: ignore[no-untyped-def]
    return [(r.job.id, r.status, r.start, r.end, r.alloc.per_unit(), r.reason) for r in result.records]


@pytest.mark.parametrize("name", _names())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), kill=st.booleans(),
       predictor=st.sampled_from(["walltime", "real", "last2", "datadriven", "learned", "sc15"]))
def test_valid_and_deterministic(name: str, data: st.DataObject, kill: bool, predictor: str) -> None:
    system = data.draw(systems())
    workload = data.draw(workloads(system))
    opts = CP.get(name, {})
    options = SimOptions(kill_at_walltime=kill, progress=False)
    first = simulate(system, workload, make_dispatcher(name, opts), make_predictor(predictor), options)
    assert schedule_errors(first) == []
    assert not first.refused, first.refused[:3]
    statuses = {r.status for r in first.records}
    assert statuses <= {"completed", "killed", "rejected"}
    assert len(first.records) == len(workload.jobs)
    again = simulate(system, workload, make_dispatcher(name, opts), make_predictor(predictor), options)
    assert _fingerprint(again) == _fingerprint(first)
