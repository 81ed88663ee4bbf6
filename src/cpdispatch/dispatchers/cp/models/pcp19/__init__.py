"""PCP'19 and its ablation: `model` (per-node allocation in CP) and `dispatcher` (pcp, pcp1-3)."""

from .dispatcher import Pcp, Pcp1, Pcp2, Pcp3, PerNodeDispatcher
from .model import PerNodeModel, restricted_greedy

__all__ = ["Pcp", "Pcp1", "Pcp2", "Pcp3", "PerNodeDispatcher", "PerNodeModel", "restricted_greedy"]
