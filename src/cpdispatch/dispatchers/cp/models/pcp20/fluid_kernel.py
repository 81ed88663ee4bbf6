"""The compiled core of the 1-D greedy plan (`fluid.total_plan`): the priority list placed on a
step profile of the total free amount.

Compiled with numba (cached on disk after the first run) because pcp20 asks for this plan at
nearly every decision with a queue: a placement is a scan over the profile's segments, which
numpy can only do in several whole-array steps per job.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def first_fits(times: np.ndarray, free: np.ndarray, needs: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """Start of each job in list order at the first time `needs[k]` fits in the free amount over
    the whole `durations[k]` (>= 1), each placed job using its need; -1 for the first job that
    fits at no time, and the jobs after it unplaced. Segment i of the profile is
    [times[i], times[i + 1]) with `free[i]` free (the last one has no end)."""
    n, jobs = times.shape[0], needs.shape[0]
    at = np.empty(n + jobs, np.int64)
    room = np.empty(n + jobs, np.int64)
    at[:n] = times
    room[:n] = free
    out = np.full(jobs, -1, np.int64)
    for k in range(jobs):
        need, d = needs[k], durations[k]
        i, found = 0, False
        while i < n:  # a segment short of room rules out every start whose interval covers it
            end = at[i] + d
            j = i
            while j < n and at[j] < end and room[j] >= need:
                j += 1
            if j == n or at[j] >= end:
                found = True
                break
            i = j + 1
        if not found:
            return out
        if j == n or at[j] != end:  # the job's end starts a segment of its own
            for s in range(n, j, -1):
                at[s] = at[s - 1]
                room[s] = room[s - 1]
            at[j] = end
            room[j] = room[j - 1]
            n += 1
        for s in range(i, j):
            room[s] -= need
        out[k] = at[i]
    return out
