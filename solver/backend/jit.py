"""The compiled kernels' decorators: every numba kernel of the solver is compiled by one of
these, so that the cache, the GIL and threading settings are the same everywhere.

- :data:`jit`: a kernel compiled to machine code on first call and cached on disk
  (``cache=True``), releasing the GIL (``nogil=True``) so that :mod:`solver.backend.threads`
  can run several at once; IEEE arithmetic (no ``fastmath``), so results do not depend on the
  compiler's reordering.
- :data:`parallel_jit`: the same with ``parallel=True``, for kernels whose outer loop is a
  ``numba.prange`` over blocks of pixels (numba's threads, ``NUMBA_NUM_THREADS``).
- :data:`inline_jit`: a small helper inlined into its callers' compiled code
  (``inline="always"``), where a call per pixel would cost more than the helper's work.
"""

from __future__ import annotations

import numba

__all__ = ["inline_jit", "jit", "parallel_jit"]

jit = numba.njit(cache=True, nogil=True)
parallel_jit = numba.njit(cache=True, nogil=True, parallel=True)
inline_jit = numba.njit(cache=True, nogil=True, inline="always")
