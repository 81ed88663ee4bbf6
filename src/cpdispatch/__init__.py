"""cpdispatch: on-line HPC job dispatching with constraint programming.

The Python API (`cpdispatch.api`), imported on first use so that the command line starts fast::

    import cpdispatch as cpd
    system = cpd.System.preset("eurora")
    result = cpd.simulate(system, cpd.generate_eurora(3000, seed=1), dispatcher="pcp20")
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = {
    "simulate": "api", "read_workload": "api", "validate_jobs": "workloads.validation", "Result": "api",
    "generate_eurora": "workloads.generator", "System": "system", "Job": "job",
    "Snapshot": "snapshot", "Start": "snapshot", "Decision": "snapshot", "QueuedJob": "snapshot",
    "RunningJob": "snapshot", "Dispatcher": "dispatchers.base", "Option": "dispatchers.base",
    "Predictor": "predictors.base", "Workload": "workloads.base", "RefusedStartsWarning": "api",
    "DEFAULT_PREDICTOR": "api",
}


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_API[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["__version__", *_API]


def __dir__() -> list[str]:
    """The public names (imported on first use), not the module's own helpers."""
    return sorted(__all__)
