"""Interruption as a normal event: SIGINT and SIGTERM stop a run at its next event, even in the
middle of a long CP-SAT solve, so that what was simulated can still be written.

A Python signal handler runs only when the main thread returns to the interpreter, which it does
not do while CP-SAT solves (the solver releases the GIL and runs in C++). So `handling()` also
points the signal wake-up file descriptor at a pipe read by a daemon thread: it sees the signal at
once and stops every solver registered with `solving()` (CP-SAT's own SIGINT handler is turned
off wherever a solver is built, or it would swallow the first Ctrl-C).

Outside `handling()` nothing changes: in a notebook, Ctrl-C raises KeyboardInterrupt as usual.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: The signal received while handling (None: none); read by the simulator at every event.
received: int | None = None
#: True while a signal should stop the run gracefully (the simulation and the writing of its
#: outputs); otherwise a signal raises `Interrupted` where the main thread is.
graceful = False
_solvers: set[Any] = set()
_lock = threading.Lock()
_signalled = threading.Event()  # set by the watcher thread as soon as a signal arrives


class Interrupted(BaseException):
    """A signal arrived where nothing can be kept (reading, checking): the command stops."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + signum


def _on_signal(signum: int, frame: Any) -> None:
    """Runs in the main thread; a second signal while stopping changes nothing."""
    global received
    if received is None:
        received = signum
        if not graceful:
            raise Interrupted(signum)


def _stop_solvers(done: threading.Event) -> None:
    """Keep stopping the registered solvers until `handling` ends (a solver that starts just
    after the signal is caught by the next round). Only the main thread's handler sets
    `received`: it alone decides whether the signal stops gracefully or raises."""
    _signalled.set()
    while not done.is_set():
        with _lock:
            solvers = list(_solvers)
        for solver in solvers:
            solver.stop_search()
        done.wait(0.05)


def _watch(fd: int, done: threading.Event) -> None:
    """Owns the pipe's read end: it ends (and closes it) when the write end is closed."""
    try:
        while data := os.read(fd, 1):
            if data[0] in SIGNALS:  # the wake-up fd carries every signal Python handles
                _stop_solvers(done)
                return
    finally:
        os.close(fd)


def stopping() -> bool:
    """A signal came: solvers should not start long searches (true before the main thread's
    handler has run, while it waits for a solve to return)."""
    return received is not None or _signalled.is_set()


@contextmanager
def handling() -> Iterator[None]:
    """Within: SIGINT/SIGTERM are recorded in `received` (and stop solvers) instead of killing
    the process. Main thread only."""
    global received
    previous = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    done = threading.Event()
    threading.Thread(target=_watch, args=(read_fd, done), daemon=True, name="cpdispatch-signals").start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        for s, handler in previous.items():
            signal.signal(s, handler)
        received = None
        done.set()
        _signalled.clear()
        os.close(write_fd)  # a watcher still reading gets end-of-file: it closes its end and ends


@contextmanager
def stopping_gracefully() -> Iterator[None]:
    """Within: a signal only sets `received`; the code checks it where stopping is safe."""
    global graceful
    before, graceful = graceful, True
    try:
        yield
    finally:
        graceful = before


@contextmanager
def solving(solver: Any) -> Iterator[None]:
    """Register a CP-SAT solver for the duration of its solve, so that a signal stops it."""
    with _lock:
        _solvers.add(solver)
    try:
        yield
    finally:
        with _lock:
            _solvers.discard(solver)
