"""Compiled (numba) steps of :class:`solver.admm.splits.PairSplit` on the CPU: the projection
of every pair on its half-plane, and the largest excess of a vector's rows, in one pass each
instead of numpy's temporaries (the same arithmetic)."""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True, fastmath=False)


@_jit
def pair_prox(v, second, bound, out):  # pragma: no cover
    """``out``: each pair ``(v[2r], v[2r + 1])`` projected on ``s + second[r] t <= bound[r]``."""
    for r in range(bound.size):
        s, t = v[2 * r], v[2 * r + 1]
        e = s + second[r] * t - bound[r]
        if e > 0.0:
            cut = e / (1.0 + second[r])
            out[2 * r] = s - cut
            out[2 * r + 1] = t - second[r] * cut
        else:
            out[2 * r] = s
            out[2 * r + 1] = t
    return out


@_jit
def pair_excess(x, first, second, bound):  # pragma: no cover
    """``max_r (x[first[r]] + x[second[r]] - bound[r])`` (no second entry where
    ``second[r] < 0``), at least 0."""
    worst = 0.0
    for r in range(bound.size):
        e = x[first[r]] - bound[r]
        j = second[r]
        if j >= 0:
            e += x[j]
        if e > worst:
            worst = e
    return worst
