"""A constrained MRF's constraints as ADMM takes them, over the free variables of its reduction.

* **Area bounds** become :class:`solver.admm.sums.BoxWithSums`, the set ``z1`` is projected on:
  for K = 2 the variables are label 1's weights, and both labels' bounds bound their sum; for
  K > 2 each label's column sum has its own bounds. Fixed pixels (hard, or fixed by early
  fixing) count towards the areas, so the bounds on the free variables move by their areas.
* **Apart pairs** become inequality rows ``x_ia + x_jb <= 1`` for every neighbouring pair
  ``(i, j)`` and both orders; a row whose other pixel is fixed to ``b`` keeps ``x_ia <= 0``, one
  whose other pixel is fixed elsewhere holds anyway and is dropped.
* The rounding of an iterate keeps the areas: label 1 takes the pixels of largest weight (K = 2),
  or each pixel its largest weight and then the fewest, least-preferred pixels move to bring
  each area within its bounds (K > 2).

On a coarse pyramid level (pixels standing for several image pixels) the bounds widen by the
largest such weight, since an exact area may not be reachable there; the finest level keeps them
exact.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solver.admm.splits import PairSplit
from solver.admm.sums import BoxWithSums, round_k2_sums, round_onehot_sums
from solver.admm.systems import LinearOperatorPair
from solver.mrf.build.graph import edge_ends
from solver.mrf.build.problem import MRFProblem
from solver.mrf.solve.constraint_kernels import carry_sources, pair_split_rows


def _slack(problem: MRFProblem) -> float:
    c = problem.constraints
    return 0.0 if c.weights is None else float(np.max(c.weights))


def area_set(problem: MRFProblem, free: np.ndarray, hard: np.ndarray) -> BoxWithSums | None:
    """The box with bounded sums over the free variables of ``problem``'s reduction (K = 2:
    one column, label 1's weights; K > 2: the K label columns), or None without area bounds.

    Parameters
    ----------
    problem : MRFProblem
    free : numpy.ndarray
        Indices of the free pixels.
    hard : numpy.ndarray
        ``(n,)`` the fixed label of every pixel (0 = free).
    """
    c = problem.constraints
    if c is None or not c.has_area:
        return None
    k = problem.k
    w = c.pixel_weights(problem.n)
    fixed = np.bincount(hard[hard > 0] - 1, weights=w[hard > 0], minlength=k)
    slack = _slack(problem)
    lo = np.where(c.area_given, c.lo - slack, -np.inf)
    hi = np.where(c.area_given, c.hi + slack, np.inf)
    if k > 2:
        return BoxWithSums(k, w[free], lo - fixed, hi - fixed)
    total = float(w[free].sum())
    # label 1's area is sum(w v) + fixed[0], label 2's total - sum(w v) + fixed[1]
    low = max(lo[0] - fixed[0], total + fixed[1] - hi[1])
    high = min(hi[0] - fixed[0], total + fixed[1] - lo[1])
    return BoxWithSums(1, w[free], [low], [high])


def apart_rows(problem: MRFProblem, free: np.ndarray, hard: np.ndarray
               ) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """``(C, d)``: the rows ``C x <= d`` that keep apart labels apart, over the free variables
    (pixel-major, K columns), or None without apart pairs."""
    c = problem.constraints
    if c is None or not c.has_apart:
        return None
    k = problem.k
    pos = np.full(problem.n, -1, np.int64)
    pos[free] = np.arange(free.size)
    g = problem.graph
    ends = tuple(np.asarray(e, np.int64) for e in edge_ends(g))
    rows, cols, rhs = [], [], []
    r = 0
    pairs = [(a, b) for a in range(k) for b in range(k) if a != b and c.apart[a, b]]
    for p, q in (ends, ends[::-1]):  # (i, j) and (j, i): each neighbouring pair, both orders
        fp, fq = pos[p] >= 0, pos[q] >= 0
        for a, b in pairs:  # x_pa + x_qb <= 1
            both = np.flatnonzero(fp & fq)
            m = both.size
            rows.append(np.repeat(np.arange(r, r + m), 2))
            cols.append(np.stack([pos[p[both]] * k + a, pos[q[both]] * k + b], 1).ravel())
            rhs.append(np.ones(m))
            r += m
            # q fixed to b: x_pa <= 0 (q fixed elsewhere: the row holds whatever x_pa is)
            one = np.flatnonzero(fp & ~fq & (hard[q] == b + 1))
            rows.append(np.arange(r, r + one.size))
            cols.append(pos[p[one]] * k + a)
            rhs.append(np.zeros(one.size))
            r += one.size
    C = sp.csr_matrix((np.ones(sum(x.size for x in cols)), (np.concatenate(rows),
                                                           np.concatenate(cols))),
                      shape=(r, free.size * k))
    return C, np.concatenate(rhs)


def rounding(area: BoxWithSums, backend) -> callable:
    """The rounding function :class:`solver.admm.loop.LpBoxADMM` takes for an area set."""
    def round_host(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float64)
        if area.k == 1:
            return round_k2_sums(x, area.weights, float(area.lo[0]), float(area.hi[0]))
        return round_onehot_sums(x, area.k, area.weights, area.lo, area.hi)

    if not backend.is_gpu:
        round_host.area = area  # (the loop's fused K = 2 step rounds so itself)
        return round_host
    return lambda x: backend.asarray(round_host(backend.to_numpy(x)))


def ordered_pairs(problem: MRFProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(p, q, degree, largest degree)``: every ordered neighbouring pair of the problem's
    graph (both orders of each edge) and each pixel's number of neighbours, for
    :func:`apart_split` (made once per solve, shared by its restrictions)."""
    i, j = (np.asarray(e, np.int64) for e in edge_ends(problem.graph))
    p = np.concatenate([i, j])
    deg = np.bincount(p, minlength=problem.n)
    return p, np.concatenate([j, i]), deg, int(deg.max()) if deg.size else 0


