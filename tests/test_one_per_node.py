"""Jobs whose units need distinct nodes (Slurm's `-N K`): every dispatcher honours the flag, the
simulator refuses a start that does not, and the native CSV carries it."""

from __future__ import annotations

from pathlib import Path

import pytest

import cpdispatch as cpd
from cpdispatch.dispatchers import all_names
from cpdispatch.errors import InputError
from cpdispatch.job import Job
from cpdispatch.snapshot import Decision, Snapshot, Start
from cpdispatch.system import NodeGroup, System
from cpdispatch.workloads.base import Workload
from cpdispatch.workloads.native import read_native, write_native

TWO = System.build("two", [NodeGroup("n", 2, {"core": 4})])


def _jobs(one_per_node: bool) -> list[Job]:
    """A fills node 0 for 100 s; B's two 2-core units fit on node 1 together, but not on two nodes
    before A ends."""
    return [Job("A", 0, 1, (4,), 100, 100), Job("B", 1, 2, (2,), 50, 50, one_per_node=one_per_node)]


@pytest.mark.parametrize("name", sorted(set(all_names())))
def test_every_dispatcher_waits_for_distinct_nodes(name: str) -> None:
    spread = {r.job.id: r for r in cpd.simulate(TWO, _jobs(True), name, "real").raw.records}
    packed = {r.job.id: r for r in cpd.simulate(TWO, _jobs(False), name, "real").raw.records}
    assert packed["B"].start == 1 and packed["B"].alloc.per_unit() == (1, 1)  # both units on node 1 now
    assert spread["B"].start == 100 and spread["B"].alloc.per_unit() == (0, 1)  # once A has ended


def test_a_start_that_shares_a_node_is_refused() -> None:
    def packs(snapshot: Snapshot) -> Decision:
        return Decision(starts=tuple(Start(q.job.id, (0,) * q.job.units) for q in snapshot.queued))

    with pytest.warns(cpd.RefusedStartsWarning, match="its units need distinct nodes"):
        result = cpd.simulate(TWO, [Job("B", 0, 2, (1,), 10, 10, one_per_node=True)], packs, "real")
    assert any("its units need distinct nodes, but node 0 got 2" in r for r in result.raw.refused)


def test_a_job_wider_than_the_nodes_is_rejected_with_why() -> None:
    result = cpd.simulate(TWO, [Job("W", 0, 3, (1,), 10, 10, one_per_node=True)], "fifo", "real")
    (rec,) = result.raw.records
    assert rec.status == "rejected" and "on distinct nodes but at most 2 fit" in rec.reason


def test_the_native_csv_carries_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    write_native(str(path), Workload("w", _jobs(True)), TWO)
    assert path.read_text().splitlines()[0].endswith(",req_core,one_per_node")
    assert [j.one_per_node for j in read_native(str(path), TWO).jobs] == [False, True]
    write_native(str(path), Workload("w", _jobs(False)), TWO)
    assert "one_per_node" not in path.read_text()  # the column only when some job has the flag
    path.write_text("job_id,submit,user,name,queue,units,walltime,runtime,req_core,one_per_node\n"
                    "a,0,u,n,q,2,10,10,1,yes\n")
    with pytest.raises(InputError, match=r"w.csv:2: field 'one_per_node': 'yes' is not 0 or 1"):
        read_native(str(path), TWO, strict=True)
