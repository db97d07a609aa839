"""Compiled (numba) kernels for the coarse levels' graphs, on numba's threads.

A coarse level's edges, as :func:`solver.mrf.build.grid_kernels.coarsen_edges` lists them, are in
*cell order*: cell by cell (row-major), each cell's edges to its higher neighbours in the order
east, south-west, south, south-east. On a complete grid that layout is fixed by the grid's
shape, so an edge's index is a formula (:func:`_cell_edge`) and both kernels here write the
rows of their output on numba's threads, each row from its own first entry:

- :func:`coarsen_grid_edges` restricts a full-resolution grid graph (its edges in the order of
  :func:`solver.mrf.build.graph.grid_edges`) to 2 x 2 blocks, and
- :func:`cell_laplacian_csr` writes the Laplacian of a cell-ordered graph.

Both give the general kernels' arrays bit for bit
(:func:`~solver.mrf.build.grid_kernels.coarsen_edges` and
:func:`~solver.mrf.build.grid_kernels.laplacian_csr`, which take any 8-neighbour edge list): every
sum adds the same terms in the same order. The general ones read each edge's ends and scatter into
per-pixel accumulators. The threads cost compile time once, on the first run, and save time on every
large photo (measured: docs/decisions.md, Splits, fusions and the polish's bookkeeping).
"""

from __future__ import annotations

import numba
import numpy as np

from solver.backend.jit import jit, parallel_jit


# slots of a cell's edges to its higher neighbours, in cell order
EAST, SOUTH_WEST, SOUTH, SOUTH_EAST = 0, 1, 2, 3


@jit
def cell_edge_count(h, w):  # pragma: no cover
    """Edges of a complete ``h x w`` 8-neighbour grid (all rows but the last hold ``4 w - 3``)."""
    return (h - 1) * (4 * w - 3) + (w - 1)


@jit
def _cell_edge(r, c, h, w, slot):  # pragma: no cover
    """Index, in cell order, of the edge in ``slot`` of cell ``(r, c)`` of a complete ``h x w``
    grid (the edge must exist). In a row with a row below, cell 0 has 3 edges (no south-west),
    the last cell 2 (south-west, south) and the others 4; the last row has east edges only."""
    e = r * (4 * w - 3)
    if r + 1 == h:
        return e + c
    if c > 0:
        e += 4 * c - 1
    if slot == EAST:
        return e
    if c + 1 < w:
        e += 1
    if slot == SOUTH_WEST:
        return e
    if c > 0:
        e += 1
    return e if slot == SOUTH else e + 1


@jit
def is_cell_edge_list(i, j, h, w):  # pragma: no cover
    """Whether ``(i, j)`` is exactly the complete ``h x w`` grid's edge list in cell order."""
    if i.size != cell_edge_count(h, w) or j.size != i.size:
        return False
    e = 0
    for r in range(h):
        for c in range(w):
            p = r * w + c
            for s in range(4):
                if s == EAST:
                    ok = c + 1 < w
                    q = p + 1
                elif s == SOUTH_WEST:
                    ok = c > 0 and r + 1 < h
                    q = p + w - 1
                elif s == SOUTH:
                    ok = r + 1 < h
                    q = p + w
                else:
                    ok = c + 1 < w and r + 1 < h
                    q = p + w + 1
                if ok:
                    if i[e] != p or j[e] != q:
                        return False
                    e += 1
    return True


@parallel_jit
def cell_laplacian_csr(wt, h, w):  # pragma: no cover
    """CSR arrays ``(indptr, indices, data)`` of ``L = D - W`` for the weights ``wt`` of a
    complete ``h x w`` grid's edges in cell order (check with :func:`is_cell_edge_list`); the
    same arrays as :func:`solver.mrf.build.grid_kernels.laplacian_csr`, bit for bit: a degree adds
    the node's edges as their lower end (east, south-west, south, south-east), then as their
    upper end (north-west, north, north-east, west), which is edge order in both cases."""
    n = h * w
    m = cell_edge_count(h, w)
    indptr = np.zeros(n + 1, np.int32)
    indices = np.empty(n + 2 * m, np.int32)
    data = np.empty(n + 2 * m)
    start = np.zeros(h + 1, np.int64)
    for r in range(h):
        start[r + 1] = start[r] + w + 2 * (w - 1) + (3 * w - 2) * ((r > 0) + (r + 1 < h))
    for r in numba.prange(h):
        q = start[r]
        for c in range(w):
            p = r * w + c
            up, left, right, down = r > 0, c > 0, c + 1 < w, r + 1 < h
            hi_sum = 0.0
            if up and left:
                v = wt[_cell_edge(r - 1, c - 1, h, w, SOUTH_EAST)]
                hi_sum += v
                indices[q] = p - w - 1
                data[q] = -(0.0 + v)
                q += 1
            if up:
                v = wt[_cell_edge(r - 1, c, h, w, SOUTH)]
                hi_sum += v
                indices[q] = p - w
                data[q] = -(0.0 + v)
                q += 1
            if up and right:
                v = wt[_cell_edge(r - 1, c + 1, h, w, SOUTH_WEST)]
                hi_sum += v
                indices[q] = p - w + 1
                data[q] = -(0.0 + v)
                q += 1
            if left:
                v = wt[_cell_edge(r, c - 1, h, w, EAST)]
                hi_sum += v
                indices[q] = p - 1
                data[q] = -(0.0 + v)
                q += 1
            diag = q
            q += 1
            lo_sum = 0.0
            if right:
                v = wt[_cell_edge(r, c, h, w, EAST)]
                lo_sum += v
                indices[q] = p + 1
                data[q] = -(0.0 + v)
                q += 1
            if down and left:
                v = wt[_cell_edge(r, c, h, w, SOUTH_WEST)]
                lo_sum += v
                indices[q] = p + w - 1
                data[q] = -(0.0 + v)
                q += 1
            if down:
                v = wt[_cell_edge(r, c, h, w, SOUTH)]
                lo_sum += v
                indices[q] = p + w
                data[q] = -(0.0 + v)
                q += 1
            if down and right:
                v = wt[_cell_edge(r, c, h, w, SOUTH_EAST)]
                lo_sum += v
                indices[q] = p + w + 1
                data[q] = -(0.0 + v)
                q += 1
            indices[diag] = p
            data[diag] = lo_sum + hi_sum
            indptr[p + 1] = q
    return indptr, indices, data


