"""Dispatchers: baselines and CP dispatchers, all behind `Dispatcher.decide(snapshot)`."""

from __future__ import annotations

from .base import Decision, Dispatcher, Option, all_names, make_dispatcher, registered, registry

__all__ = ["Decision", "Dispatcher", "Option", "all_names", "make_dispatcher", "registered", "registry"]
