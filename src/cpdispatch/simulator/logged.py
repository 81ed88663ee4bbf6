"""The simulator's queue and running jobs: dicts whose snapshots cost O(1)."""

from __future__ import annotations

import weakref
from typing import Generic, TypeVar

from ..snapshot import LiveView

T = TypeVar("T")


class Logged(Generic[T]):
    """One of the simulator's dicts (queue, running jobs) with what its `LiveView`s need: the logs
    of items put in and taken out, and the last view, frozen before the dict changes if anyone
    still holds it (so a snapshot never changes, and building one costs O(1)).

    Once the logs outgrow the contents by far, they start afresh (new lists, holding the
    contents): memory stays proportional to the contents, and a dispatcher following the old
    lists sees new ones and reads the contents whole once.
    """

    #: Start new logs once they hold more than this + 4 x the contents.
    SLACK = 4096

    def __init__(self) -> None:
        self.items: dict[str, T] = {}
        self.added: list[T] = []
        self.removed: list[T] = []
        self._view: weakref.ref[LiveView[T]] | None = None

    def view(self) -> LiveView[T]:
        if len(self.added) > self.SLACK + 4 * len(self.items):
            self.added, self.removed = list(self.items.values()), []
        view = LiveView(self.items, self.added, self.removed)
        self._view = weakref.ref(view)
        return view

    def put(self, key: str, value: T) -> None:
        """Add (or replace) `key`; a replaced item is logged as taken out, then the new one as put in."""
        self._changing()
        old = self.items.get(key)
        if old is not None:
            self.removed.append(old)
        self.items[key] = value
        self.added.append(value)

    def pop(self, key: str) -> T:
        self._changing()
        value = self.items.pop(key)
        self.removed.append(value)
        return value

    def _changing(self) -> None:
        if self._view is not None:
            view = self._view()
            if view is not None:
                view.freeze()
            self._view = None
