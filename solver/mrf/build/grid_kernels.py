"""Compiled (numba) kernels that build the MRF's graph arrays: the Laplacian's CSR arrays from an
edge list, the coarse grid's edges of a block restriction, the Potts energy of a labelling, and
each pixel's cheapest label by its data.

Each is one or two passes over the edges, in place of scipy's COO-to-CSR conversions (a sort with
duplicate summation) and numpy's fancy-indexed temporaries (measured: docs/decisions.md, Compiled
CPU kernels).
"""

from __future__ import annotations

import numba
import numpy as np

from solver.backend.jit import jit, parallel_jit
from solver.mrf.build.colour_kernels import _edge_count, _row_blocks

# :func:`grid_laplacian_csr` writes the rows on numba's threads (``parallel_jit``; see
# :mod:`solver.mrf.build.colour_kernels`).


# The four directions of an 8-neighbour grid edge seen from its lower-index end, numbered in the
# order of the other end's index: 0 east, 1 south-west, 2 south, 3 south-east.


@jit
def _grid_coordinates(shape, factor):  # pragma: no cover
    """Row and column of the ``factor x factor`` block of every pixel of a ``shape`` grid."""
    h, w = shape
    rows = np.empty(h * w, np.int64)
    cols = np.empty(h * w, np.int64)
    for r in range(h):
        br = r // factor
        for c in range(w):
            rows[r * w + c] = br
            cols[r * w + c] = c // factor
    return rows, cols


@jit
def _stencil(i, j, w, rows, cols, width, size):  # pragma: no cover
    """Sum each edge's weight into ``acc[lo, d]``: ``lo`` the lower of its ends' cells (at
    ``rows``, ``cols`` on a grid of ``width`` columns and ``size`` cells) and ``d`` its direction
    (0 east, 1 south-west, 2 south, 3 south-east); ``seen`` marks the slots some edge reached.
    Edges inside one cell are skipped. Returns ``(acc, seen, bad)``, ``bad`` the number of edges
    that join cells that are not 8-neighbours."""
    acc = np.zeros((size, 4))
    seen = np.zeros((size, 4), np.bool_)
    bad = 0
    for e in range(i.size):
        ra, ca, rb, cb = rows[i[e]], cols[i[e]], rows[j[e]], cols[j[e]]
        if ra == rb and ca == cb:
            continue
        if rb < ra or (rb == ra and cb < ca):
            ra, ca, rb, cb = rb, cb, ra, ca
        dr, dc = rb - ra, cb - ca
        if dr > 1 or dc > 1 or dc < -1 or (dr == 0 and dc != 1):
            bad += 1
            continue
        slot = 0 if dr == 0 else dc + 2
        lo = ra * width + ca
        acc[lo, slot] += w[e]
        seen[lo, slot] = True
    return acc, seen, bad


@jit
def _put(indices, data, q, column, value):  # pragma: no cover
    indices[q] = column
    data[q] = value
    return q + 1


@jit
def laplacian_csr(i, j, w, shape):  # pragma: no cover
    """CSR arrays ``(indptr, indices, data, bad)`` of ``L = D - W`` for an 8-neighbour grid graph
    of ``shape`` with edges ``(i[e], j[e], w[e])``; the index arrays are int32 (the caller checks
    that ``9 n`` fits).

    Each row's columns are sorted and hold its diagonal entry (even when the degree is 0);
    repeated pairs are summed. The degree adds a node's weights as ``i``, then those as ``j``,
    each in edge order, as ``np.bincount`` does. The rows are written in order from the grid's
    per-direction weights, so the only scattered pass is the one over the edges. ``bad`` counts
    the edges that are not 8-neighbour pairs (left out; the caller raises).
    """
    h, width = shape
    n = h * width
    rows, cols = _grid_coordinates(shape, np.int64(1))
    acc, seen, bad = _stencil(i, j, w, rows, cols, width, n)
    deg_i = np.zeros(n)
    deg_j = np.zeros(n)
    for e in range(i.size):
        deg_i[i[e]] += w[e]
        deg_j[j[e]] += w[e]
    nnz = n
    for p in range(n):
        for s in range(4):
            if seen[p, s]:
                nnz += 2
    # exact sizes, 32-bit indices (as scipy picks them): fresh memory costs a page fault per page
    indptr = np.zeros(n + 1, np.int32)
    indices = np.empty(nnz, np.int32)
    data = np.empty(nnz)
    q = np.int64(0)  # (not the literal 0: numba would compile _put for it too)
    for p in range(n):
        r, c = rows[p], cols[p]
        # lower neighbours (their slot points at p): north-west, north, north-east, then west
        if r > 0:
            u = p - width
            if c > 0 and seen[u - 1, 3]:
                q = _put(indices, data, q, u - 1, -acc[u - 1, 3])
            if seen[u, 2]:
                q = _put(indices, data, q, u, -acc[u, 2])
            if c + 1 < width and seen[u + 1, 1]:
                q = _put(indices, data, q, u + 1, -acc[u + 1, 1])
        if c > 0 and seen[p - 1, 0]:
            q = _put(indices, data, q, p - 1, -acc[p - 1, 0])
        q = _put(indices, data, q, p, deg_i[p] + deg_j[p])
        # upper neighbours, in the order of their index: east, south-west, south, south-east
        if seen[p, 0]:
            q = _put(indices, data, q, p + 1, -acc[p, 0])
        if seen[p, 1]:
            q = _put(indices, data, q, p + width - 1, -acc[p, 1])
        if seen[p, 2]:
            q = _put(indices, data, q, p + width, -acc[p, 2])
        if seen[p, 3]:
            q = _put(indices, data, q, p + width + 1, -acc[p, 3])
        indptr[p + 1] = q
    return indptr, indices, data, bad


