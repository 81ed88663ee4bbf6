"""The compiled core of EASY backfilling: one whole pass (FIFO part, reservation, backfill) per call.

Compiled with numba (cached on disk after the first run) because the simulator calls EASY at
every event with queues of up to tens of thousands of jobs: a pass is a plain loop over the queue
here, where numpy would need dozens of small vectorised steps per call. The allocators are the
same as `cpdispatch.allocators` (tests compare them on random inputs), as is "fits now": a job of
`units` x `req` fits iff the units of `req` that fit on each node add up to at least `units` (first
and best fit both pack as many units as fit on each node they visit). That count is kept per
request shape and updated on the nodes an allocation touches, so most jobs of a long queue are
turned down by one comparison.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: How many units of a request asking nothing fit on a node (or anywhere): more than any job asks.
FITS_ANY = np.iinfo(np.int64).max // 4


@njit(cache=True, inline="always")  # 10% faster passes, 5 s more to compile once
def _node_fit(amounts: np.ndarray, n: int, shapes: np.ndarray, s: int) -> int:
    """Units of shape `s` (a column of `shapes`: per-unit request, then the most units per node, 0
    for no limit) that fit in row `n` of `amounts`; FITS_ANY if the shape asks nothing. (Indices,
    not row views: a view costs reference counting in a hot loop.)"""
    out = FITS_ANY
    types = amounts.shape[1]
    for k in range(types):
        a = shapes[k, s]
        if a > 0:
            q = amounts[n, k] // a if a != 1 else amounts[n, k]  # one core per unit: no division
            if q < out:
                out = q
    most = shapes[types, s]
    if most > 0 and most < out:
        out = most
    return out


@njit(cache=True)
def _count(fit: np.ndarray, known: np.ndarray, amounts: np.ndarray, shapes: np.ndarray, s: int) -> None:
    """Count the units of shape `s` that fit over all nodes of `amounts` into the per-shape cache
    `fit` (up to date where `known`). Callers test `known` first: in the hot loops, a call that
    passes arrays costs more than the test."""
    total = 0
    for n in range(amounts.shape[0]):
        f = _node_fit(amounts, n, shapes, s)
        if f >= FITS_ANY:
            total = FITS_ANY
            break
        total += f
    fit[s] = total
    known[s] = True


@njit(cache=True)
def _refit(
    fit: np.ndarray, known: np.ndarray, shapes: np.ndarray, before: np.ndarray, b: int, after: np.ndarray, n: int
) -> None:
    """Keep the known fits up to date when a node's amounts change from before[b] to after[n]."""
    for s in range(shapes.shape[1]):
        if known[s] and fit[s] < FITS_ANY:
            fit[s] += _node_fit(after, n, shapes, s) - _node_fit(before, b, shapes, s)


@njit(cache=True)
def _allocate(
    amounts: np.ndarray, capacity: np.ndarray, best: bool, weights: np.ndarray, shapes: np.ndarray, s: int,
    units: int, out: np.ndarray, at: int,
) -> None:
    """Place `units` units of shape `s` (known to fit) as first fit (nodes in index order) or best
    fit (fullest first: least sum of free / capacity over the requested types, ties by index;
    with `weights` > 0 on unrequested types, least waste of those first: `allocators.best_fit`)
    would: one node index per unit into out[at:], subtracted from `amounts`."""
    n_nodes, n_types = amounts.shape
    if best:
        cand = np.empty(n_nodes, dtype=np.int64)
        score = np.empty(n_nodes, dtype=np.float64)
        m = 0
        for n in range(n_nodes):
            if _node_fit(amounts, n, shapes, s) > 0:
                x = 0.0
                for k in range(n_types):
                    if shapes[k, s] > 0:
                        x += amounts[n, k] / capacity[n, k]
                cand[m] = n
                score[m] = x
                m += 1
        visit = cand[:m][np.argsort(score[:m], kind="mergesort")]
        count = m
        weighted = False
        for k in range(n_types):
            weighted |= shapes[k, s] == 0 and weights[k] > 0
        if weighted:
            waste = np.zeros(m, dtype=np.float64)
            for v in range(m):
                n = visit[v]
                for k in range(n_types):
                    if shapes[k, s] == 0 and weights[k] > 0:
                        waste[v] += amounts[n, k] / max(capacity[n, k], 1) * weights[k]
            visit = visit[np.argsort(waste, kind="mergesort")]
    else:
        visit = np.empty(0, dtype=np.int64)  # nodes in index order
        count = n_nodes
    left = units
    for v in range(count):
        n = visit[v] if best else v
        take = min(_node_fit(amounts, n, shapes, s), left)
        if take <= 0:
            continue
        for k in range(n_types):
            amounts[n, k] -= take * shapes[k, s]
        for u in range(take):
            out[at + u] = n
        at += take
        left -= take
        if left == 0:
            return


