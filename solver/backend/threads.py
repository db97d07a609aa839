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
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numba

__all__ = ["LOCK", "threaded"]

#: Held while a threaded kernel runs.
LOCK = threading.Lock()


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