#: The edge order :func:`grid_laplacian_csr` reads its weights in (that of
#: :func:`solver.mrf.build.graph.grid_edges`): east, south, south-east, then south-west, row by row.
_GRID_ORDER = np.array(((0, 1), (1, 0), (1, 1), (1, -1)), dtype=np.int64)


@jit
def _is_grid_edge_list(i, j, h, width):  # pragma: no cover
    """Whether ``(i, j)`` is exactly the ``h x width`` grid's edge list in :data:`_GRID_ORDER`."""
    m = _edge_count(h, width, _GRID_ORDER)
    if i.size != m or j.size != m:
        return False
    e = 0
    for d in range(_GRID_ORDER.shape[0]):
        dr, dc = _GRID_ORDER[d, 0], _GRID_ORDER[d, 1]
        c0, c1 = max(0, -dc), width - max(0, dc)
        for r in range(h - dr):
            for c in range(c0, c1):
                if i[e] != r * width + c or j[e] != (r + dr) * width + c + dc:
                    return False
                e += 1
    return True


@parallel_jit
def grid_laplacian_csr(w, h, width):  # pragma: no cover
    """CSR arrays ``(indptr, indices, data)`` of ``L = D - W`` for weights ``w`` in the order of
    :func:`solver.mrf.build.graph.grid_edges` (check that with :func:`_is_grid_edge_list`).

    The same arrays as :func:`laplacian_csr`, bit for bit (each degree adds the node's weights
    as the lower end, then as the upper end, in edge order), read straight from the weights'
    per-direction blocks: no per-pixel accumulators and no pass over the edges' ends, the
    general kernel's time and scratch memory (measured: docs/decisions.md, The photo's build). The
    grid's rows are written on numba's threads, each from its own first entry.
    """
    n = h * width
    we = width - 1  # edges per row of the east, south-east and south-west blocks
    b_s = h * we  # where each direction's block starts
    b_se = b_s + (h - 1) * width
    b_sw = b_se + (h - 1) * we
    m = b_sw + (h - 1) * we if h > 1 else b_s
    indptr = np.zeros(n + 1, np.int32)
    indices = np.empty(n + 2 * m, np.int32)
    data = np.empty(n + 2 * m)
    # each row's first entry, so the rows can be written on numba's threads: a row holds its
    # diagonal, west and east entries, and three a pixel less two per neighbouring row
    start = np.zeros(h + 1, np.int64)
    for r in range(h):
        start[r + 1] = (start[r] + width + 2 * (width - 1)
                        + (3 * width - 2) * ((r > 0) + (r + 1 < h)))
    for r in numba.prange(h):
        q = start[r]
        for c in range(width):
            p = r * width + c
            up, left, right, down = r > 0, c > 0, c + 1 < width, r + 1 < h
            lo_sum, hi_sum = 0.0, 0.0
            # upper-end edges (p the higher index), listed first in column order: NW, N, NE, W;
            # their sum in edge order: W, N, NW, NE
            v_nw = w[b_se + (r - 1) * we + c - 1] if up and left else 0.0
            v_n = w[b_s + (r - 1) * width + c] if up else 0.0
            v_ne = w[b_sw + (r - 1) * we + c] if up and right else 0.0
            v_w = w[r * we + c - 1] if left else 0.0
            if up and left:
                indices[q] = p - width - 1
                data[q] = -(0.0 + v_nw)
                q += 1
            if up:
                indices[q] = p - width
                data[q] = -(0.0 + v_n)
                q += 1
            if up and right:
                indices[q] = p - width + 1
                data[q] = -(0.0 + v_ne)
                q += 1
            if left:
                hi_sum += v_w
                indices[q] = p - 1
                data[q] = -(0.0 + v_w)
                q += 1
            if up:
                hi_sum += v_n
            if up and left:
                hi_sum += v_nw
            if up and right:
                hi_sum += v_ne
            diag = q
            q += 1
            # lower-end edges: E, SW, S, SE in column order; summed E, S, SE, SW
            if right:
                v = w[r * we + c]
                lo_sum += v
                indices[q] = p + 1
                data[q] = -(0.0 + v)
                q += 1
            if down:
                lo_sum += w[b_s + r * width + c]
                if right:
                    lo_sum += w[b_se + r * we + c]
                if left:
                    v = w[b_sw + r * we + c - 1]
                    lo_sum += v
                    indices[q] = p + width - 1
                    data[q] = -(0.0 + v)
                    q += 1
                indices[q] = p + width
                data[q] = -(0.0 + w[b_s + r * width + c])
                q += 1
                if right:
                    indices[q] = p + width + 1
                    data[q] = -(0.0 + w[b_se + r * we + c])
                    q += 1
            indices[diag] = p
            data[diag] = lo_sum + hi_sum
            indptr[p + 1] = q
    return indptr, indices, data


