"""Compiled (numba) kernels for the per-pixel work of building an MRF from a photo: the GMM's
negative log density of every pixel colour, the squared colour differences of every grid edge,
and the edge list itself.

Each is a single pass that keeps each pixel's few numbers in registers, where numpy's versions
build ``(G, m, C)`` and ``(edges, C)`` temporaries (a 12-megapixel photo: gigabytes of them, with
their page faults) and batched triangular solves (measured: docs/decisions.md, The photo's build).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from solver.backend.jit import inline_jit, jit, parallel_jit

# The per-pixel passes of a photo's build run on numba's threads (``parallel_jit``,
# ``NUMBA_NUM_THREADS``, all cores by default): one long loop per call, unlike ADMM's thousands
# of short ones (see "Threads" in the README), with each pixel's arithmetic independent of the
# split.

#: Rows (or pixels) per block of a threaded pass.
BLOCK = 4096

#: Terms of a log-sum-exp this far below the largest are left out (exp(-40) is below half an
#: ulp of 1, the largest term's share).
_NEGLIGIBLE = -40.0


@inline_jit
def _log_terms(x, i, means, chol, log_norm, y, terms):  # pragma: no cover
    """``terms[g] = log_norm[g] - |chol[g]^-1 (x_i - means[g])|^2 / 2`` for every component;
    returns the largest. The Mahalanobis distance is a forward substitution per component
    (``y`` is ``(C,)`` scratch). Inlined into the callers' pixel loops."""
    c = x.shape[1]
    top = -np.inf
    for g in range(means.shape[0]):
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
    return top


