"""Dispatchers: baselines and CP dispatchers, all behind `Dispatcher.decide(snapshot)`."""

from __future__ import annotations

import importlib

from .base import Decision, Dispatcher, Option, all_names, make_dispatcher, registered, registry

_MODULES = ("queue_order", "easy", "pbs", "cp.hcp", "cp.pcp20", "cp.pcp19", "cp.eurora14")
_loaded = False


def load_all() -> None:
    """Import every dispatcher module once so that they register themselves."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _MODULES:
        importlib.import_module(f"{__name__}.{mod}")


__all__ = ["Decision", "Dispatcher", "Option", "all_names", "make_dispatcher", "registered", "registry"]
