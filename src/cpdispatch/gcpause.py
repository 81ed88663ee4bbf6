"""Pause or relax Python's cycle collector around bulk work that allocates millions of acyclic
objects (reading a 450k-job trace, writing 400k CSV rows, simulating it): full collections over the
large live heap find nothing and cost 5-60% of the time."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextmanager
def rare_gc(young: int = 100_000) -> Iterator[None]:
    """Collect cycles rarely (a young generation of `young` objects, few full collections), the
    objects alive now set aside for good: for long runs that may still make some garbage cycles
    (a dispatcher's exceptions, solver objects), where pausing the collector outright could not
    bound memory."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(young, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
