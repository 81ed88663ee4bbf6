"""Scarce resources on a heterogeneous system: hand-checked cases where a blind allocation provably
delays a GPU job and the demand-aware one (or the joint model) does not, for the fast path, the
greedy plan, every CP model and the baselines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp.fitting import extract_starts, fast_path
from cpdispatch.dispatchers.cp.greedy import greedy_plan
from cpdispatch.dispatchers.cp.instance import Plan
from cpdispatch.job import Job
from cpdispatch.snapshot import Decision, RunningJob, Start
from cpdispatch.system import NodeGroup, System

from .helpers import on, snapshot

#: node 0: 16 cores and 2 GPUs; node 1: 16 cores and 2 MICs (types core, gpu, mic)
GPU_MIC = System.build("gpu-mic", [NodeGroup("gpu", 1, {"core": 16, "gpu": 2}),
                                   NodeGroup("mic", 1, {"core": 16, "mic": 2})])


def jobs_abc() -> list[tuple[Job, int]]:
    """The issue's case: A = 16 cores (waited longest: highest priority under every rule),
    B = 1 core + 1 GPU, C = 8 cores; all 100 s. All three fit now only if A takes the MIC node."""
    a = Job("A", 0, 1, (16, 0, 0), 100, 100)
    b = Job("B", 10, 1, (1, 1, 0), 100, 100)
    c = Job("C", 20, 1, (8, 0, 0), 100, 100)
    return [(a, 100), (b, 100), (c, 100)]


def started(decision: Decision) -> dict[str, tuple[int, ...]]:
    return {s.job_id: s.nodes for s in decision.starts}


BLIND = {"allocator": "best-fit"}


@pytest.mark.parametrize("name, options", [
    ("easy", {}), ("fifo", {"allocator": "best-fit"}), ("pbs", {}), ("hcp19", BLIND), ("hcp19", {"fastpath": "false",
                                                                                             **BLIND}),
])
def test_blind_allocation_puts_a_on_the_gpu_node_and_b_waits(name: str, options: dict[str, str]) -> None:
    got = started(make_dispatcher(name, options).decide(snapshot(GPU_MIC, jobs_abc())))
    assert got.get("A") == (0,) and "B" not in got


@pytest.mark.parametrize("name, options", [
    # the joint models find it whatever allocator they use outside the model
    ("pcp20", BLIND), ("pcp19", BLIND), ("pcp20", {"fastpath": "false", **BLIND}),
    # the demand-aware allocation finds it alone, for every dispatcher that uses it
    ("pcp20", {}), ("pcp19", {}), ("hcp19", {}), ("hcp19", {"fastpath": "false"}), ("eurora14", {}),
    ("easy", {"allocator": "scarce-fit"}), ("pbs", {"allocator": "scarce-fit"}),
    ("fifo", {"allocator": "scarce-fit"}),
])
def test_scarce_aware_or_joint_allocation_starts_all_three(name: str, options: dict[str, str]) -> None:
    got = started(make_dispatcher(name, options).decide(snapshot(GPU_MIC, jobs_abc())))
    assert got == {"A": (1,), "B": (0,), "C": (0,)}


def test_fast_path_with_and_without_weights() -> None:
    snap = snapshot(GPU_MIC, jobs_abc())
    ordered = list(snap.queued)
    assert fast_path(snap, ordered) is None  # A on the GPU node: B no longer fits
    weights = np.array([1.0, 1.0, 0.0])
    starts = fast_path(snap, ordered, weights)
    assert starts is not None and {s.job_id: s.nodes for s in starts} == {"A": (1,), "B": (0,), "C": (0,)}


def test_greedy_plan_with_and_without_weights() -> None:
    disp = make_dispatcher("hcp19")
    snap = snapshot(GPU_MIC, jobs_abc())
    inst = disp.instance(snap, list(snap.queued))  # type: ignore[attr-defined]
    blind = greedy_plan(replace(inst, weights=None))
    assert blind.starts == {"A": 0, "B": 100, "C": 0} and blind.nodes["A"] == (0,)
    aware = greedy_plan(replace(inst, weights=np.array([1.0, 1.0, 0.0])))
    assert aware.starts == {"A": 0, "B": 0, "C": 0} and aware.nodes == {"A": (1,), "B": (0,), "C": (0,)}


def blocked_case() -> tuple:
    """A running job R holds both GPUs and one core of the GPU node for 10 more seconds. X (15
    cores, 100 s) fits now on either node; Y (2 cores + 1 GPU) cannot start before R ends. Best
    fit, demand-aware or not, puts X on the GPU node (fuller, and its GPUs are busy now), which
    delays Y until X ends at 100; with Y in the model, X goes to the MIC node and Y starts at 10."""
    r = RunningJob(Job("R", 0, 1, (1, 2, 0), 100, 100), 0, 110, on(0))
    x = Job("X", 50, 1, (15, 0, 0), 100, 100)
    y = Job("Y", 60, 1, (2, 1, 0), 50, 50)
    return snapshot(GPU_MIC, [(x, 100), (y, 50)], running=(r,))


@pytest.mark.parametrize("allocator", ["best-fit", "scarce-fit"])
def test_blocked_jobs_in_the_model_change_pcp20s_placement(allocator: str) -> None:
    snap = blocked_case()
    alone = make_dispatcher("pcp20", {"blocked": "0", "stage2": "0", "allocator": allocator}).decide(snap)
    assert started(alone) == {"X": (0,)}
    joint = make_dispatcher("pcp20", {"blocked": "1", "stage2": "0", "allocator": allocator}).decide(snap)
    assert started(joint) == {"X": (1,)}
    assert joint.status in ("optimal", "feasible") and joint.plan == {"Y": snap.time + 10}
    # the second stage (on by default) finds the same placement without Y in the first model
    staged = make_dispatcher("pcp20", {"blocked": "0", "allocator": allocator}).decide(snap)
    assert started(staged) == {"X": (1,)}
    assert staged.stage2 is not None and staged.stage2.status == "moved" and staged.stage2.gained == 1


def test_reallocate_enacts_the_demand_aware_placement_only_when_it_places_every_start() -> None:
    snap = snapshot(GPU_MIC, jobs_abc()[:2])  # A (16 cores) and B (1 core + 1 GPU)
    disp = make_dispatcher("pcp20")
    inst = disp.instance(snap, list(snap.queued))  # type: ignore[attr-defined]
    inst = replace(inst, weights=np.array([1.0, 1.0, 0.0]))
    only_a = Plan(starts={"A": 0, "B": 5}, nodes={"A": (0,), "B": (0,)})  # the model wastes the GPU node
    assert extract_starts(snap, inst, only_a)[0] == (Start("A", (0,)),)
    assert extract_starts(snap, inst, only_a, reallocate=True)[0] == (Start("A", (1,)),)
    # J1 (2 units of 2 cores), J2 and J3 (14 cores each) fit together only with J1 split over both
    # nodes: the demand-aware rule packs J1 on the MIC node and cannot place J3; the model's is kept
    j1, j2, j3 = Job("J1", 0, 2, (2, 0, 0), 100, 100), Job("J2", 10, 1, (14, 0, 0), 100, 100), \
        Job("J3", 20, 1, (14, 0, 0), 100, 100)
    snap = snapshot(GPU_MIC, [(j1, 100), (j2, 100), (j3, 100)])
    inst = disp.instance(snap, list(snap.queued))  # type: ignore[attr-defined]
    inst = replace(inst, weights=np.array([1.0, 1.0, 0.0]))
    split = Plan(starts={"J1": 0, "J2": 0, "J3": 0}, nodes={"J1": (0, 1), "J2": (0,), "J3": (1,)})
    expected = (Start("J1", (0, 1)), Start("J2", (0,)), Start("J3", (1,)))
    assert extract_starts(snap, inst, split, reallocate=True) == (expected, 0)
