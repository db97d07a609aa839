"""Compiled swap descent over matchings (:func:`solver.problems.matching.swap_descent`).

The descent's state is the matching and the gradient ``g = Mx`` of the score ``x'Mx``; each
step evaluates every swap of two matched rows' partners, every move of a matched row to a free
column and every addition of a free row and a free column, and takes the best. The entries of
``M`` the gains need (between the variables of two matched rows and their partners, and between
a row's match and the other variables of that row) are read by binary search in ``M``'s CSR
arrays (sorted column indices, no duplicates) and kept in ``n1 x n1`` and ``n1 x n2`` tables,
whose rows and columns of a node are read again when its partner changes: a step costs
``O(k^2)`` arithmetic for ``k`` matched rows and ``O((k + n2) log r)`` lookups (``r`` entries a
row of ``M``), against a sparse product and fancy indexing of ``M``.

The arithmetic is written term by term in the order of the vectorised formulas it replaced (the
same sums in the same order, so the same rounding): ``g`` is updated by summing each changed
variable's column of ``M`` in ascending order of the variables, as a CSR product with sorted
indices sums ``M delta``. Candidates are scanned row-major, kinds in the order swaps, moves,
additions, a later one replacing the best only when strictly larger (the choice of
``numpy.argmax`` per kind). ``M`` must be symmetric: column ``v`` is read from row ``v``.

Layout: the descent's rows are the smaller side; variable ``(i, c)`` of the descent is
``i * sr + c * sc`` in ``M`` (``sr = n2, sc = 1`` when the rows are the first graph's nodes;
``sr = 1, sc = n2`` when they are the second graph's).
"""

from __future__ import annotations

import numpy as np

from solver.backend.jit import jit


@jit
def _entry(indptr, indices, data, u, v):  # pragma: no cover
    """``M[u, v]`` (0 where not stored) by binary search in row ``u``."""
    lo = indptr[u]
    end = indptr[u + 1]
    hi = end
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and indices[lo] == v:
        return data[lo]
    return 0.0


@jit
def diagonal(indptr, indices, data):  # pragma: no cover
    """``M``'s diagonal."""
    n = indptr.size - 1
    out = np.zeros(n)
    for v in range(n):
        out[v] = _entry(indptr, indices, data, v, v)
    return out


@jit
def largest_magnitude(data):  # pragma: no cover
    """``max |data|`` (0 when empty)."""
    top = 0.0
    for e in range(data.size):
        a = abs(data[e])
        if a > top:
            top = a
    return top


@jit
def add_columns(indptr, indices, data, g, changed, signs, scratch):  # pragma: no cover
    """``g += M delta`` in place, ``delta`` the ``signs`` (+-1) at the ascending ``changed``.

    Each entry of ``M delta`` is summed over the changed columns in ascending order, starting
    from 0: the sum a CSR product with sorted indices forms (its other terms are zeros). ``M``
    symmetric: column ``v`` is read from row ``v``. ``scratch`` (zeros, length ``n``) is
    returned to zeros.
    """
    for t in range(changed.size):
        v = changed[t]
        s = signs[t]
        for e in range(indptr[v], indptr[v + 1]):
            scratch[indices[e]] += data[e] * s
    for r in range(g.size):
        g[r] = g[r] + scratch[r]
        scratch[r] = 0.0


@jit
def _read_pair(indptr, indices, data, v, i, j, tables):  # pragma: no cover
    """Fill the tables' entries of matched rows ``i`` and ``j``, both ways.

    ``v`` holds the variables ``((i,a), (i,b), (j,a), (j,b))`` for partners ``a`` of ``i``
    and ``b`` of ``j``; ``tables`` is ``(pair, same, rowp, colp)``.
    """
    va, vib, vja, vb = v
    pair, same, rowp, colp = tables
    pair[i, j] = _entry(indptr, indices, data, vib, vja)
    pair[j, i] = _entry(indptr, indices, data, vja, vib)
    same[i, j] = _entry(indptr, indices, data, va, vb)
    same[j, i] = _entry(indptr, indices, data, vb, va)
    rowp[i, j] = _entry(indptr, indices, data, vib, va)
    rowp[j, i] = _entry(indptr, indices, data, vja, vb)
    colp[i, j] = _entry(indptr, indices, data, vib, vb)
    colp[j, i] = _entry(indptr, indices, data, vja, va)


@jit
def _refresh(indptr, indices, data, partner, sr, sc, i, tables):  # pragma: no cover
    """Read again the tables' entries (``tables = (pair, same, rowp, colp, near)``) that depend
    on row ``i``'s partner.

    For matched rows ``i, j`` with partners ``a, b``: ``pair[i, j] = M[(i,b), (j,a)]``,
    ``same[i, j] = M[(i,a), (j,b)]``, ``rowp[i, j] = M[(i,b), (i,a)]``,
    ``colp[i, j] = M[(i,b), (j,b)]``; ``near[i, c] = M[(i,c), (i,a)]``.
    """
    pair, same, rowp, colp, near = tables
    n1 = partner.size
    a = partner[i]
    if a < 0:
        return
    va = i * sr + a * sc
    for c in range(near.shape[1]):
        near[i, c] = _entry(indptr, indices, data, i * sr + c * sc, va)
    for j in range(n1):
        b = partner[j]
        if b < 0 or j == i:
            continue
        _read_pair(indptr, indices, data, (i * sr + a * sc, i * sr + b * sc, j * sr + a * sc,
                                           j * sr + b * sc), i, j, (pair, same, rowp, colp))