@njit(cache=True)
def _grow(buf: np.ndarray, need: int) -> np.ndarray:
    if need <= buf.shape[0]:
        return buf
    new = np.empty(max(need, 2 * buf.shape[0]), dtype=buf.dtype)
    new[: buf.shape[0]] = buf
    return new


@njit(cache=True)
def _sort_new(run_end: np.ndarray, by_end: np.ndarray, done: np.ndarray) -> None:
    """Insert the running entries from done[0] on into `by_end` (the first done[0] entries are in
    order of end), so that all are."""
    n = done[0]
    for j in range(done[0], run_end.shape[0]):
        e = run_end[j]
        lo, hi = 0, n  # the first place whose end is after e
        while lo < hi:
            mid = (lo + hi) // 2
            if run_end[by_end[mid]] <= e:
                lo = mid + 1
            else:
                hi = mid
        for q in range(n, lo, -1):
            by_end[q] = by_end[q - 1]
        by_end[lo] = j
        n += 1
    done[0] = n


@njit(cache=True)
def _reserve(
    free: np.ndarray, capacity: np.ndarray, best: bool, weights: np.ndarray, shapes: np.ndarray, head_shape: int,
    units: int, now: int, running: tuple, new_end: np.ndarray, new_shape: np.ndarray, new_nodes: np.ndarray,
    new_off: np.ndarray,
) -> tuple[int, np.ndarray]:
    """The head's reservation: the first predicted end (never before now + 1: a job running now
    has not ended) at which `units` units of `head_shape` fit on the nodes, releasing the running
    jobs (`RunningCache.arrays`: the live entries, in order of end; their allocations as (node,
    count) pairs) and those just started (`new_*`, their nodes unit by unit) in order of predicted end;
    and the extra, what is left at that time beside the head's allocation there. (-1, free) if
    the head never fits."""
    run_end, run_live, run_req, run_first, run_pairs, pair_node, pair_count, by_end, done = running
    n_sorted, n_new, n_types = done[0], new_end.shape[0], free.shape[1]
    new_order = np.argsort(new_end)
    avail = free.copy()
    node_fit = np.empty(avail.shape[0], dtype=np.int64)
    total = 0
    for n in range(avail.shape[0]):
        node_fit[n] = min(_node_fit(avail, n, shapes, head_shape), units)
        total += node_fit[n]
    never = np.iinfo(np.int64).max
    p = q = 0  # next entry of by_end, of new_order
    while True:
        while p < n_sorted and not run_live[by_end[p]]:
            p += 1
        t = min(
            max(run_end[by_end[p]], now + 1) if p < n_sorted else never,
            new_end[new_order[q]] if q < n_new else never,
        )
        if t == never:
            return -1, free
        while p < n_sorted:  # the running jobs that end at t (ties: any order, released together)
            j = by_end[p]
            if run_live[j]:
                if max(run_end[j], now + 1) != t:
                    break
                for r in range(run_first[j], run_first[j] + run_pairs[j]):
                    n = pair_node[r]
                    for k in range(n_types):
                        avail[n, k] += pair_count[r] * run_req[j, k]
                    f = min(_node_fit(avail, n, shapes, head_shape), units)
                    total += f - node_fit[n]
                    node_fit[n] = f
            p += 1
        while q < n_new and new_end[new_order[q]] == t:  # the jobs just started that end at t
            j = new_order[q]
            q += 1
            for u in range(new_off[j], new_off[j + 1]):
                n = new_nodes[u]
                for k in range(n_types):
                    avail[n, k] += shapes[k, new_shape[j]]
                f = min(_node_fit(avail, n, shapes, head_shape), units)
                total += f - node_fit[n]
                node_fit[n] = f
        if total >= units:
            _allocate(avail, capacity, best, weights, shapes, head_shape, units, np.empty(units, dtype=np.int64), 0)
            return t, avail


