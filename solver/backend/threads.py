"""The one door to numba's threaded kernels: a process-wide lock around every call.

numba runs a ``parallel=True`` kernel on its threading layer: TBB or OpenMP where it can load
one, else its own ``workqueue`` layer, which is not thread-safe: two Python threads launching
parallel kernels at once abort the process ("Concurrent access has been detected"). The app does
that (its warm-up thread builds problems while the first solve runs in a worker thread; a solve
given up on keeps running beside the next), and a library user may too. Every threaded kernel
(the photo's build passes, the pyramid's coarsening, the large fixed/free splits, the energies of
a photo, the polish's ICM and relaxations) is therefore called through :func:`threaded`, which
holds :data:`LOCK`. The calls are one long pass each, so waiting for
another thread's costs little, and two such passes would compete for the same cores anyway.

Importing this module also bounds how long OpenMP's idle threads spin (:data:`SPIN_COUNT`),
unless the user has chosen a wait policy: it is imported before any threaded kernel runs, so
before numba loads its OpenMP layer, which reads the setting once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import numba

__all__ = ["LOCK", "SPIN_COUNT", "bound_spin", "threaded"]

#: Held while a threaded kernel runs.
LOCK = threading.Lock()

#: Spins of an idle OpenMP (libgomp) thread before it sleeps, where the environment sets
#: neither ``GOMP_SPINCOUNT`` nor ``OMP_WAIT_POLICY``. libgomp's own default, 300 000 spins,
#: keeps every waiting thread of numba's parallel loops on a core for about a millisecond
#: after each loop; with another busy process on the machine they take that core from the
#: thread that has work, at every one of the hundreds of loops of a solve. Measured on two
#: cores with one busy process (2026-11-28): a K = 2 solve at 1e5 pixels 7.2 s instead of
#: 0.2 s, at 5e5 11.3 s instead of 1.0 s; with 10 000 spins 0.5 s and 2.5 s, and on an idle
#: machine times within the default's run-to-run spread (docs/decisions.md, "OpenMP's idle
#: threads").
SPIN_COUNT = "10000"


def bound_spin(environ: dict[str, str] | None = None) -> bool:
    """Set ``GOMP_SPINCOUNT`` to :data:`SPIN_COUNT` in ``environ`` (default: the process's
    environment) unless it or ``OMP_WAIT_POLICY`` is already set.

    It acts only if numba has not yet loaded its OpenMP layer (nor anything else libgomp),
    which reads the environment once.

    Parameters
    ----------
    environ : dict, optional
        The environment to change.

    Returns
    -------
    bool
        Whether it set the spin count.
    """
    env = os.environ if environ is None else environ
    if "GOMP_SPINCOUNT" in env or "OMP_WAIT_POLICY" in env:
        return False
    env["GOMP_SPINCOUNT"] = SPIN_COUNT
    return True


bound_spin()


def threaded(kernel: Callable[..., Any], *args: Any, threads: int | None = None) -> Any:
    """``kernel(*args)`` for a numba ``parallel=True`` kernel, holding :data:`LOCK`.

    Parameters
    ----------
    kernel : callable
        The compiled kernel.
    *args
        Its arguments.
    threads : int, optional
        Run it on this many of numba's threads (the calling thread's setting is restored
        afterwards); default: numba's current setting.

    Returns
    -------
    Any
        What the kernel returns.
    """
    with LOCK:
        if threads is None:
            return kernel(*args)
        before = numba.get_num_threads()
        numba.set_num_threads(threads)  # (numba's setting is per calling thread)
        try:
            return kernel(*args)
        finally:
            numba.set_num_threads(before)
