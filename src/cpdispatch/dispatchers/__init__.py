"""Dispatchers: baselines and CP dispatchers, all behind `Dispatcher.decide(snapshot)`."""

from __future__ import annotations

import importlib

from .base import Decision, Dispatcher, Option, all_names, make_dispatcher, registered, registry

_MODULES = ("queue_order", "easy", "pbs", "cp.hcp", "cp.pcp20", "cp.pcp19", "cp.eurora14")
#: Where each built-in name lives, so that using one imports only its module (the CP ones import
#: OR-Tools, half a second of a baseline run). A test checks this against the registry.
HOMES = {
    **dict.fromkeys(("fifo", "sjf", "ljf"), "queue_order"), "easy": "easy", "pbs": "pbs",
    **dict.fromkeys(("hcp", "hcp1", "hcp2", "hcp3", "hcp19"), "cp.hcp"), "pcp20": "cp.pcp20",
    **dict.fromkeys(("pcp", "pcp1", "pcp2", "pcp3", "pcp19"), "cp.pcp19"), "eurora14": "cp.eurora14",
}
_loaded = False


def load_home(name: str) -> None:
    """Import the module of the built-in dispatcher `name` (all of them for an unknown name)."""
    home = HOMES.get(name)
    if home is None:
        load_all()
    else:
        importlib.import_module(f"{__name__}.{home}")


def load_all() -> None:
    """Import every dispatcher module once so that they register themselves."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _MODULES:
        importlib.import_module(f"{__name__}.{mod}")


__all__ = ["Decision", "Dispatcher", "Option", "all_names", "make_dispatcher", "registered", "registry"]