@njit(cache=True)
def _next_start(
    idx: int, order: np.ndarray, live: np.ndarray, units: np.ndarray, predicted: np.ndarray, shape: np.ndarray,
    shapes: np.ndarray, free: np.ndarray, fit: np.ndarray, known: np.ndarray,
    horizon: int, limit: np.ndarray, limit_fit: np.ndarray, limit_known: np.ndarray,
) -> int:
    """From queue index `idx` on, the first live job that fits now and, if it ends after
    now + `horizon` (-1: no horizon), fits in `limit` too; the queue's length if none. (The hot
    loop of a pass, kept apart: it stays free of the pass's array bookkeeping.)"""
    n_queue = order.shape[0] if order.shape[0] else units.shape[0]
    while idx < n_queue:
        i = order[idx] if order.shape[0] else idx
        if live[i]:
            s, u = shape[i], units[i]
            if not known[s]:
                _count(fit, known, free, shapes, s)
            if u <= fit[s]:
                if horizon < 0 or predicted[i] <= horizon:
                    return idx
                if not limit_known[s]:
                    _count(limit_fit, limit_known, limit, shapes, s)
                if u <= limit_fit[s]:
                    return idx
        idx += 1
    return idx


@njit(cache=True)
def _shortest_first(
    order: np.ndarray, first: int, n_queue: int, live: np.ndarray, predicted: np.ndarray
) -> np.ndarray:
    """The live positions from queue index `first` on, by predicted duration (stable)."""
    rest = order[first:n_queue] if order.shape[0] else np.arange(first, n_queue)
    rest = rest[live[rest]]
    return rest[np.argsort(predicted[rest], kind="mergesort")]


