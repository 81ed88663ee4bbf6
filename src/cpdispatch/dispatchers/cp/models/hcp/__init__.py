"""HCP'19 and its ablation: `model` (the scheduling half) and `dispatcher` (hcp, hcp1-3)."""

from .dispatcher import Hcp, Hcp1, Hcp2, Hcp3
from .model import HcpModel

__all__ = ["Hcp", "Hcp1", "Hcp2", "Hcp3", "HcpModel"]