@jit
def _add_fine_edge(out, wt, e, r, c, dr, dc, hc, wc):  # pragma: no cover
    """Add fine edge ``e``, from pixel ``(r, c)`` to ``(r + dr, c + dc)``, to the coarse edge
    between their 2 x 2 blocks (nothing when both lie in one block)."""
    ra, ca, rb, cb = r // 2, c // 2, (r + dr) // 2, (c + dc) // 2
    if ra == rb and ca == cb:
        return
    if rb < ra or (rb == ra and cb < ca):
        ra, ca, rb, cb = rb, cb, ra, ca
    slot = EAST if rb == ra else cb - ca + 2
    out[_cell_edge(ra, ca, hc, wc, slot)] += wt[e]


@parallel_jit
def coarsen_grid_edges(wt, h, w):  # pragma: no cover
    """Edges of the grid of 2 x 2 blocks of a complete ``h x w`` grid whose weights ``wt`` are in
    the order of :func:`solver.mrf.build.graph.grid_edges` (east, south, south-east, south-west
    blocks; check with :func:`solver.mrf.build.grid_kernels._is_grid_edge_list`).

    Returns ``(lo, hi, weight)`` in cell order on the ``ceil(h/2) x ceil(w/2)`` grid, the
    arrays :func:`solver.mrf.build.grid_kernels.coarsen_edges` gives for factor 2, bit for bit: the
    fine edges whose lower block is in block row ``R`` all start in pixel rows ``2R`` and
    ``2R + 1``, so each block row is summed by one thread, block by block of the fine order and
    row by row, which is the fine edges' order.
    """
    hc, wc = (h + 1) // 2, (w + 1) // 2
    m = cell_edge_count(hc, wc)
    lo = np.empty(m, np.int32)
    hi = np.empty(m, np.int32)
    out = np.empty(m)
    we = w - 1
    b_s = h * we
    b_se = b_s + (h - 1) * w
    b_sw = b_se + (h - 1) * we
    for big in numba.prange(hc):
        first = big * (4 * wc - 3)  # this block row's edges
        last = m if big + 1 == hc else first + 4 * wc - 3
        for e in range(first, last):
            out[e] = 0.0
        for c in range(wc):
            b = big * wc + c
            if c + 1 < wc:
                k = _cell_edge(big, c, hc, wc, EAST)
                lo[k], hi[k] = b, b + 1
            if big + 1 < hc:
                if c > 0:
                    k = _cell_edge(big, c, hc, wc, SOUTH_WEST)
                    lo[k], hi[k] = b, b + wc - 1
                k = _cell_edge(big, c, hc, wc, SOUTH)
                lo[k], hi[k] = b, b + wc
                if c + 1 < wc:
                    k = _cell_edge(big, c, hc, wc, SOUTH_EAST)
                    lo[k], hi[k] = b, b + wc + 1
        for d in range(4):  # east, south, south-east, south-west: the fine edges' blocks
            dr, dc = (0, 1) if d == 0 else ((1, 0) if d == 1 else (1, 1) if d == 2 else (1, -1))
            base = 0 if d == 0 else (b_s if d == 1 else b_se if d == 2 else b_sw)
            row = w if d == 1 else we  # edges per pixel row in this block
            c0 = 1 if d == 3 else 0
            for r in range(2 * big, min(2 * big + 2, h - dr)):
                for c in range(c0, c0 + row):
                    _add_fine_edge(out, wt, base + r * row + c - c0, r, c, dr, dc, hc, wc)
    return lo, hi, out


@parallel_jit
def coarsen_cells(unary, hard, h, w, factor):  # pragma: no cover
    """A coarse level's data terms and hard labels, for ``factor x factor`` blocks of an
    ``h x w`` grid, on numba's threads (a block row each).

    A block's data term per label is the sum of its pixels', added in pixel order from zero as
    numpy's ``bincount`` adds them (so the same bits); its hard label is the one its fine hard
    pixels all name, 0 where they name none or several.

    Returns
    -------
    unary : numpy.ndarray
        ``(hc * wc, K)`` float64, ``hc, wc = ceil(h / factor), ceil(w / factor)``.
    hard : numpy.ndarray
        ``(hc * wc,)`` int32.
    """
    k = unary.shape[1]
    hc, wc = (h + factor - 1) // factor, (w + factor - 1) // factor
    out = np.zeros((hc * wc, k))
    hard_c = np.zeros(hc * wc, np.int32)
    for br in numba.prange(hc):
        for bc in range(wc):
            b = br * wc + bc
            named = -1  # no hard pixel yet; 0 once two name different labels
            for r in range(br * factor, min(h, (br + 1) * factor)):
                for c in range(bc * factor, min(w, (bc + 1) * factor)):
                    i = r * w + c
                    for lab in range(k):
                        out[b, lab] += unary[i, lab]
                    if hard[i] > 0:
                        if named == -1:
                            named = hard[i]
                        elif named != hard[i]:
                            named = 0
            hard_c[b] = max(named, 0)
    return out, hard_c