@njit(cache=True)
def easy_pass(
    free: np.ndarray, capacity: np.ndarray, best: bool, weights: np.ndarray, now: int,
    live: np.ndarray, order: np.ndarray, units: np.ndarray, predicted: np.ndarray, shape: np.ndarray,
    shapes: np.ndarray, shape_live: np.ndarray, fit: np.ndarray, known: np.ndarray, last_free: np.ndarray,
    running: tuple, shortest_first: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One EASY pass over the live queue positions, in `order` (empty: position order). Returns
    the started positions, their nodes (one per unit, all starts together) and each start's
    offset into them (one more than starts). `free` (nodes x types) is used up in place; `running`
    is `RunningCache.arrays()` (its entries in order of end are completed here).

    `fit` and `known` (at least one entry per shape) keep, across calls, the units of each shape
    that fit in `last_free` (where known); they are brought up to date on the nodes whose amounts
    differ in `free`, and `last_free` becomes the free amounts the pass leaves. Shapes no queued
    job has (`shape_live`) are forgotten first: keeping them up to date would cost more.

    FIFO until the first job that does not fit (the head); the head's reservation is computed
    when a later job first fits now; that job and the later ones start, in queue order, if they
    fit now and either end (now + predicted) by the shadow time or fit within the extra too (then
    they use it up as well), so the head's start is never delayed. Without a shadow time (the
    head never fits) nothing is protected. With `shortest_first` (EASY++'s backfilling), the jobs
    behind the head are tried in order of predicted duration instead (ties: queue order).
    """
    n_types, n_queue = free.shape[1], (order.shape[0] if order.shape[0] else units.shape[0])
    _sort_new(running[0], running[7], running[8])
    for s in range(shape_live.shape[0]):
        if shape_live[s] == 0:
            known[s] = False
    for n in range(free.shape[0]):
        for k in range(n_types):
            if free[n, k] != last_free[n, k]:
                _refit(fit, known, shapes, last_free, n, free, n)
                break
    limit_fit, limit_known = np.zeros_like(fit), np.zeros_like(known)
    started = np.empty(16, dtype=np.int64)
    nodes = np.empty(64, dtype=np.int64)
    offsets = np.zeros(17, dtype=np.int64)
    n_started = 0
    head = -1
    shadow = -2  # -2: not computed yet; -1: the head never fits
    extra = free  # and `limit` = min(free, extra): set with the shadow time
    limit = free
    before = np.empty((1, n_types), dtype=np.int64)
    idx = 0
    while idx < n_queue:
        i = order[idx] if order.shape[0] else idx
        search = -1  # look for the next job to start from this index, if any
        if head < 0:  # FIFO: the next live job, if it fits now
            if not live[i]:
                idx += 1
                continue
            if not known[shape[i]]:
                _count(fit, known, free, shapes, shape[i])
            if units[i] > fit[shape[i]]:
                head, search = i, idx + 1
                if shortest_first:
                    order = _shortest_first(order, idx + 1, n_queue, live, predicted)
                    n_queue, search = order.shape[0], 0
                    if n_queue == 0:
                        break
        elif shadow == -2:  # the first job to backfill: reserve for the head (before any backfill)
            fifo = started[:n_started]
            shadow, extra = _reserve(
                free, capacity, best, weights, shapes, shape[head], units[head], now, running,
                now + np.maximum(predicted[fifo], 1), shape[fifo], nodes, offsets[: n_started + 1],
            )
            if shadow >= 0:
                limit = np.minimum(free, extra)
                search = idx  # it may not fit the extra
        if search < 0:  # start job i
            s, u = shape[i], units[i]
            in_extra = shadow >= 0 and now + predicted[i] > shadow
            at = offsets[n_started]
            nodes = _grow(nodes, at + u)
            started = _grow(started, n_started + 1)
            offsets = _grow(offsets, n_started + 2)
            _allocate(limit if in_extra else free, capacity, best, weights, shapes, s, u, nodes, at)
            started[n_started] = i
            offsets[n_started + 1] = at + u
            n_started += 1
            p = at
            while p < at + u:  # each node the start took from (its units are consecutive)
                n = nodes[p]
                c = 1
                while p + c < at + u and nodes[p + c] == n:
                    c += 1
                p += c
                if in_extra:  # limit[n] lost c units: so do free and extra
                    for k in range(n_types):
                        before[0, k] = limit[n, k] + c * shapes[k, s]
                        free[n, k] -= c * shapes[k, s]
                        extra[n, k] -= c * shapes[k, s]
                    _refit(limit_fit, limit_known, shapes, before, 0, limit, n)
                for k in range(n_types):
                    before[0, k] = free[n, k] + c * shapes[k, s]
                _refit(fit, known, shapes, before, 0, free, n)
                if shadow >= 0 and not in_extra:
                    for k in range(n_types):
                        before[0, k] = limit[n, k]
                        limit[n, k] = min(free[n, k], extra[n, k])
                    _refit(limit_fit, limit_known, shapes, before, 0, limit, n)
            idx += 1
            if head >= 0:
                search = idx
        if search >= 0:
            horizon = shadow - now if shadow >= 0 else -1
            idx = _next_start(
                search, order, live, units, predicted, shape, shapes, free, fit, known, horizon, limit, limit_fit,
                limit_known,
            )
    last_free[:] = free
    return started[:n_started], nodes[: offsets[n_started]], offsets[: n_started + 1]
