"""Compiled (numba) kernels of the MRF-to-BQP reduction: a matrix split by its fixed rows
(hard constraints, early fixing), and label weights from a K > 2 iterate."""

from __future__ import annotations

import numba
import numpy as np

from solver.backend.jit import jit, parallel_jit
from solver.backend.threads import threaded
from solver.mrf.build.stencil import column_at, place, row_length, row_value_at
from solver.mrf.polish.constrained_kernels import apart_ok

# :func:`split_by_fixed` can run on numba's threads (``parallel_jit``; see :func:`split_fixed`).
#: Rows per block of :func:`split_by_fixed`'s threads.
SPLIT_BLOCK = 8192
#: :func:`split_fixed` uses numba's threads from this many rows (a photo's finest levels); below,
#: one thread: after each parallel call OpenMP's workers spin for a few milliseconds, and a solve
#: makes many small splits (early fixing's restrictions), which would keep the other cores busy
#: spinning (measured: docs/decisions.md, Splits, fusions and the polish's bookkeeping).
SPLIT_THREAD_ROWS = 1_000_000


def split_fixed(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, hard: np.ndarray,
                k: int, thread_rows: int = SPLIT_THREAD_ROWS,
                grid: tuple[np.ndarray, np.ndarray] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """:func:`split_by_fixed` on numba's threads for a matrix of at least ``thread_rows`` rows,
    on one thread below that; the same outputs either way. Through
    :func:`solver.backend.threads.threaded` (one threaded kernel at a time in a process).

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray
        A symmetric CSR matrix (not read with ``grid``).
    hard : numpy.ndarray
        ``(n,)`` int64: 0 for a free row, else the label (1-based) it is fixed to.
    k : int
        Columns of the coupling (labels above ``k`` count as fixed to no label).
    thread_rows : int
        Rows from which the split runs on threads (:data:`SPLIT_THREAD_ROWS`).
    grid : tuple of numpy.ndarray, optional
        ``(gw, geom)``: the matrix is the Laplacian of a grid's weights
        (:func:`solver.mrf.build.stencil.grid_view`), read from them instead of CSR arrays,
        with the same outputs.

    Returns
    -------
    tuple
        ``(indptr, indices, data, coupling, same)``, see :func:`split_by_fixed`.
    """
    gw, geom = grid if grid is not None else (np.empty(0), np.zeros(13, np.int64))
    return threaded(split_by_fixed, indptr, indices, data, gw, geom, hard, k,
                    threads=None if hard.size >= thread_rows else 1)


@jit
def label_weights(x, k):  # pragma: no cover
    """``(m, k)`` float32 label weights from pixel-major ``x`` (``(m * k,)``, K > 2) in one pass:
    ``np.clip(x.astype(np.float32), 0, 1)`` divided by each pixel's sum, or ``1/k`` where that
    sum is not positive (or NaN). The sums are added in label order in float32, which is
    numpy's own order for fewer than 8 labels."""
    m = x.size // k
    out = np.empty((m, k), np.float32)
    even = np.float32(1.0 / k)
    zero, one = np.float32(0.0), np.float32(1.0)
    for i in range(m):
        s = zero
        for c in range(k):
            v = np.float32(x[i * k + c])
            if v < zero:
                v = zero
            elif v > one:
                v = one
            out[i, c] = v
            s += v
        if s > zero:
            for c in range(k):
                out[i, c] = out[i, c] / s
        else:
            for c in range(k):
                out[i, c] = even
    return out


@parallel_jit
def split_by_fixed(indptr, indices, data, gw, geom, hard, k):  # pragma: no cover
    """A symmetric matrix (the Laplacian, or an objective's ``A``; CSR arrays, or a grid's
    weights where ``gw`` is not empty, :mod:`solver.mrf.build.stencil`) split by the fixed rows
    (``hard > 0``), in two passes over its entries.

    Returns ``L_ff`` over the free rows as CSR arrays (columns renumbered in row order), the
    free rows' coupling to the fixed labels ``L_fc X_c`` as an ``(m, k)`` array (``X_c`` one-hot
    rows of the fixed labels), and ``X_c' L_cc X_c = sum of L_ij over fixed i, j of one label``.
    Rows fixed to a label above ``k`` count as fixed, but as a zero row of ``X_c``: with
    ``k = 1`` that is the restriction of a K = 2 objective in the weight of label 1 alone.

    Blocks of :data:`SPLIT_BLOCK` rows run on numba's threads (a count pass, then the fill);
    the last sum is added block by block in block order, so every output is the same on any
    number of threads.
    """
    n = hard.size
    blocks = (n + SPLIT_BLOCK - 1) // SPLIT_BLOCK
    rows_in = np.zeros(blocks + 1, np.int64)  # free rows, then entries, before each block
    nnz_in = np.zeros(blocks + 1, np.int64)
    for blk in numba.prange(blocks):
        m_b = 0
        nnz_b = 0
        for i in range(blk * SPLIT_BLOCK, min(n, (blk + 1) * SPLIT_BLOCK)):
            if hard[i] == 0:
                m_b += 1
                _, flags_t = place(gw, geom, i)
                for t in range(row_length(indptr, gw, i)):
                    j = column_at(indptr, indices, gw, geom, i, flags_t, t)
                    if j >= 0 and hard[j] == 0:
                        nnz_b += 1
        rows_in[blk + 1] = m_b
        nnz_in[blk + 1] = nnz_b
    for blk in range(blocks):
        rows_in[blk + 1] += rows_in[blk]
        nnz_in[blk + 1] += nnz_in[blk]
    m = rows_in[blocks]
    pos = np.empty(n, np.int64)
    for blk in numba.prange(blocks):
        r = rows_in[blk]
        for i in range(blk * SPLIT_BLOCK, min(n, (blk + 1) * SPLIT_BLOCK)):
            if hard[i] == 0:
                pos[i] = r
                r += 1
            else:
                pos[i] = -1
    ff_indptr = np.zeros(m + 1, np.int64)
    ff_indices = np.empty(nnz_in[blocks], np.int64)
    ff_data = np.empty(nnz_in[blocks])
    coupling = np.zeros((m, k))
    same_in = np.zeros(blocks)
    for blk in numba.prange(blocks):
        r = rows_in[blk]
        q = nnz_in[blk]
        same = 0.0
        for i in range(blk * SPLIT_BLOCK, min(n, (blk + 1) * SPLIT_BLOCK)):
            if hard[i] == 0:
                row_t, flags_t = place(gw, geom, i)
                for t in range(row_length(indptr, gw, i)):
                    j = column_at(indptr, indices, gw, geom, i, flags_t, t)
                    if j < 0:
                        continue
                    if hard[j] == 0:
                        ff_indices[q] = pos[j]
                        ff_data[q] = row_value_at(indptr, data, gw, geom, i, row_t, flags_t, t)
                        q += 1
                    elif hard[j] <= k:
                        coupling[r, hard[j] - 1] += row_value_at(indptr, data, gw, geom, i, row_t,
                                                                 flags_t, t)
                r += 1
                ff_indptr[r] = q
            elif hard[i] <= k:
                row_t, flags_t = place(gw, geom, i)
                for t in range(row_length(indptr, gw, i)):
                    j = column_at(indptr, indices, gw, geom, i, flags_t, t)
                    if j >= 0 and hard[j] == hard[i]:
                        same += row_value_at(indptr, data, gw, geom, i, row_t, flags_t, t)
        same_in[blk] = same
    same = 0.0
    for blk in range(blocks):
        same += same_in[blk]
    return ff_indptr, ff_indices, ff_data, coupling, same


@jit
def touching_apart(indptr, indices, gw, geom, lab, apart, pixels):  # pragma: no cover
    """``(m,)`` bool over ``pixels``: those with a neighbour (in the graph arrays,
    :mod:`solver.mrf.build.stencil`) whose label is apart from theirs (``lab`` 0-based,
    ``apart`` ``(K, K)`` symmetric): those
    :func:`solver.mrf.polish.constrained_kernels.apart_ok` refuses their own label. Only the
    pixels asked for are looked at (a band level's free pixels, not the image: at 1e5 pixels
    the whole image took 7 ms a call, and early fixing asks at every restriction)."""
    out = np.zeros(pixels.size, np.bool_)
    for q in range(pixels.size):
        i = pixels[q]
        out[q] = not apart_ok(indptr, indices, gw, geom, lab, apart, i, lab[i])
    return out
