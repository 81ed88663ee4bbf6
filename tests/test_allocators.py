"""Allocators: hand-checked placements, and the vectorised code against a plain loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpdispatch.allocators import ALLOCATORS, DemandEstimate, best_fit, first_fit, get_allocator
from cpdispatch.errors import CpdispatchError
from cpdispatch.system import NodeGroup, System

from .helpers import job, snapshot


def arr(rows: list[list[int]]) -> np.ndarray:
    return np.array(rows, dtype=np.int64)


def test_first_fit_takes_nodes_in_index_order_and_packs_each() -> None:
    free = arr([[0], [2], [4]])
    assert first_fit(free, (1,), 3) == (1, 1, 2)
    assert free.tolist() == [[0], [0], [3]]


def test_first_fit_puts_several_units_on_one_node() -> None:
    free = arr([[4, 8], [4, 8]])
    assert first_fit(free, (1, 2), 4) == (0, 0, 0, 0)
    assert free.tolist() == [[0, 0], [4, 8]]


def test_first_fit_limited_by_every_requested_type() -> None:
    free = arr([[4, 1], [4, 8]])  # node 0 has cores but memory for one unit only
    assert first_fit(free, (1, 1), 3) == (0, 1, 1)
    assert free.tolist() == [[3, 0], [2, 6]]


@pytest.mark.parametrize("name", ["first-fit", "best-fit", "scarce-fit"])
def test_failure_leaves_free_untouched(name: str) -> None:
    free = arr([[1, 4], [2, 4]])
    cap = arr([[2, 4], [2, 4]])
    before = free.copy()
    alloc = get_allocator(name)
    assert alloc(free, cap, (1, 2), 4) is None  # 1 + 2 units fit: too few
    assert alloc(free, cap, (1, 5), 1) is None  # no node has 5 memory
    assert np.array_equal(free, before)


def test_best_fit_ranks_by_free_share_of_capacity_not_raw_sum() -> None:
    # node 0: 8 of 16 cores and 900 of 1000 MB free -> 0.5 + 0.9 = 1.4
    # node 1: 1 of 4 cores and 90000 of 100000 MB free -> 0.25 + 0.9 = 1.15 (fuller)
    # AccaSim's raw sum (908 vs 90001) would pick node 0.
    cap = arr([[16, 1000], [4, 100000]])
    free = arr([[8, 900], [1, 90000]])
    assert best_fit(free, cap, (1, 100), 1) == (1,)
    assert free.tolist() == [[8, 900], [0, 89900]]


def test_best_fit_counts_only_requested_types() -> None:
    cap = arr([[4, 100], [4, 100]])
    free = arr([[1, 100], [2, 0]])  # node 1 is fuller overall, but only cores are requested
    assert best_fit(free, cap, (1, 0), 1) == (0,)


def test_best_fit_packs_fullest_first_then_next_ties_by_index() -> None:
    cap = arr([[4], [4], [4], [4]])
    free = arr([[4], [2], [3], [2]])
    assert best_fit(free, cap, (1,), 5) == (1, 1, 3, 3, 2)
    assert free.tolist() == [[4], [0], [2], [0]]


def test_zero_request_and_zero_units() -> None:
    free = arr([[0], [0]])
    assert first_fit(free, (0,), 3) == (0, 0, 0)
    assert best_fit(free, free.copy(), (0,), 2) == (0, 0)
    assert first_fit(free, (1,), 0) == ()
    assert free.tolist() == [[0], [0]]


def test_registry() -> None:
    assert set(ALLOCATORS) == {"first-fit", "best-fit", "scarce-fit"}
    assert get_allocator("scarce-fit") is not get_allocator("scarce-fit")  # each learns on its own
    with pytest.raises(CpdispatchError, match="unknown allocator"):
        get_allocator("worst-fit")


# ------------------------------------------------------------ against a plain loop over nodes


def plain(
    free: np.ndarray, cap: np.ndarray, req: tuple[int, ...], units: int, best: bool, weights: list[float] | None = None
) -> tuple[int, ...] | None:
    nodes = list(range(len(free)))
    if best:
        kinds = [k for k, a in enumerate(req) if a > 0]
        others = [k for k, a in enumerate(req) if a == 0 and weights and weights[k] > 0]
        nodes = [n for n in nodes if all(free[n, k] >= req[k] for k in kinds)]
        nodes.sort(key=lambda n: (sum(free[n, k] / max(cap[n, k], 1) * weights[k] for k in others) if weights else 0,
                                  sum(free[n, k] / cap[n, k] for k in kinds), n))
    out: list[int] = []
    work = free.copy()
    for n in nodes:
        while len(out) < units and all(work[n, k] >= a for k, a in enumerate(req)):
            work[n] -= req
            out.append(n)
    if len(out) < units:
        return None
    free[:] = work
    return tuple(out)


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(), n=st.integers(1, 12), types=st.integers(1, 3), units=st.integers(1, 9),
    best=st.booleans(), weighted=st.booleans(),
)
def test_matches_plain_loop(data: st.DataObject, n: int, types: int, units: int, best: bool, weighted: bool) -> None:
    # capacities of 0 (a node without GPUs) only where weights can see them
    low = 0 if weighted else 1
    cap = np.array(data.draw(st.lists(st.lists(st.integers(low, 8), min_size=types, max_size=types),
                                      min_size=n, max_size=n)), dtype=np.int64)
    weights = data.draw(st.lists(st.sampled_from([0.0, 0.01, 0.5, 1.0]), min_size=types, max_size=types)) \
        if weighted else None
    used = np.array([[data.draw(st.integers(0, int(c))) for c in row] for row in cap], dtype=np.int64)
    free = cap - used
    # (an all-zero request never stops the plain loop: see test_zero_request_and_zero_units)
    req = tuple(data.draw(st.lists(st.integers(0, 3), min_size=types, max_size=types).filter(any)))
    expected_free = free.copy()
    expected = plain(expected_free, cap, req, units, best, weights)
    w = None if weights is None else np.array(weights)
    got = best_fit(free, cap, req, units, w) if best else first_fit(free, req, units)
    assert got == expected
    assert np.array_equal(free, expected_free)


# ------------------------------------------------------------ demand-aware best fit ("scarce fit")

#: a GPU node and a MIC node (types core, gpu, mic), as in the issue's example
GPU_MIC = arr([[16, 2, 0], [16, 0, 2]])


def test_scarce_fit_keeps_the_gpu_node_for_gpu_jobs() -> None:
    free = GPU_MIC.copy()
    assert best_fit(free.copy(), GPU_MIC, (16, 0, 0), 1) == (0,)  # blind: lowest index among ties
    weights = np.array([1.0, 0.5, 0.01])  # GPUs in demand, MICs hardly
    assert best_fit(free, GPU_MIC, (16, 0, 0), 1, weights) == (1,)  # the MIC node
    assert best_fit(free, GPU_MIC, (1, 1, 0), 1, weights) == (0,)  # the GPU job still fits
    assert best_fit(free, GPU_MIC, (8, 0, 0), 1, weights) == (0,)  # its GPUs are half used now


def test_scarce_fit_prefers_wasting_the_type_in_less_demand() -> None:
    free = arr([[16, 2, 0], [16, 0, 2], [4, 0, 0]])
    cap = arr([[16, 2, 0], [16, 0, 2], [4, 0, 0]])
    weights = np.array([1.0, 0.5, 0.01])
    # the CPU-only node is fullest-first for 4 cores; then the MIC node before the GPU node
    assert best_fit(free, cap, (4, 0, 0), 3, weights) == (2, 1, 1)
    # a type nobody asked for (weight 0) is not protected: plain best fit, ties by index
    assert best_fit(cap[:2].copy(), cap[:2], (4, 0, 0), 1, np.array([1.0, 0.0, 0.0])) == (0,)


def test_demand_estimate_learns_from_new_jobs_only() -> None:
    system = System.build("s", [NodeGroup("g", 2, {"core": 16, "gpu": 2, "mic": 2})])
    est = DemandEstimate()
    assert est.weights is None
    cpu = job("a", 0, 100, 4, (1, 0, 0))
    gpu = job("b", 0, 100, 1, (1, 1, 0))
    snap = snapshot(system, [(cpu, 100), (gpu, 100)])
    est.observe(snap)
    first = est.weights
    assert first is not None and first[2] == 0  # no MIC job seen
    # core: 4 + 1 core-s over 32 cores; gpu: 1 over 4 gpus -> the GPUs are in more demand
    assert first.tolist() == pytest.approx([(5 / 32) / (1 / 4), 1.0, 0.0], rel=1e-3)  # (forgetting is slow)
    est.observe(snap)  # the same queue again: nothing new
    assert est.weights is not None and est.weights.tolist() == first.tolist()
    mic = job("c", 0, 100, 1, (1, 0, 2))
    est.observe(snapshot(system, [(gpu, 100), (mic, 100)]))  # same submit time, a new id
    assert est.weights is not None and est.weights[2] > 0
