"""`fitting_totals`, the exact "can be allocated now" test, against the allocators themselves."""

from __future__ import annotations

import numpy as np
import pytest

from cpdispatch.allocators import ALLOCATORS, FITS_ANY, FitPlan, fitting_totals


@pytest.mark.parametrize("seed", range(40))
def test_fitting_totals_matches_every_allocator(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nodes, ntypes = int(rng.integers(1, 12)), int(rng.integers(1, 4))
    capacity = rng.integers(1, 9, size=(nodes, ntypes)).astype(np.int64)
    free = (capacity * rng.random((nodes, ntypes))).astype(np.int64)
    free[rng.random(nodes) < 0.3] = 0  # some full nodes
    reqs = rng.integers(0, 4, size=(ntypes, 12)).astype(np.int64)
    reqs[:, 0] = 0  # a request asking nothing
    totals = fitting_totals(free, reqs)
    assert totals[0] == FITS_ANY
    for s in range(reqs.shape[1]):
        req = tuple(int(a) for a in reqs[:, s])
        for units in range(0, 14):
            for name, alloc in ALLOCATORS.items():
                work = free.copy()
                placed = alloc(work, capacity, req, units)
                assert (placed is not None) == (units <= totals[s]), (name, req, units)


def test_fitting_totals_on_a_full_system() -> None:
    free = np.zeros((3, 2), dtype=np.int64)
    reqs = np.array([[1, 0], [0, 0]], dtype=np.int64)
    assert fitting_totals(free, reqs).tolist() == [0, FITS_ANY]


@pytest.mark.parametrize("seed", range(20))
def test_fit_plan_update_matches_a_fresh_count(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    nodes, ntypes = int(rng.integers(1, 10)), int(rng.integers(1, 4))
    free = rng.integers(0, 9, size=(nodes, ntypes)).astype(np.int64)
    reqs = rng.integers(0, 4, size=(ntypes, 8)).astype(np.int64)
    if seed % 2:
        reqs[:, 1] = 0
    plan = FitPlan(reqs)
    total = plan(free)
    assert total.tolist() == fitting_totals(free, reqs).tolist()
    rows = np.unique(rng.integers(0, nodes, size=3))
    after = free.copy()
    after[rows] = np.maximum(after[rows] - rng.integers(0, 4, size=(len(rows), ntypes)), 0)
    assert plan.update(total, free[rows], after[rows]).tolist() == plan(after).tolist()