@jit
def coarsen_edges(i, j, w, shape, factor):  # pragma: no cover
    """Edges of the grid of ``factor x factor`` blocks of a ``shape`` grid: the fine edges between
    two blocks, weights summed in edge order.

    Returns ``(lo, hi, weight, bad)`` with ``lo < hi`` block indices (row-major on the block
    grid), ordered by ``lo`` then ``hi``; ``bad`` counts fine edges between blocks that are not
    8-neighbours (none for an 8-neighbour fine grid, whose block grid is 8-neighbour again).
    """
    h, width = shape
    hc, wc = -(-h // factor), -(-width // factor)
    rows, cols = _grid_coordinates(shape, factor)
    acc, seen, bad = _stencil(i, j, w, rows, cols, wc, hc * wc)
    m = 0
    for b in range(hc * wc):
        for s in range(4):
            if seen[b, s]:
                m += 1
    lo = np.empty(m, np.int32)
    hi = np.empty(m, np.int32)
    weight = np.empty(m)
    q = 0
    for b in range(hc * wc):
        for s in range(4):  # the other ends in index order (east and south-west never both)
            if seen[b, s]:
                lo[q] = b
                hi[q] = b + (1 if s == 0 else wc + s - 2)
                weight[q] = acc[b, s]
                q += 1
    return lo, hi, weight, bad


@jit
def potts_energy(i, j, w, unary, lab, lam):  # pragma: no cover
    """``lam * 2 * sum_{edges, lab_i != lab_j} w + sum_p unary[p, lab_p]`` for 0-based ``lab``.

    Both sums add blocks of 4096 terms, then the blocks' sums, which keeps the rounding error
    near that of numpy's pairwise sums.
    """
    cut, part = 0.0, 0.0
    for e in range(i.size):
        if lab[i[e]] != lab[j[e]]:
            part += w[e]
        if (e & 4095) == 4095:
            cut += part
            part = 0.0
    cut += part
    return lam * (2.0 * cut) + _data_term(unary, lab)


@parallel_jit
def cheapest_labels(unary):  # pragma: no cover
    """``(n,)`` int8: each row's first smallest entry's column (numpy's ``argmin(axis=1)``, whose
    reductions along a short axis are several times slower), on numba's threads."""
    n, k = unary.shape
    out = np.empty(n, np.int8)
    for i in numba.prange(n):
        best, low = 0, unary[i, 0]
        for c in range(1, k):
            if unary[i, c] < low:
                best, low = c, unary[i, c]
        out[i] = best
    return out


@jit
def _data_block(unary, lab, b):  # pragma: no cover
    """``sum unary[p, lab[p]]`` over block ``b`` of 4096 pixels, in order."""
    part = 0.0
    for p in range(b * 4096, min(lab.size, b * 4096 + 4096)):
        part += unary[p, lab[p]]
    return part


@jit
def _data_term(unary, lab):  # pragma: no cover
    """``sum_p unary[p, lab[p]]``, in blocks of 4096 as the cut is (the energies' data term)."""
    data = 0.0
    for b in range((lab.size + 4095) // 4096):
        data += _data_block(unary, lab, b)
    return data


@jit
def grid_potts_energy(w, h, width, unary, lab, lam):  # pragma: no cover
    """:func:`potts_energy` of the ``h x width`` grid's own edge list
    (:func:`solver.mrf.build.graph.grid_edges`, :data:`_GRID_ORDER`), its ends found from the
    position instead of read from arrays: the same terms added in the same order, so the same
    value bit for bit."""
    cut, part = 0.0, 0.0
    e = 0
    for d in range(_GRID_ORDER.shape[0]):
        dr, dc = _GRID_ORDER[d, 0], _GRID_ORDER[d, 1]
        c0, c1 = max(0, -dc), width - max(0, dc)
        for r in range(h - dr):
            for c in range(c0, c1):
                if lab[r * width + c] != lab[(r + dr) * width + c + dc]:
                    part += w[e]
                if (e & 4095) == 4095:
                    cut += part
                    part = 0.0
                e += 1
    cut += part
    return lam * (2.0 * cut) + _data_term(unary, lab)


@jit
def grid_level_set_energies(w, h, width, unary, s, levels, lam, weights):  # pragma: no cover
    """The two-label energies and label-2 areas of every level set ``{s > levels[k]}`` of
    ``s`` on the ``h x width`` grid's own edge list (as :func:`grid_potts_energy`), in one pass
    for all levels (ascending): a pixel is label 2 at the levels below ``s_i``, an edge is cut
    at those in ``[min, max)`` of its ends' values, each added to a difference array over the
    levels. Returns ``(energies, areas)``, ``areas[k] = sum_i weights_i [s_i > levels[k]]``
    (the same sums in another order than the energy of each set alone: equal to rounding)."""
    t = levels.size
    cut = np.zeros(t + 1)
    data = np.zeros(t + 1)
    area = np.zeros(t + 1)
    base = 0.0
    for i in range(s.size):
        top = np.searchsorted(levels, s[i])  # (label 2 at the levels k < top)
        base += unary[i, 0]
        data[0] += unary[i, 1] - unary[i, 0]
        data[top] -= unary[i, 1] - unary[i, 0]
        area[0] += weights[i]
        area[top] -= weights[i]
    e = 0
    for d in range(_GRID_ORDER.shape[0]):
        dr, dc = _GRID_ORDER[d, 0], _GRID_ORDER[d, 1]
        c0, c1 = max(0, -dc), width - max(0, dc)
        for r in range(h - dr):
            for c in range(c0, c1):
                a, b = s[r * width + c], s[(r + dr) * width + c + dc]
                if a != b:
                    k0 = np.searchsorted(levels, min(a, b))
                    k1 = np.searchsorted(levels, max(a, b))
                    cut[k0] += w[e]
                    cut[k1] -= w[e]
                e += 1
    energies = np.empty(t)
    areas = np.empty(t)
    run_cut, run_data, run_area = 0.0, 0.0, 0.0
    for k in range(t):
        run_cut += cut[k]
        run_data += data[k]
        run_area += area[k]
        energies[k] = lam * (2.0 * run_cut) + base + run_data
        areas[k] = run_area
    return energies, areas


@parallel_jit
def grid_potts_energy_threaded(w, h, width, unary, lab, lam):  # pragma: no cover
    """:func:`grid_potts_energy` with its blocks of 4096 terms summed on numba's threads (each
    from its first edge's position), then added in order as the serial loop adds them: the same
    value bit for bit. For large grids only: a parallel pass costs tens of microseconds to
    start, more on a loaded machine."""
    count = _GRID_ORDER.shape[0]
    m = _edge_count(h, width, _GRID_ORDER)
    base = np.empty(count + 1, np.int64)  # each direction's first edge, then the end
    base[:count] = _row_blocks(h, width, _GRID_ORDER)[1]
    base[count] = m
    parts = np.zeros((m + 4095) // 4096)
    for b in numba.prange(parts.size):
        e, stop = b * 4096, min(m, b * 4096 + 4096)
        d = 0
        while base[d + 1] <= e:
            d += 1
        dr, dc = _GRID_ORDER[d, 0], _GRID_ORDER[d, 1]
        c0, length = max(0, -dc), width - abs(dc)
        r, c = (e - base[d]) // length, c0 + (e - base[d]) % length
        part = 0.0
        while e < stop:
            if lab[r * width + c] != lab[(r + dr) * width + c + dc]:
                part += w[e]
            e += 1
            c += 1
            if c == c0 + length:
                c, r = c0, r + 1
                if e < stop and e == base[d + 1]:  # (the next direction with edges)
                    while base[d + 1] <= e:
                        d += 1
                    dr, dc = _GRID_ORDER[d, 0], _GRID_ORDER[d, 1]
                    c0, length = max(0, -dc), width - abs(dc)
                    r, c = 0, c0
        parts[b] = part
    cut = 0.0
    for b in range(parts.size):
        cut += parts[b]
    data_parts = np.zeros((lab.size + 4095) // 4096)
    for b in numba.prange(data_parts.size):
        data_parts[b] = _data_block(unary, lab, b)
    data = 0.0
    for b in range(data_parts.size):
        data += data_parts[b]
    return lam * (2.0 * cut) + data
