"""The compiled core of the reservation-profile backfillers (conservative, Slurm's backfill).

One pass walks the queue in priority order over a profile of the free capacity in time: at each
time a running job is predicted to end, the system's free amount of each resource type. Every
job tested either starts now or holds a reservation at the earliest time its whole demand fits
for its predicted duration, which later jobs in the order then cannot use: so a job never delays
a reservation made before it in the same pass. The profile counts resource amounts over the
whole system (as Mu'alem & Feitelson's conservative backfilling and the SC'15 simulator count
processors); a job starts only where the allocator finds its units room on the nodes now, and a
job whose reservation is now but whose units do not fit on the nodes keeps holding that
capacity until the next call, so node fragmentation can only make a job wait, never break a
schedule. Where every unit takes one amount of one type (processor traces on the SWF presets)
the count is exact.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .easy_kernel import FITS_ANY, _allocate, _grow, _node_fit, _sort_new


@njit(cache=True)
def _units_fitting(free: np.ndarray, shapes: np.ndarray, s: int, units: int) -> bool:
    """Whether `units` units of shape `s` fit on the nodes of `free` now."""
    total = 0
    for n in range(free.shape[0]):
        f = _node_fit(free, n, shapes, s)
        if f >= FITS_ANY:
            return True
        total += f
        if total >= units:
            return True
    return False


@njit(cache=True)
def _profile(free: np.ndarray, now: int, resolution: int, running: tuple) -> tuple[np.ndarray, np.ndarray, int]:
    """Times (now first) and, from each, the free amount per type until the next one: the free
    amounts now, plus what each running job releases at its predicted end (never before now + 1,
    rounded up to `resolution` seconds from now)."""
    run_end, run_live, run_req, run_first, run_pairs, _node, pair_count, by_end, done = running
    _sort_new(run_end, by_end, done)
    n_types = free.shape[1]
    cap = done[0] + 16
    times = np.empty(cap, dtype=np.int64)
    amounts = np.empty((cap, n_types), dtype=np.int64)
    times[0] = now
    for k in range(n_types):
        amounts[0, k] = free[:, k].sum()
    m = 1
    for p in range(done[0]):
        j = by_end[p]
        if not run_live[j]:
            continue
        t = _round_up(max(run_end[j], now + 1), now, resolution)
        if t != times[m - 1]:
            times[m] = t
            amounts[m] = amounts[m - 1]
            m += 1
        held = 0
        for r in range(run_first[j], run_first[j] + run_pairs[j]):
            held += pair_count[r]
        for k in range(n_types):
            amounts[m - 1, k] += held * run_req[j, k]
    return times, amounts, m


@njit(cache=True, inline="always")
def _round_up(t: int, now: int, resolution: int) -> int:
    return now + -(-(t - now) // resolution) * resolution


@njit(cache=True)
def _earliest(times: np.ndarray, amounts: np.ndarray, m: int, need: np.ndarray, length: int) -> tuple[int, int]:
    """The first profile index s from which `need` fits until times[s] + length, and the index
    of the first time at or after that end (m: the end of the profile); (-1, -1) if never. A slot
    that lacks room rules out every start whose span covers it, so the scan jumps past it."""
    n_types = need.shape[0]
    s = 0
    while s < m:
        end = times[s] + length
        e = s
        while e < m and times[e] < end:
            short = False
            for k in range(n_types):
                if amounts[e, k] < need[k]:
                    short = True
                    break
            if short:
                break
            e += 1
        if e == m or times[e] >= end:
            return s, e
        s = e + 1
    return -1, -1


@njit(cache=True)
def profile_pass(
    free: np.ndarray, capacity: np.ndarray, best: bool, weights: np.ndarray, now: int,
    live: np.ndarray, order: np.ndarray, units: np.ndarray, predicted: np.ndarray, shape: np.ndarray,
    shapes: np.ndarray, running: tuple, depth: int, window: int, resolution: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One pass over the live queue positions in `order` (all of them: position order when
    empty), testing at most `depth` jobs (-1: all). Returns the started positions, their nodes
    (one per unit, all starts together) and each start's offset into them (one more than starts),
    then the positions that hold a reservation instead and its time (now: where the capacity is
    there but the units do not fit on the nodes). A job whose earliest start is
    more than `window` seconds away (-1: no limit) gets no reservation and holds nothing.
    Reservation times and predicted ends are rounded up to `resolution` seconds from now.
    `free` (nodes x types) is used up in place."""
    n_types = free.shape[1]
    times, amounts, m = _profile(free, now, resolution, running)
    started = np.empty(16, dtype=np.int64)
    nodes = np.empty(64, dtype=np.int64)
    offsets = np.zeros(17, dtype=np.int64)
    held = np.empty(16, dtype=np.int64)
    held_at = np.empty(16, dtype=np.int64)
    n_started = n_held = tested = 0
    need = np.empty(n_types, dtype=np.int64)
    n_queue = order.shape[0] if order.shape[0] else units.shape[0]
    for idx in range(n_queue):
        if depth >= 0 and tested >= depth:
            break
        i = order[idx] if order.shape[0] else idx
        if not live[i]:
            continue
        tested += 1
        s_id, u = shape[i], units[i]
        for k in range(n_types):
            need[k] = u * shapes[k, s_id]
        length = _round_up(now + max(predicted[i], 1), now, resolution) - now
        s, e = _earliest(times, amounts, m, need, length)
        if s < 0 or (window >= 0 and times[s] > now + window):
            continue
        if s == 0 and _units_fitting(free, shapes, s_id, u):
            at = offsets[n_started]
            nodes = _grow(nodes, at + u)
            started = _grow(started, n_started + 1)
            offsets = _grow(offsets, n_started + 2)
            _allocate(free, capacity, best, weights, shapes, s_id, u, nodes, at)
            started[n_started] = i
            offsets[n_started + 1] = at + u
            n_started += 1
        else:  # a later reservation, or now where the units do not fit on the nodes
            held = _grow(held, n_held + 1)
            held_at = _grow(held_at, n_held + 1)
            held[n_held], held_at[n_held] = i, times[s]
            n_held += 1
        end = times[s] + length
        if e == m or times[e] != end:  # a new time in the profile, where the hold ends
            if m == times.shape[0]:
                times = _grow(times, m + 1)
                grown = np.empty((times.shape[0], n_types), dtype=np.int64)
                grown[:m] = amounts[:m]
                amounts = grown
            times[e + 1 : m + 1] = times[e:m].copy()
            amounts[e + 1 : m + 1] = amounts[e:m].copy()
            times[e] = end
            amounts[e] = amounts[e - 1]
            m += 1
        for r in range(s, e):
            for k in range(n_types):
                amounts[r, k] -= need[k]
    return started[:n_started], nodes[: offsets[n_started]], offsets[: n_started + 1], held[:n_held], held_at[:n_held]
