"""Say when the solver compiles its kernels, so a front end can tell its user why it waits.

numba compiles each kernel on its first call and keeps the machine code in an on-disk cache. The
first run on a machine (or after an upgrade) therefore spends about a minute compiling
(measured: docs/decisions.md, The first run's compile), and every later process loads the cache in
about half a second. numba announces a real compile through its event API
(``numba:compile``), which a load from the cache does not trigger; :func:`first_compile_notice`
turns the first such event into one call, which is how the command line and the application
say "compiling, first run only" instead of sitting silent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from numba.core import event

__all__ = ["COMPILE_MESSAGE", "first_compile_notice"]

log = logging.getLogger(__name__)

#: What the front ends say when compiling starts.
COMPILE_MESSAGE = ("compiling the solver's kernels for this machine (first run only, about a "
                   "minute; later runs load them from numba's cache)")


class _FirstCompile(event.Listener):
    """Calls ``callback`` at the first compile that starts while installed, and never again."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.fired = False
        self._lock = threading.Lock()  # compiles may start in several threads at once

    def on_start(self, ev: event.Event) -> None:
        with self._lock:
            if self.fired:
                return
            self.fired = True
        log.debug(COMPILE_MESSAGE)
        self.callback()

    def on_end(self, ev: event.Event) -> None:
        pass


@contextmanager
def first_compile_notice(callback: Callable[[], None]) -> Iterator[_FirstCompile]:
    """Call ``callback()`` once, when the first numba compile starts inside the block.

    Parameters
    ----------
    callback : callable
        Called with no arguments, in the thread that compiles (any thread of the process, as
        numba's listeners are process-wide), at most once. Loads from the on-disk cache do not
        count, so with a warm cache it is never called.

    Yields
    ------
    object
        The listener; its ``fired`` attribute says whether anything compiled.
    """
    listener = _FirstCompile(callback)
    event.register("numba:compile", listener)
    try:
        yield listener
    finally:
        event.unregister("numba:compile", listener)
