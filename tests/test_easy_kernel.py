"""The compiled EASY kernel's pieces against the plain allocators: the same placements, and its
per-shape "fits now" count is exactly when every allocator succeeds."""

from __future__ import annotations

import numpy as np
import pytest

from cpdispatch.allocators import best_fit, first_fit
from cpdispatch.dispatchers.baselines.easy_kernel import FITS_ANY, _allocate, _count, _refit, _sort_new

WEIGHTS = np.array([0.3, 1.0, 0.05])  # per type, for the demand-aware best fit


def random_case(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Capacity and free amounts of a small heterogeneous system (ties, full nodes, types a node
    lacks), and request shapes (types + 1 x shapes: per-unit request, then 1 for a job whose units
    need distinct nodes), the first asking nothing."""
    rng = np.random.default_rng(seed)
    nodes, ntypes = int(rng.integers(1, 12)), int(rng.integers(1, 4))
    capacity = rng.integers(0, 9, size=(nodes, ntypes)).astype(np.int64)
    free = (capacity * rng.random((nodes, ntypes))).astype(np.int64)
    free[rng.random(nodes) < 0.3] = 0
    if seed % 3 == 0:
        free[:] = capacity  # an idle system: many equal best-fit scores
    shapes = rng.integers(0, 4, size=(ntypes + 1, 12)).astype(np.int64)
    shapes[-1] = rng.random(12) < 0.3
    shapes[:, 0] = 0
    return capacity, free, shapes


def fits(free: np.ndarray, shapes: np.ndarray, s: int) -> int:
    fit, known = np.zeros(shapes.shape[1], dtype=np.int64), np.zeros(shapes.shape[1], dtype=bool)
    _count(fit, known, free, shapes, s)
    assert known[s]
    return int(fit[s])


@pytest.mark.parametrize("seed", range(40))
def test_fits_now_and_placements_match_the_allocators(seed: int) -> None:
    capacity, free, shapes = random_case(seed)
    assert fits(free, shapes, 0) == FITS_ANY
    for s in range(shapes.shape[1]):
        req, one = tuple(int(a) for a in shapes[:-1, s]), bool(shapes[-1, s])
        total = fits(free, shapes, s)
        for units in range(0, 14):
            for name, weights in (("first-fit", None), ("best-fit", None), ("scarce-fit", WEIGHTS[: len(req)])):
                expected = free.copy()
                if name == "first-fit":
                    placed = first_fit(expected, req, units, one)
                else:
                    placed = best_fit(expected, capacity, req, units, weights, one)
                assert (placed is not None) == (units <= total), (name, req, units)
                if placed is None:
                    continue
                got, out = free.copy(), np.full(units, -1, dtype=np.int64)
                w = np.zeros(len(req)) if weights is None else weights
                _allocate(got, capacity, name != "first-fit", w, shapes, s, units, out, 0)
                assert tuple(out.tolist()) == placed, (name, req, units)
                assert not one or len(set(placed)) == len(placed)
                assert (got == expected).all()


@pytest.mark.parametrize("seed", range(20))
def test_refit_keeps_counts_exact_when_a_node_changes(seed: int) -> None:
    _, free, shapes = random_case(100 + seed)
    fit, known = np.zeros(shapes.shape[1], dtype=np.int64), np.zeros(shapes.shape[1], dtype=bool)
    for s in range(0, shapes.shape[1], 2):  # some shapes known, the others left alone
        _count(fit, known, free, shapes, s)
    rng = np.random.default_rng(seed)
    after = free.copy()
    for n in np.unique(rng.integers(0, len(free), size=3)).tolist():
        after[n] = np.maximum(after[n] - rng.integers(0, 4, size=free.shape[1]), 0)
        _refit(fit, known, shapes, free, n, after, n)
        free[n] = after[n]
    for s in range(shapes.shape[1]):
        assert known[s] == (s % 2 == 0)
        if known[s]:
            assert fit[s] == fits(free, shapes, s)


@pytest.mark.parametrize("seed", range(10))
def test_sort_new_completes_the_order_of_running_entries_by_end(seed: int) -> None:
    rng = np.random.default_rng(seed)
    end = rng.integers(0, 20, size=int(rng.integers(1, 40))).astype(np.int64)  # many ties
    done_before = int(rng.integers(0, len(end) + 1))
    by_end = np.zeros(len(end), dtype=np.int64)
    by_end[:done_before] = np.argsort(end[:done_before], kind="stable")
    done = np.array([done_before], dtype=np.int64)
    _sort_new(end, by_end, done)
    assert done[0] == len(end)
    assert sorted(by_end.tolist()) == list(range(len(end)))
    assert (np.diff(end[by_end]) >= 0).all()