def _pair_operator(first: np.ndarray, second: np.ndarray, nvars: int, backend
                   ) -> LinearOperatorPair:
    """``C0`` of :func:`apart_split` (row ``2r`` picks ``x[first[r]]``, row ``2r + 1``
    ``x[second[r]]`` or nothing where ``second[r] < 0``) as gathers and sums, without a
    sparse matrix and its transpose."""
    xp = backend.xp
    has2 = second >= 0
    f, s2 = backend.asarray(first), backend.asarray(np.where(has2, second, 0))
    mask = backend.asarray(has2.astype(np.float64))
    counts = (np.bincount(first, minlength=nvars)
              + np.bincount(second[has2], minlength=nvars)).astype(np.float64)

    def matvec(x):
        out = xp.empty(2 * first.size)
        out[0::2] = x[f]
        out[1::2] = x[s2] * mask
        return out

    def rmatvec(y):
        return (xp.bincount(f, weights=y[0::2], minlength=nvars)
                + xp.bincount(s2, weights=y[1::2] * mask, minlength=nvars))

    return LinearOperatorPair(matvec=matvec, rmatvec=rmatvec, d=xp.zeros(2 * first.size),
                              col_sq=backend.asarray(counts))


def apart_split(problem: MRFProblem, free: np.ndarray, hard: np.ndarray, ratio: float,
                backend, pairs: tuple | None = None, parent: PairSplit | None = None
                ) -> PairSplit | None:
    """The apart rows as a :class:`solver.admm.splits.PairSplit` over the free variables
    (pixel-major, K columns), or None without apart pairs.

    For each apart pair ``{a, b}`` and each ordered neighbouring pair ``(p, q)`` (both orders of
    every edge): ``x_pa + x_qb <= 1`` when both are free, ``x_pa <= 0`` (``x_qb <= 0``) when the
    other is fixed to ``b`` (``a``), ``<= 1`` when it is fixed elsewhere. Rows ``<= 1`` on one
    entry hold anyway; they, and as many more as a pixel lacks neighbours below the largest
    degree ``D``, are kept so that every free variable of label ``a`` is in exactly ``D`` rows
    per pair it belongs to: then ``C0'C0 = I ⊗ diag(c)`` and the one-hot x-update keeps its
    split (``label_diag``). ``pairs`` is :func:`ordered_pairs` of the problem, when the caller
    has it; ``parent`` the split this one restricts (fewer free pixels), whose neighbouring
    pairs with a free end are the only ones looked at.
    """
    c = problem.constraints
    if c is None or not c.has_apart:
        return None
    k = problem.k
    pos = np.full(problem.n, -1, np.int64)
    pos[free] = np.arange(free.size)
    p, q, deg, most = ordered_pairs(problem) if pairs is None else pairs
    pair_a, pair_b = (np.asarray(v, np.int64) for v in np.nonzero(np.triu(c.apart)))
    active = np.arange(p.size) if parent is None else parent.with_free
    free = np.asarray(free, np.int64)
    first, second, bounds, keys, counts, with_free, kinds, layout = pair_split_rows(
        pos, (p, q), active, deg, most, free, np.asarray(hard, np.int64), k, (pair_a, pair_b))
    has2 = second >= 0
    op = _pair_operator(first, second, free.size * k, backend)
    op.label_diag = counts
    split = PairSplit(op, backend.asarray(has2.astype(np.float64)),
                      backend.asarray(bounds), float(ratio),
                      rows=None if backend.is_gpu else (first, second))
    split.keys = keys.ravel()
    # (for a restriction's split and carry_split_state)
    split.with_free, split.kinds, split.layout = with_free, kinds, layout
    split.free, split.degrees = free, (deg, most, pair_a.size)
    return split


def carry_split_state(parent: PairSplit, child: PairSplit, z0, y0, x, backend):
    """``(z0, y0)`` of ``child`` (the split of a restriction: more pixels fixed) from the
    parent's: each copy and dual whose row entry is still there carries over (a row whose other
    pixel was fixed keeps its free entry's); the others start as a new split does, at
    ``C0 x`` with a zero dual."""
    deg, most, npairs = child.degrees
    src = carry_sources((parent.with_free, parent.kinds, parent.layout, parent.free),
                        (child.with_free, child.kinds, child.layout, child.free), deg, most,
                        npairs)
    found = src >= 0
    src = src[found]
    z_host, y_host = backend.to_numpy(z0), backend.to_numpy(y0)
    new_z = backend.to_numpy(child.op.matvec(x) - child.op.d).copy()
    new_y = np.zeros(child.keys.size)
    new_z[found] = z_host[src]
    new_y[found] = y_host[src]
    return backend.asarray(new_z), backend.asarray(new_y)
