"""pcp20's NoOverlap2D end to end on a real heterogeneous, multi-amount trace: the Alibaba GPU
pods (cores in thousandths, memory and 1-8 GPUs per pod) on a reduced system of its node kinds.
With the exact reductions (the default) and without them (`reductions=false`: one NoOverlap2D per
requested type), every decision both prove optimal has the same objective."""

from __future__ import annotations

import itertools
from pathlib import Path

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp.models.pcp20 import Pcp20Dispatcher
from cpdispatch.instance_log import InstanceRecorder, load_instances
from cpdispatch.predictors import make_predictor
from cpdispatch.simulator import SimOptions, simulate
from cpdispatch.system import NodeGroup, System
from cpdispatch.workloads import load_workload

#: three of the trace's node kinds, two of each: GPU pods queue and CPU pods must avoid GPU nodes
SMALL = System.build("alibaba-small", [
    NodeGroup("cpu", 2, {"core": 96, "mem": 524288, "gpu": 0}),
    NodeGroup("gpu2", 2, {"core": 64, "mem": 262144, "gpu": 2}),
    NodeGroup("gpu8", 2, {"core": 96, "mem": 786432, "gpu": 8}),
])


def test_reductions_do_not_change_the_optimum(workloads_dir: Path, tmp_path: Path) -> None:
    trace = workloads_dir / "alibaba_gpu_v2023" / "openb_pod_list_default.csv.gz"
    workload = load_workload(trace, SMALL, limit=300)
    recorded = tmp_path / "instances.jsonl.gz"
    with InstanceRecorder(recorded) as rec:
        simulate(SMALL, workload, make_dispatcher("pcp20"), make_predictor("real"), SimOptions(progress=False),
                 on_decision=rec.record)
    # the models themselves: without the relaxed start, which may prove an optimum without them
    opts = {"fastpath": "false", "q_length": "6", "time_policy": "cp19", "deterministic_time": "2",
            "relaxed_start": "0"}
    default, plain = make_dispatcher("pcp20", opts), make_dispatcher("pcp20", {**opts, "reductions": "false"})
    relaxed = make_dispatcher("pcp20", {**opts, "relaxed_start": "0.005"})
    assert isinstance(plain, Pcp20Dispatcher)
    compared = boxes = proofs = 0
    for snap in itertools.islice(load_instances(recorded), 120):
        a, b = default.decide(snap), plain.decide(snap)
        r = relaxed.decide(snap)
        if r.status == "relaxation" and b.status == "optimal":  # a relaxation's proof is the model's optimum
            assert r.objective == b.objective, snap.time
            proofs += 1
        if a.status == b.status == "optimal" and a.variables and b.variables:
            assert a.objective == b.objective, snap.time
            compared += 1
            inst = plain.instance(snap, plain.select(snap, plain.order(snap)))
            boxes += plain.build(inst).size()["boxes"]
        if compared >= 12:
            break
    assert compared >= 12 and proofs > 0
    assert boxes > 0  # without the reductions the NoOverlap2D constraints have queued boxes
