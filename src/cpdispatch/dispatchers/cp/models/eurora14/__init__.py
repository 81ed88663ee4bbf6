"""The 2014 Eurora dispatcher: `dispatcher` (its objectives, composites and phases); its model is
`pcp19`'s per-node model over the full node capacities."""

from .dispatcher import OBJECTIVES, Eurora14, composite_bounds, tolerance_bound

__all__ = ["OBJECTIVES", "Eurora14", "composite_bounds", "tolerance_bound"]