@jit
def descend(matrix, diag, g, partner, n2, sr, sc, tol, max_moves):  # pragma: no cover
    """Run the best-improvement descent in place on ``M`` (``matrix = (indptr, indices, data)``,
    CSR); returns the number of steps.

    ``partner[i]`` is row ``i``'s column (-1: free), rows the smaller side, ``n2`` the number of
    columns; ``g = Mx`` (in ``M``'s layout, updated in place); a step is taken only when it
    raises ``x'Mx`` by more than ``tol``; ``max_moves < 0``: no limit. The gain of a change
    ``delta`` is ``2 delta'g + delta'M delta``, every entry of ``M`` counted.
    """
    indptr, indices, data = matrix
    n1 = partner.size
    pair = np.zeros((n1, n1))
    same = np.zeros((n1, n1))
    rowp = np.zeros((n1, n1))
    colp = np.zeros((n1, n1))
    near = np.zeros((n1, n2))
    owner = np.full(n2, -1, dtype=np.int64)
    for i in range(n1):
        if partner[i] >= 0:
            owner[partner[i]] = i
    for i in range(n1):  # row i's entries against every row before it, both ways
        if partner[i] < 0:
            continue
        a = partner[i]
        va = i * sr + a * sc
        for c in range(n2):
            near[i, c] = _entry(indptr, indices, data, i * sr + c * sc, va)
        for j in range(i):
            b = partner[j]
            if b < 0:
                continue
            _read_pair(indptr, indices, data, (va, i * sr + b * sc, j * sr + a * sc,
                                               j * sr + b * sc), i, j, (pair, same, rowp, colp))
    rows = np.empty(n1, dtype=np.int64)
    free_rows = np.empty(n1, dtype=np.int64)
    free_cols = np.empty(n2, dtype=np.int64)
    scratch = np.zeros(g.size)
    changed = np.empty(4, dtype=np.int64)
    signs = np.empty(4)
    moves = 0
    while max_moves < 0 or moves < max_moves:
        k = 0
        nfr = 0
        for i in range(n1):
            if partner[i] >= 0:
                rows[k] = i
                k += 1
            else:
                free_rows[nfr] = i
                nfr += 1
        nf = 0
        for c in range(n2):
            if owner[c] < 0:
                free_cols[nf] = c
                nf += 1
        best = tol
        kind = -1
        bi = 0
        bj = 0
        if k >= 2:  # rows i, j (partners a, b) exchange partners
            for p in range(k):
                i = rows[p]
                a = partner[i]
                vp = i * sr + a * sc
                for q in range(k):
                    if q == p:
                        continue
                    j = rows[q]
                    b = partner[j]
                    vq = j * sr + b * sc
                    vib = i * sr + b * sc
                    vja = j * sr + a * sc
                    gain = 2.0 * (((g[vib] + g[vja]) - g[vp]) - g[vq])
                    # delta'M delta for delta = e_ib + e_ja - e_ia - e_jb
                    quad = diag[vib] + diag[vja]
                    quad = quad + diag[vp]
                    quad = quad + diag[vq]
                    quad = quad + 2.0 * pair[i, j]
                    quad = quad + 2.0 * same[i, j]
                    quad = quad - 2.0 * rowp[i, j]
                    quad = quad - 2.0 * colp[i, j]
                    quad = quad - 2.0 * colp[j, i]
                    quad = quad - 2.0 * rowp[j, i]
                    total = gain + quad
                    if total > best:
                        best = total
                        kind = 0
                        bi = i
                        bj = j
        if k > 0 and nf > 0:  # a matched row moves to a free column
            for p in range(k):
                i = rows[p]
                vp = i * sr + partner[i] * sc
                for q in range(nf):
                    c = free_cols[q]
                    vc = i * sr + c * sc
                    total = 2.0 * (g[vc] - g[vp]) + diag[vc]
                    total = total + diag[vp]
                    total = total - 2.0 * near[i, c]
                    if total > best:
                        best = total
                        kind = 1
                        bi = i
                        bj = c
        if nfr > 0 and nf > 0:  # a free row is matched to a free column
            for p in range(nfr):
                i = free_rows[p]
                for q in range(nf):
                    c = free_cols[q]
                    vc = i * sr + c * sc
                    total = 2.0 * g[vc] + diag[vc]
                    if total > best:
                        best = total
                        kind = 2
                        bi = i
                        bj = c
        if kind < 0:
            break
        if kind == 0:
            i = bi
            j = bj
            a = partner[i]
            b = partner[j]
            changed[0] = i * sr + b * sc
            changed[1] = j * sr + a * sc
            changed[2] = i * sr + a * sc
            changed[3] = j * sr + b * sc
            signs[0] = 1.0
            signs[1] = 1.0
            signs[2] = -1.0
            signs[3] = -1.0
            m = 4
            partner[i] = b
            partner[j] = a
            owner[a] = j
            owner[b] = i
        elif kind == 1:
            i = bi
            c = bj
            a = partner[i]
            changed[0] = i * sr + c * sc
            changed[1] = i * sr + a * sc
            signs[0] = 1.0
            signs[1] = -1.0
            m = 2
            partner[i] = c
            owner[a] = -1
            owner[c] = i
        else:
            i = bi
            c = bj
            changed[0] = i * sr + c * sc
            signs[0] = 1.0
            m = 1
            partner[i] = c
            owner[c] = i
        order = np.argsort(changed[:m])
        add_columns(indptr, indices, data, g, changed[:m][order], signs[:m][order], scratch)
        _refresh(indptr, indices, data, partner, sr, sc, bi, (pair, same, rowp, colp, near))
        if kind == 0:
            _refresh(indptr, indices, data, partner, sr, sc, bj, (pair, same, rowp, colp, near))
        moves += 1
    return moves
