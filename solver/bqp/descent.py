"""Greedy one- and two-flip descent: a cheap local improvement of a binary point of
``x'Ax + b'x``."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import scipy.sparse as sp

log = logging.getLogger(__name__)


def unit_scale(*arrays: Any) -> float:
    """The power of two ``s = 2**(10 j)`` that brings the largest absolute entry ``m`` of the
    arrays into ``[2**-5, 2**5)``.

    Dividing by a power of two is exact in floating point (away from underflow and overflow), so
    ``A / s`` and ``b / s`` are the same problem at unit scale, on which absolute tolerances (such
    as ``1e-12``) mean the same thing whatever the caller's scale. Problems already near unit
    scale (``m`` in ``[1/32, 32)``) get ``s = 1`` and are computed exactly as given.

    Parameters
    ----------
    *arrays : array_like
        Dense arrays (for a sparse matrix, pass its ``data``).

    Returns
    -------
    float
        ``s``; 1.0 when every entry is zero (or there are none).
    """
    m = 0.0
    for a in arrays:
        a = np.asarray(a)
        if a.size:
            m = max(m, float(a.max()), -float(a.min()))
    if not m > 0.0 or not math.isfinite(m):
        return 1.0
    e = math.frexp(m)[1] - 1  # m in [2**e, 2**(e + 1))
    return math.ldexp(1.0, 10 * math.floor((e + 5) / 10))


def one_flip_descent(A: Any, b: np.ndarray, x: np.ndarray, max_flips: int | None = None,
                     tol: float | None = None) -> tuple[np.ndarray, float, int]:
    """Flip single variables, then coupled pairs, while that lowers ``x'Ax + b'x``.

    Flipping ``x_i`` by ``delta_i = 1 - 2 x_i`` changes the objective by
    ``g_i = delta_i (2 (Ax)_i + b_i) + A_ii``; flipping ``i`` and ``j`` together changes it by
    ``g_i + g_j + 2 delta_i delta_j A_ij``. At a one-flip local minimum (all ``g >= 0``) only pairs
    with ``A_ij != 0`` can improve, so each pair search costs one pass over the non-zeros of ``A``.
    The best move is taken first; ``Ax`` is updated by one column per flip.

    Parameters
    ----------
    A : scipy sparse matrix or ndarray, shape (n, n)
        Symmetric.
    b : ndarray, shape (n,)
    x : ndarray of {0, 1}, shape (n,)
        Start point (not modified).
    max_flips : int, optional
        Limit on the number of flips (default ``n``).
    tol : float, optional
        A move is taken only when it lowers the objective by more than ``tol``, so rounding noise
        cannot make flips cycle. Default: ``1e-12`` times the problem's scale
        (:func:`unit_scale` of ``A`` and ``b``), so the same moves are made when ``A`` and ``b``
        are scaled together.

    Returns
    -------
    x : ndarray
        The improved point.
    change : float
        Objective change (<= 0).
    flips : int
        Number of flips made.
    """
    x = np.asarray(x, dtype=np.float64).copy()
    n = x.size
    csc = sp.csc_matrix(A)
    coo = sp.triu(csc, k=1).tocoo()
    diag = csc.diagonal()
    ax = np.asarray(csc @ x).ravel()
    limit = n if max_flips is None else max_flips
    if tol is None:
        tol = 1e-12 * unit_scale(csc.data, b)
    change, flips = 0.0, 0

    def flip(i: int) -> None:
        d = 1.0 - 2.0 * x[i]
        x[i] += d
        ax[csc.indices[csc.indptr[i]:csc.indptr[i + 1]]] += d * csc.data[csc.indptr[i]:csc.indptr[i + 1]]

    while flips < limit:
        delta = 1.0 - 2.0 * x
        gain = delta * (2.0 * ax + b) + diag
        i = int(np.argmin(gain))
        if gain[i] < -tol:
            flip(i)
            change += float(gain[i])
            flips += 1
            continue
        if coo.nnz == 0:
            break
        pair = gain[coo.row] + gain[coo.col] + 2.0 * delta[coo.row] * delta[coo.col] * coo.data
        m = int(np.argmin(pair))
        if pair[m] >= -tol:
            break
        flip(int(coo.row[m]))
        flip(int(coo.col[m]))
        change += float(pair[m])
        flips += 2
    if flips:
        log.debug("flip descent: %d flips, objective change %.6g", flips, change)
    return x, change, flips
