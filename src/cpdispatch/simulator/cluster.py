"""The cluster's state: free amounts per node and type, and the validation of every start.

A start is applied only if it names a queued job, one node index per unit, and nodes that hold
the job's request for all the units given to them; otherwise it is refused with the reason.
Allocations are (node, count) pairs, never per-unit lists, so memory stays per node.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..job import Job
from ..snapshot import Allocation, Start
from ..system import System

Demand = np.ndarray | list[int]  # per node and type (one node: a plain list)


class Cluster:
    """Free capacity of `system`, changed only by `take` and `release`."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.free = np.array(system.capacity, dtype=np.int64, copy=True)
        # node indices as shared int objects: allocations live all run, one int per node suffices
        self._node_ints = tuple(range(system.n_nodes))
        # per running job, the rows it holds and the amounts per row (given back as taken)
        self._held: dict[str, tuple[int | np.ndarray, np.ndarray]] = {}

    def frozen_free(self) -> np.ndarray:
        """A read-only copy for a snapshot."""
        free = self.free.copy()
        free.setflags(write=False)
        return free

    def check(self, job: Job, start: Start) -> tuple[Allocation, Demand] | str:
        """The allocation of `start` and its demand per node; or why it cannot be applied."""
        if len(start.nodes) != job.units:
            return f"{len(start.nodes)} nodes given for {job.units} units"
        n_nodes = self.system.n_nodes
        if len(start.nodes) == 1:
            keys, counts = [start.nodes[0]], [1]
        elif len(set(start.nodes)) == len(start.nodes):  # one unit per node: nothing to count
            keys, counts = list(start.nodes), [1] * len(start.nodes)
        else:
            pairs = Counter(start.nodes)
            keys, counts = list(pairs), list(pairs.values())
            if job.one_per_node:
                node, count = max(pairs.items(), key=lambda p: p[1])
                return f"its units need distinct nodes, but node {node} got {count}"
        for node in keys:
            if not (isinstance(node, int | np.integer) and 0 <= node < n_nodes):
                if isinstance(node, str):
                    return (f"no node named {node!r} in system {self.system.name} (a node is given by name, e.g. "
                            f"{self.system.node_names[0]!r}, or by index 0..{n_nodes - 1})")
                return f"no node with index {node!r} (node indices are 0..{n_nodes - 1})"
        if len(keys) == 1:
            return self._check_one(job, int(keys[0]), counts[0])
        return self._check_many(job, keys, counts)

    def _check_one(self, job: Job, node: int, count: int) -> tuple[Allocation, Demand] | str:
        """One node (most jobs): plain ints, no index arrays."""
        need = [count * a for a in job.req]
        for t, (have, want) in enumerate(zip(self.free[node].tolist(), need)):
            if have < want:
                return self._short(node, t, count, want)
        return Allocation((self._node_ints[node],), (count,)), need

    def _check_many(self, job: Job, keys: list[int], counts: list[int]) -> tuple[Allocation, Demand] | str:
        by_node = sorted(zip(keys, counts))  # an Allocation lists its nodes in ascending order
        uniq = np.asarray([k for k, _ in by_node], dtype=np.int64)
        count = [c for _, c in by_node]
        need = np.asarray(count, dtype=np.int64)[:, None] * np.asarray(job.req, dtype=np.int64)
        short = self.free[uniq] < need
        if short.any():
            i, t = (int(x) for x in np.argwhere(short)[0])
            return self._short(int(uniq[i]), t, count[i], int(need[i, t]))
        nodes = tuple(map(self._node_ints.__getitem__, uniq.tolist()))
        return Allocation(nodes, tuple(count)), need

    def _short(self, node: int, t: int, units: int, need: int) -> str:
        return (
            f"node {self.system.node_names[node]} has {self.free[node, t]} {self.system.types[t]} "
            f"free, {units} units need {need}"
        )

    def take(self, job_id: str, alloc: Allocation, need: Demand) -> None:
        """Apply a checked allocation (`need` from `check`) of job `job_id`."""
        rows = alloc.nodes[0] if len(alloc.nodes) == 1 else np.asarray(alloc.nodes, dtype=np.intp)
        amounts = np.asarray(need, dtype=np.int64)
        self.free[rows] -= amounts
        self._held[job_id] = (rows, amounts)

    def release(self, job_id: str) -> None:
        """Give back what job `job_id` took."""
        rows, amounts = self._held.pop(job_id)
        self.free[rows] += amounts