@parallel_jit
def gmm_neg_log_likelihood(x, means, chol, log_norm):  # pragma: no cover
    """``-log sum_g exp(log_norm[g] - |chol[g]^-1 (x_i - means[g])|^2 / 2)`` for every row ``x_i``.

    Parameters
    ----------
    x : (m, C) float64 colours.
    means : (G, C) component means.
    chol : (G, C, C) lower Cholesky factors of the covariances.
    log_norm : (G,) ``log w_g - (log det S_g + C log 2 pi) / 2``.

    The sum over components is taken relative to the largest term (no overflow, no underflow
    to -inf). Blocks of :data:`BLOCK` rows run on numba's threads; each row's arithmetic is the
    same whichever thread takes it, so the result does not depend on the number of threads.
    """
    m, c = x.shape
    g_count = means.shape[0]
    out = np.empty(m)
    for blk in numba.prange((m + BLOCK - 1) // BLOCK):
        y = np.empty(c)
        terms = np.empty(g_count)
        for i in range(blk * BLOCK, min(m, (blk + 1) * BLOCK)):
            top = _log_terms(x, i, means, chol, log_norm, y, terms)
            total = 0.0
            for g in range(g_count):
                # a term below exp(-40) changes a sum that holds 1 (the top term) by at most an
                # ulp, and most pixels are far from most components, so skipping the exp pays
                if terms[g] - top > _NEGLIGIBLE:
                    total += math.exp(terms[g] - top)
            out[i] = -(top + math.log(total))
    return out


@jit
def gmm_responsibilities(x, means, chol, log_norm):  # pragma: no cover
    """EM's E-step: ``(m, G)`` posterior component probabilities of every row (the terms of
    :func:`gmm_neg_log_likelihood`, each over their sum; 0 below ``exp(-40)`` of the largest)."""
    m, c = x.shape
    g_count = means.shape[0]
    resp = np.zeros((m, g_count))
    y = np.empty(c)
    terms = np.empty(g_count)
    for i in range(m):
        top = _log_terms(x, i, means, chol, log_norm, y, terms)
        total = 0.0
        for g in range(g_count):
            if terms[g] - top > _NEGLIGIBLE:
                resp[i, g] = math.exp(terms[g] - top)
                total += resp[i, g]
        for g in range(g_count):
            resp[i, g] /= total
    return resp


@jit
def gmm_moments(x, resp, reg):  # pragma: no cover
    """EM's M-step: ``(weights, means, covariances)`` of the components from responsibilities
    ``(m, G)``, each covariance ``sum_i r_ig d d' / n_g + reg I`` with ``d = x_i - mean_g`` (two
    passes: the means first, so no cancellation), ``n_g = sum_i r_ig + 1e-10``."""
    m, c = x.shape
    g_count = resp.shape[1]
    nk = np.full(g_count, 1e-10)
    means = np.zeros((g_count, c))
    for i in range(m):
        for g in range(g_count):
            r = resp[i, g]
            nk[g] += r
            for a in range(c):
                means[g, a] += r * x[i, a]
    for g in range(g_count):
        for a in range(c):
            means[g, a] /= nk[g]
    cov = np.zeros((g_count, c, c))
    d = np.empty(c)
    for i in range(m):
        for g in range(g_count):
            r = resp[i, g]
            if r == 0.0:
                continue
            for a in range(c):
                d[a] = x[i, a] - means[g, a]
            for a in range(c):
                ra = r * d[a]
                for b in range(a + 1):
                    cov[g, a, b] += ra * d[b]
    for g in range(g_count):
        for a in range(c):
            for b in range(a + 1):
                v = cov[g, a, b] / nk[g]
                cov[g, a, b] = v
                cov[g, b, a] = v
            cov[g, a, a] += reg
    return nk / nk.sum(), means, cov


@jit
def kmeans_assign(x, centres, iters):  # pragma: no cover
    """Lloyd's iterations from ``centres`` (changed in place): each row to its nearest centre,
    then each centre with rows to their mean; returns the last assignment ``(m,)``."""
    m, c = x.shape
    g_count = centres.shape[0]
    assign = np.zeros(m, np.int64)
    sums = np.empty((g_count, c))
    counts = np.empty(g_count, np.int64)
    for _ in range(iters):
        sums[:] = 0.0
        counts[:] = 0
        for i in range(m):
            best, best_d = 0, np.inf
            for g in range(g_count):
                dist = 0.0
                for a in range(c):
                    t = x[i, a] - centres[g, a]
                    dist += t * t
                if dist < best_d:
                    best, best_d = g, dist
            assign[i] = best
            counts[best] += 1
            for a in range(c):
                sums[best, a] += x[i, a]
        for g in range(g_count):
            if counts[g] > 0:
                for a in range(c):
                    centres[g, a] = sums[g, a] / counts[g]
    return assign


@jit
def _edge_count(h, w, offsets):  # pragma: no cover
    """Number of edges ``(r, c) -> (r + dr, c + dc)`` inside an ``h x w`` grid over ``offsets``."""
    total = 0
    for d in range(offsets.shape[0]):
        dr, dc = offsets[d, 0], offsets[d, 1]
        total += max(h - dr, 0) * max(w - abs(dc), 0)
    return total


@jit
def _row_blocks(h, w, offsets):  # pragma: no cover
    """For the threaded edge passes: ``(rows, first)``, the edge rows of each offset (prefix
    sums, length D + 1) and the index of each offset's first edge (length D), in the order of
    :func:`edge_squared_differences`."""
    count = offsets.shape[0]
    rows = np.zeros(count + 1, np.int64)
    first = np.zeros(count, np.int64)
    e = 0
    for d in range(count):
        dr, dc = offsets[d, 0], offsets[d, 1]
        nr = max(h - dr, 0)
        rows[d + 1] = rows[d] + nr
        first[d] = e
        e += nr * max(w - abs(dc), 0)
    return rows, first


@jit
def _edge_row(rows, first, offsets, w, t):  # pragma: no cover
    """Edge row ``t`` of :func:`_row_blocks`: ``(dr, dc, r, c0, c1, e)``, the offset, the image
    row, the columns it spans and the index of its first edge."""
    d = 0
    while rows[d + 1] <= t:
        d += 1
    dr, dc = offsets[d, 0], offsets[d, 1]
    r = t - rows[d]
    c0, c1 = max(0, -dc), w - max(0, dc)
    return dr, dc, r, c0, c1, first[d] + r * (c1 - c0)


@parallel_jit
def edge_squared_differences(colours, offsets):  # pragma: no cover
    """``||c_p - c_q||^2`` of every grid edge, in the order of
    :func:`solver.mrf.build.graph.grid_edges`.

    ``colours`` is ``(H, W, C)``; ``offsets`` is ``(D, 2)`` ``(dr, dc)`` with ``dr >= 0``. For each
    offset in turn, the edges ``(r, c) -> (r + dr, c + dc)`` inside the grid, row by row (the
    rows on numba's threads).
    """
    h, w, ch = colours.shape
    out = np.empty(_edge_count(h, w, offsets))
    rows, first = _row_blocks(h, w, offsets)
    for t in numba.prange(rows[-1]):
        dr, dc, r, c0, c1, e = _edge_row(rows, first, offsets, w, np.int64(t))
        for col in range(c0, c1):
            s = 0.0
            for a in range(ch):
                diff = colours[r, col, a] - colours[r + dr, col + dc, a]
                s += diff * diff
            out[e] = s
            e += 1
    return out


@jit
def grid_edge_list(h, w, offsets):  # pragma: no cover
    """The ends of every grid edge, ``(lo, hi)`` int32, and whether each is diagonal, in the order
    of :func:`edge_squared_differences` (numpy's version builds an index grid and concatenates
    slices of it per direction: five full copies). One thread: it is the first touch of its output's
    pages, which threads do not speed up (measured: docs/decisions.md, The photo's build)."""
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


@parallel_jit
def contrast_to_weights(contrast, h, w, offsets, beta, diagonal_distance):  # pragma: no cover
    """``exp(-beta * contrast)`` in place, divided by ``sqrt(2)`` on the diagonal edges when
    ``diagonal_distance``: the edge weights from :func:`edge_squared_differences`'s output (same
    order), in one threaded pass instead of numpy's three (scale, exp, masked divide)."""
    rows, first = _row_blocks(h, w, offsets)
    root2 = math.sqrt(2.0)
    scale = -beta
    for t in numba.prange(rows[-1]):
        dr, dc, r, c0, c1, e = _edge_row(rows, first, offsets, w, np.int64(t))
        divide = diagonal_distance and dr != 0 and dc != 0
        for col in range(c0, c1):
            v = math.exp(contrast[e] * scale)
            contrast[e] = v / root2 if divide else v
            e += 1
