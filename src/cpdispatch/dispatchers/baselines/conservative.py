"""Backfilling with a reservation for every job tested: conservative backfilling, and the base of
Slurm's backfill (`slurm_backfill`).

Conservative backfilling (Mu'alem & Feitelson 2001): in queue order, every job either starts now
or gets the earliest reservation that fits beside the reservations of the jobs before it; a job
may start now only if it delays none of them. The plan is made afresh at every call (so a job
that ends early lets the reservations move forward), which keeps the promise that matters: the
start of a job depends only on the jobs before it in the order, never on a later one. The pass is
compiled (`profile_kernel`); its profile and its limits are described there.
"""

from __future__ import annotations

import numpy as np

from ...snapshot import Decision, Snapshot
from ..base import registered
from .easy import CompiledPass
from .queue_cache import kernel_order


class ReservingPass(CompiledPass):
    """A compiled profile pass over the queue in `order`, testing at most `depth` jobs (-1: all),
    reserving only within `window` seconds (-1: no limit), times rounded up to `resolution` s."""

    depth = -1
    window = -1
    resolution = 1

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        from .profile_kernel import profile_pass  # numba only for runs that use it

        self._pass = profile_pass
        #: set to keep `reservations`, job id -> reserved time, of the last call (tests, diagnostics)
        self.keep_reservations = False
        self.reservations: dict[str, int] = {}

    def order(self, snapshot: Snapshot) -> np.ndarray | None:
        """Live queue positions in priority order (None: FIFO)."""
        return self._queue.fifo_order()

    def decide(self, snapshot: Snapshot) -> Decision:
        if not self._sync(snapshot):
            return Decision()
        cache, running = self._queue, self._running
        order = self.order(snapshot)
        free = snapshot.free.copy()
        positions, nodes, offsets, held, held_at = self._pass(
            free, self._capacity_of(snapshot.system), self._best, self._weights(snapshot), snapshot.time,
            cache.live, kernel_order(order), cache.units, cache.predicted, cache.shape,
            cache.shapes, running.arrays(), self.depth, self.window, self.resolution,
        )
        if self.keep_reservations:
            self.reservations = {cache.items[i].job.id: t for i, t in zip(held.tolist(), held_at.tolist(), strict=True)}
        return self._starts(cache, positions, nodes, offsets)


@registered()
class Conservative(ReservingPass):
    name = "conservative"
    summary = "conservative backfilling: every queued job holds a reservation that no later job may delay"
