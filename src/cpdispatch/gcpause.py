"""Pause Python's cycle collector around bulk work that allocates millions of acyclic objects
(reading a 450k-job trace, writing 400k CSV rows): full collections over the large live heap find
nothing and cost 20-60% of the time."""

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
