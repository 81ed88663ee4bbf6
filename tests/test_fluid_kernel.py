"""pcp20's compiled 1-D greedy plan (`pcp20/fluid_kernel.first_fits`) against a plain reference on
random step profiles."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cpdispatch.dispatchers.cp.models.pcp20.fluid_kernel import first_fits


def reference(times: list[int], free: list[int], needs: list[int], durations: list[int]) -> list[int]:
    """Each job at the first segment start from which `need` is free over its whole duration; the
    profile is a dict of segment start -> free amount, the last segment endless."""
    profile = dict(zip(times, free))
    out = []
    for need, d in zip(needs, durations):
        starts = sorted(profile)
        at = next((t for t in starts if all(profile[s] >= need for s in starts if t <= s < t + d)), None)
        if at is None:
            return [*out, -1]
        end = at + d
        if end not in profile:
            profile[end] = profile[max(s for s in starts if s < end)]
        for s in profile:
            if at <= s < end:
                profile[s] -= need
        out.append(at)
    return out


@st.composite
def profiles(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], list[int]]:
    ends = sorted(set(draw(st.lists(st.integers(1, 60), max_size=8))))
    times = [0, *ends]
    free = draw(st.lists(st.integers(-2, 12), min_size=len(times), max_size=len(times)))
    free = list(np.maximum.accumulate(free))  # running jobs only end: the free amount never drops
    jobs = draw(st.integers(1, 8))
    needs = draw(st.lists(st.integers(1, 14), min_size=jobs, max_size=jobs))
    durations = draw(st.lists(st.integers(1, 40), min_size=jobs, max_size=jobs))
    return times, free, needs, durations


@settings(max_examples=400, deadline=None)
@given(profiles())
def test_first_fits_places_each_job_at_its_first_fitting_time(case: tuple[list[int], ...]) -> None:
    times, free, needs, durations = case
    got = first_fits(*(np.array(x, dtype=np.int64) for x in case)).tolist()
    want = reference(times, free, needs, durations)
    assert got[:len(want)] == want
    assert all(s == -1 for s in got[len(want):])  # after a job that fits nowhere, none is placed


def test_a_hand_checked_profile() -> None:
    """4 free until 10, then 6: a job of 5 x 20 waits until 10; then one of 2 x 20 does not fit at 0
    (only 1 is free from 10 to 30) and starts at 30."""
    got = first_fits(np.array([0, 10]), np.array([4, 6]), np.array([5, 2]), np.array([20, 20]))
    assert got.tolist() == reference([0, 10], [4, 6], [5, 2], [20, 20]) == [10, 30]
