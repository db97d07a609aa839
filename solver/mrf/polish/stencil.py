"""The Laplacian of an 8-neighbour grid as a stencil: each pixel's eight off-diagonal entries by
direction, for the pixel moves that visit scattered pixels.

A move evaluated through the CSR arrays reads ``indptr[i]``, then ``indices[p]``, then the
neighbours' labels: three loads, each waiting for the one before. On the pixels a descent visits
(scattered over an image larger than the caches) those waits are most of its time. With the
stencil a neighbour's index is ``i + offset``, so the neighbours' labels and weights are loaded
at once (measured: docs/decisions.md, The polish reads the Laplacian as a stencil).

The stencil holds the CSR entries in the CSR's own (increasing column) order, so every sum over
a pixel's neighbours is added in the same order as through the CSR arrays and the results are
bit-identical. A pixel with no entry for some direction (the image border, or an edge the matrix
leaves out) has :data:`NO_EDGE` there. A Laplacian that is not such a grid (an entry off the
eight directions, a positive off-diagonal entry, unsorted or repeated columns) gets an empty
stencil, and the kernels fall back to the CSR arrays.
"""

from __future__ import annotations

import weakref
from typing import Any

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)

#: Stencil entry of a direction with no edge. Real entries are the Laplacian's off-diagonal
#: ones, ``-w_ij <= 0``, so a positive value cannot be one.
NO_EDGE = 1.0

#: Largest image (pixels) that gets a stencil: 64 bytes a pixel, kept as long as its matrix, on
#: top of the CSR arrays' 108. Above this (256 MiB of stencil) the kernels read the CSR arrays,
#: so a 24-megapixel photo does not carry another 1.5 GB.
MAX_PIXELS = 1 << 22

#: Stencils by ``id`` of their matrix (scipy's matrices cannot be weak dictionary keys); an entry
#: goes when its matrix does.
_CACHE: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def grid_offsets(width: int) -> np.ndarray:
    """The index offsets of the eight neighbours of a pixel on a grid ``width`` columns wide, in
    increasing order: north-west, north, north-east, west, east, south-west, south, south-east.

    Parameters
    ----------
    width : int
        Columns of the grid (at least 3, so the offsets are distinct and ordered).

    Returns
    -------
    numpy.ndarray
        ``(8,)`` int64.
    """
    w = int(width)
    return np.array([-w - 1, -w, -w + 1, -1, 1, w - 1, w, w + 1], dtype=np.int64)


@_jit
def stencil_from_csr(indptr, indices, data, height, width):  # pragma: no cover
    """``(n, 8)`` off-diagonal entries of each row by direction (:data:`NO_EDGE` where absent),
    and whether the matrix is such a grid (``width`` at least 3); on False the array is not to
    be used."""
    n = height * width
    out = np.full((n, 8), NO_EDGE)
    full = np.array([-width - 1, -width, -width + 1, -1, 0, 1, width - 1, width, width + 1])
    for r in range(height):
        for col in range(width):
            i = r * width + col
            lo = indptr[i]
            if indptr[i + 1] - lo == 9 and 0 < col < width - 1:
                # an inner pixel with all nine entries (most of them): check and copy
                ok = True
                for q in range(9):
                    ok &= np.int64(indices[lo + q]) - i == full[q]
                    ok &= q == 4 or data[lo + q] <= 0.0
                if ok:
                    for q in range(4):
                        out[i, q] = data[lo + q]
                        out[i, q + 4] = data[lo + q + 5]
                    continue
            last = -1
            for p in range(indptr[i], indptr[i + 1]):
                j = np.int64(indices[p])
                if j == i:
                    continue
                diff = j - i
                d = -1  # the direction whose offset is diff (offsets[d] == diff), if any
                if -width - 1 <= diff <= -width + 1:
                    d = diff + width + 1
                elif diff == -1:
                    d = 3
                elif diff == 1:
                    d = 4
                elif width - 1 <= diff <= width + 1:
                    d = diff - width + 6
                # a direction that leaves the grid (across the left or right border) is no edge
                left = d == 0 or d == 3 or d == 5
                right = d == 2 or d == 4 or d == 7
                if (d < 0 or d <= last or not data[p] <= 0.0 or (left and col == 0)
                        or (right and col == width - 1) or j < 0 or j >= n):
                    return out, False
                out[i, d] = data[p]
                last = d
    return out, True


