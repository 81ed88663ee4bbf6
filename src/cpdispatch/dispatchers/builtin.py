"""The built-in dispatchers: every name (aliases included) with the module that defines it.

This is the one table of built-in names: the registry imports a name's module from it on first
use, so a name imports only its own module (the CP ones import OR-Tools, half a second of a
baseline run), and `cpdispatch dispatchers` tells the CP family by it. Each class still carries
its own name and aliases (they register it); a test checks this table against them.
"""

from __future__ import annotations

import importlib

#: name -> module under `cpdispatch.dispatchers`: `baselines.` for a baseline, `cp.` for a CP dispatcher
HOMES: dict[str, str] = {
    "fifo": "baselines.queue_order", "sjf": "baselines.queue_order", "ljf": "baselines.queue_order",
    "easy": "baselines.easy", "easy-sjf": "baselines.easy", "conservative": "baselines.conservative",
    "slurm-backfill": "baselines.slurm_backfill",
    "pbs": "baselines.pbs",
    **dict.fromkeys(("hcp", "hcp1", "hcp2", "hcp3", "hcp19"), "cp.models.hcp.dispatcher"),
    "pcp20": "cp.models.pcp20.dispatcher",
    **dict.fromkeys(("pcp", "pcp1", "pcp2", "pcp3", "pcp19"), "cp.models.pcp19.dispatcher"),
    "eurora14": "cp.models.eurora14.dispatcher",
}
_PACKAGE = __name__.rpartition(".")[0]
_loaded = False


def is_cp(name: str) -> bool:
    """Whether `name` is a built-in CP dispatcher."""
    return HOMES.get(name, "").startswith("cp.")


def load_home(name: str) -> None:
    """Import the module of the built-in dispatcher `name` (all of them for an unknown name)."""
    home = HOMES.get(name)
    if home is None:
        load_all()
    else:
        importlib.import_module(f"{_PACKAGE}.{home}")


def load_all() -> None:
    """Import every built-in dispatcher module once, so that they register themselves."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in dict.fromkeys(HOMES.values()):
        importlib.import_module(f"{_PACKAGE}.{module}")
