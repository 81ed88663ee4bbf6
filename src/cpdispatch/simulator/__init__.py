"""The discrete-event simulator (see `core`): clock, cluster state, accounting, event loop."""

from .clock import STALL_ATTEMPTS, EventClock
from .cluster import Cluster
from .core import SimOptions, Simulator, SnapshotHook, simulate
from .logged import Logged

__all__ = ["STALL_ATTEMPTS", "Cluster", "EventClock", "Logged", "SimOptions", "Simulator", "SnapshotHook", "simulate"]