@_jit
def degree(indptr, stencil, i):  # pragma: no cover
    """How many slots pixel ``i`` has for :func:`neighbour`: 8 through the stencil, else the
    entries of its CSR row."""
    return 8 if stencil.shape[0] else indptr[i + 1] - indptr[i]


@_jit
def neighbour(indptr, indices, stencil, offsets, i, t):  # pragma: no cover
    """Pixel ``i``'s neighbour in slot ``t`` (``0 <= t < degree``), or -1 for none: the direction
    ``t`` through the stencil unless it is empty (-1 where there is no edge), else the ``t``-th
    entry of its CSR row (-1 for the diagonal one). Either way in the CSR's order.

    A loop asks for the neighbours through this function and writes its own arrays: numba
    compiles a helper that only reads to the same code as the loop written out, while one that
    writes the caller's arrays (a queue push) makes such loops much slower (measured:
    docs/decisions.md, Helpers inside compiled loops)."""
    if stencil.shape[0]:
        return i + offsets[t] if stencil[i, t] <= 0.0 else -1
    j = indices[indptr[i] + t]
    return j if j != i else -1


@numba.njit(cache=True, nogil=True, inline="always")
def best_label_stencil(stencil, offsets, unary, two_lam, lab, i, agree):  # pragma: no cover
    """:func:`solver.mrf.polish.icm_kernels.best_label` through the stencil: pixel ``i``'s
    cheapest label given its neighbours', keeping its own unless another is cheaper by more than
    a relative ``1e-12``; the same arithmetic in the same order. ``agree`` is ``(K,)`` scratch."""
    k = unary.shape[1]
    total = 0.0
    for c in range(k):
        agree[c] = 0.0
    for d in range(8):
        v = stencil[i, d]
        if v <= 0.0:
            total -= v
            agree[lab[i + offsets[d]]] -= v
    return choose_label(unary, two_lam, i, lab[i], total, agree)


@numba.njit(cache=True, nogil=True, inline="always")
def choose_label(unary, two_lam, i, cur, total, agree):  # pragma: no cover
    """Pixel ``i``'s label given the weight ``total`` of its edges and ``-agree[c]``, the weight
    of those to neighbours labelled ``c``: the cheapest, but ``cur`` (its own) unless another is
    cheaper by more than a relative ``1e-12``. Shared by :func:`best_label_stencil` and
    :func:`solver.mrf.polish.icm_kernels.best_label`, so both decide alike."""
    cur_cost = unary[i, cur] + two_lam * (total - agree[cur])
    best, best_cost = cur, cur_cost
    for c in range(unary.shape[1]):
        cost = unary[i, c] + two_lam * (total - agree[c])
        if cost < best_cost:
            best, best_cost = c, cost
    if best != cur and best_cost < cur_cost - 1e-12 * max(1.0, abs(cur_cost)):
        return best
    return cur


def grid_stencil(problem: Any, max_pixels: int = MAX_PIXELS) -> tuple[np.ndarray, np.ndarray]:
    """The stencil of ``problem.laplacian`` and its offsets, made once per matrix (the first call
    for a matrix decides, and every kernel call after it reads the same arrays).

    Parameters
    ----------
    problem : MRFProblem
        Any object with ``shape`` ``(H, W)`` and an ``H W x H W`` CSR ``laplacian``.
    max_pixels : int
        Largest image that gets a stencil (:data:`MAX_PIXELS`).

    Returns
    -------
    stencil : numpy.ndarray
        ``(n, 8)`` float64 (see the module docstring), or ``(0, 8)`` when the matrix is not an
        8-neighbour grid on ``shape`` or the image has more than :data:`MAX_PIXELS` pixels
        (then the kernels use the CSR arrays).
    offsets : numpy.ndarray
        ``(8,)`` int64 from :func:`grid_offsets`.
    """
    L = problem.laplacian
    got = _CACHE.get(id(L))
    if got is None:
        height, width = (int(s) for s in problem.shape)
        offsets = grid_offsets(width)
        stencil = np.empty((0, 8))
        n = height * width
        if width >= 3 and L.shape == (n, n) and n <= max_pixels:
            out, ok = stencil_from_csr(L.indptr, L.indices, L.data, height, width)
            stencil = out if ok else stencil
        got = (stencil, offsets)
        _CACHE[id(L)] = got
        weakref.finalize(L, _CACHE.pop, id(L), None)
    return got
