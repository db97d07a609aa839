"""Compiled (numba) kernels for the per-pixel work of building an MRF from a photo: the GMM's
negative log density of every pixel colour, the squared colour differences of every grid edge,
and the edge list itself.

Each is a single pass that keep each pixel's few numbers in registers. numpy's versions build
``(G, m, C)`` and ``(edges, C)`` temporaries (a 12-megapixel photo: gigabytes of them, with
their page faults) and batched triangular solves; they made the model build three quarters of
the end-to-end time of ``segapp segment`` on a 3-megapixel photo.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)

#: Terms of a log-sum-exp this far below the largest are left out (exp(-40) is below half an
#: ulp of 1, the largest term's share).
_NEGLIGIBLE = -40.0


@_jit
def gmm_neg_log_likelihood(x, means, chol, log_norm):  # pragma: no cover
    """``-log sum_g exp(log_norm[g] - |chol[g]^-1 (x_i - means[g])|^2 / 2)`` for every row ``x_i``.

    Parameters
    ----------
    x : (m, C) float64 colours.
    means : (G, C) component means.
    chol : (G, C, C) lower Cholesky factors of the covariances.
    log_norm : (G,) ``log w_g - (log det S_g + C log 2 pi) / 2``.

    The Mahalanobis distance is a forward substitution per component; the sum over components
    is taken relative to the largest term (no overflow, no underflow to -inf).
    """
    m, c = x.shape
    g_count = means.shape[0]
    out = np.empty(m)
    y = np.empty(c)
    terms = np.empty(g_count)
    for i in range(m):
        top = -np.inf
        for g in range(g_count):
            maha = 0.0
            for a in range(c):
                s = x[i, a] - means[g, a]
                for b in range(a):
                    s -= chol[g, a, b] * y[b]
                y[a] = s / chol[g, a, a]
                maha += y[a] * y[a]
            t = log_norm[g] - 0.5 * maha
            terms[g] = t
            top = max(top, t)
        total = 0.0
        for g in range(g_count):
            # a term below exp(-40) changes a sum that holds 1 (the top term) by at most an ulp
            # (3 MP photo: 19 of 3e6 pixels, by one ulp), and most pixels are far from most
            # components: 0.8x the time
            if terms[g] - top > _NEGLIGIBLE:
                total += math.exp(terms[g] - top)
        out[i] = -(top + math.log(total))
    return out


@_jit
def _edge_count(h, w, offsets):  # pragma: no cover
    """Number of edges ``(r, c) -> (r + dr, c + dc)`` inside an ``h x w`` grid over ``offsets``."""
    total = 0
    for d in range(offsets.shape[0]):
        dr, dc = offsets[d, 0], offsets[d, 1]
        total += max(h - dr, 0) * max(w - abs(dc), 0)
    return total


@_jit
def edge_squared_differences(colours, offsets):  # pragma: no cover
    """``||c_p - c_q||^2`` of every grid edge, in the order of :func:`solver.mrf.graph.grid_edges`.

    ``colours`` is ``(H, W, C)``; ``offsets`` is ``(D, 2)`` ``(dr, dc)`` with ``dr >= 0``. For each
    offset in turn, the edges ``(r, c) -> (r + dr, c + dc)`` inside the grid, row by row.
    """
    h, w, ch = colours.shape
    out = np.empty(_edge_count(h, w, offsets))
    e = 0
    for d in range(offsets.shape[0]):
        dr, dc = offsets[d, 0], offsets[d, 1]
        c0, c1 = max(0, -dc), w - max(0, dc)
        for r in range(h - dr):
            for col in range(c0, c1):
                s = 0.0
                for a in range(ch):
                    diff = colours[r, col, a] - colours[r + dr, col + dc, a]
                    s += diff * diff
                out[e] = s
                e += 1
    return out


@_jit
def grid_edge_list(h, w, offsets):  # pragma: no cover
    """The ends of every grid edge, ``(lo, hi)`` int32, and whether each is diagonal, in the order
    of :func:`edge_squared_differences` (numpy's version builds an index grid and concatenates
    slices of it per direction: five full copies)."""
    total = _edge_count(h, w, offsets)
    lo = np.empty(total, np.int32)
    hi = np.empty(total, np.int32)
    diagonal = np.empty(total, np.bool_)
    e = 0
    for d in range(offsets.shape[0]):
        dr, dc = offsets[d, 0], offsets[d, 1]
        c0, c1 = max(0, -dc), w - max(0, dc)
        is_diag = dr != 0 and dc != 0
        for r in range(h - dr):
            for col in range(c0, c1):
                lo[e] = r * w + col
                hi[e] = (r + dr) * w + col + dc
                diagonal[e] = is_diag
                e += 1
    return lo, hi, diagonal
