"""Information-theoretic clustering (the paper's §4.3) as a binary quadratic program.

The model (Wang & Sha, AISTATS 2011, as the ℓp-box ADMM paper poses it) assigns ``N`` points to
``K`` clusters of equal size so that points of one cluster are close::

    min_Y  tr(Y' W Y)   over Y in {0,1}^(N x K),  Y 1_K = 1_N,  Y' 1_N = N/K 1_K

with ``W_ij = log2 ||r_i - r_j||^2`` on a nearest-neighbour graph (negative for close pairs, so
the minimum gathers them). This module builds it the way the authors' code does
(``matlab/demo/clustering/params_grid_demo_clustering.m`` of wubaoyuan/Lpbox-ADMM):

- every feature is mapped affinely onto ``[-1, 1]`` (:func:`scale_features`);
- each point is joined to its 5 nearest neighbours (itself excluded), with weight
  ``log2`` of the *squared* Euclidean distance; a pair at distance 0 gets weight 0 (the
  authors' ``W(W == -inf) = 0``). The authors sum ``tr(Y' W Y)`` over this directed k-NN
  matrix; :func:`knn_log_weights` returns its symmetric part ``(W + W') / 2``, which gives every
  ``Y`` the same objective (a pair that is a neighbour both ways keeps its full weight, a
  one-way pair half of it);
- ``L = D + W`` with ``D = diag(-W 1)`` (the Laplacian of the similarity ``-W``), and the BQP
  ``min y' (L ⊗ I_K) y`` over ``y = vec(Y')`` (point-major: ``y[i*K + k] = Y[i, k]``). On
  points with one cluster each, ``y'(L ⊗ I_K)y = tr(Y' W Y) - 1' W 1``, a constant apart.

The paper writes ``W_ij = log ||r_i - r_j||^2`` over all pairs; its code takes ``log2`` on the
k-NN graph. The base only scales the objective (by ``ln 2``), so the minimisers are the same;
objectives here are in ``log2`` units, as the authors' code reports them.

``L`` is positive semi-definite exactly when every edge's squared distance is at most 1 (all
weights ``<= 0``), as the paper assumes; on wine (13 features) some 5-NN pairs are further
apart and ``L`` is indefinite. The BQP's matrix is ``L ⊗ I_K + c I`` with ``c`` just above
``max(0, -lambda_min(L))`` (:attr:`ClusteringProblem.shift`): positive definite, and on every
point with one cluster a point ``c y'y = c N``, a constant, so the problem is unchanged. (Given
``L ⊗ I_K`` itself, :func:`solver.solve_bqp` finds the Laplacian's zero eigenvalue slightly
negative by rounding (about ``-1e-14`` on iris), shifts by that much with the linear term
``-1e-14 * 1``, and then sizes its penalties by that linear term: ADMM runs with penalties near
``1e-10`` and never meets the size rows. The shift with no linear term keeps the penalties at
the size of ``L``.)

Cluster sizes: when ``K`` divides ``N`` the sizes are the equality rows ``Y' 1 = N/K``. When it
does not (wine: 178 points, 3 clusters), no binary ``Y`` meets ``N/K`` exactly, so each size is
bounded between ``floor(N/K)`` and ``ceil(N/K)`` by two inequality rows per cluster (the
authors' code kept the fractional right-hand side and rounded by the row-wise largest entry,
which can leave the sizes unequal).

ADMM starts from the K-means assignment (``x0``; usually not of equal sizes), as in the paper,
once for each of two penalty starts (:data:`DEFAULT_SETTINGS`), keeping the better answer.
Each answer is made feasible and locally optimal by :func:`balanced_assignment` (the nearest
assignment with sizes within the bounds, when ADMM's best rounded point is not) and
:func:`swap_descent` (moves and swaps that keep the sizes within the bounds, while they lower
the objective); :class:`ClusteringResult` reports ADMM's own point separately.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.spatial import cKDTree

from solver.admm.systems import min_eigenvalue
from solver.bqp.solve import solve_bqp

log = logging.getLogger(__name__)

#: Neighbours per point in the authors' graph for iris, wine and glass (20 for letter).
DEFAULT_NEIGHBOURS = 5


# --------------------------------------------------------------------------- the model
def scale_features(X: Any) -> np.ndarray:
    """Map every feature (column) affinely onto ``[-1, 1]``.

    Parameters
    ----------
    X : array_like, shape (N, d)
        Points as rows.

    Returns
    -------
    ndarray, shape (N, d)
        ``2 (x - min) / (max - min) - 1`` per column; a constant column becomes 0.

    Raises
    ------
    ValueError
        If ``X`` is not a finite two-dimensional array with at least one row.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a 2-D array of points as rows, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X has non-finite entries (NaN or inf)")
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = hi - lo
    out = np.zeros_like(X)
    ok = span > 0
    out[:, ok] = 2.0 * (X[:, ok] - lo[ok]) / span[ok] - 1.0
    return out


def knn_log_weights(X: Any, n_neighbors: int | None = DEFAULT_NEIGHBOURS) -> sp.csr_matrix:
    """The authors' similarity graph: ``log2`` squared distances to the nearest neighbours.

    Parameters
    ----------
    X : array_like, shape (N, d)
        Points as rows (already scaled).
    n_neighbors : int or None
        Neighbours per point, the point itself excluded (ties broken by the k-d tree's order).
        None joins all pairs: ``W_ij = log2 ||x_i - x_j||^2`` for every ``i != j``, the form
        the paper's text writes (with the natural logarithm).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (N, N)
        Symmetric ``W = (A + A') / 2`` where ``A_ij = log2 ||x_i - x_j||^2`` when ``j`` is one of
        ``i``'s neighbours (0 when the distance is 0) and 0 otherwise; zero diagonal.

    Raises
    ------
    ValueError
        If ``n_neighbors`` is not an integer in ``1 .. N-1``.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if n_neighbors is None:
        n_neighbors = n - 1
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, (int, np.integer)):
        raise ValueError(f"n_neighbors must be an integer, got {n_neighbors!r}")
    if not 1 <= n_neighbors <= n - 1:
        raise ValueError(f"n_neighbors must lie in 1..{n - 1} for {n} points, got {n_neighbors}")
    k = int(n_neighbors)
    # Query one more than needed: the point itself comes first unless duplicates tie with it.
    _, idx = cKDTree(X).query(X, k=min(k + 1, n))
    idx = np.asarray(idx).reshape(n, -1)
    rows = np.empty((n, k), dtype=np.int64)
    for i in range(n):
        others = idx[i][idx[i] != i]
        rows[i] = others[:k]
    r = np.repeat(np.arange(n), k)
    c = rows.ravel()
    d2 = np.sum((X[r] - X[c]) ** 2, axis=1)
    with np.errstate(divide="ignore"):
        w = np.where(d2 > 0, np.log2(np.where(d2 > 0, d2, 1.0)), 0.0)
    A = sp.csr_matrix((w, (r, c)), shape=(n, n))
    W = ((A + A.T) * 0.5).tocsr()
    W.eliminate_zeros()
    return W


def size_bounds(n_points: int, k: int) -> tuple[int, int]:
    """Smallest and largest allowed cluster size: ``floor(N/K)`` and ``ceil(N/K)``.

    Parameters
    ----------
    n_points, k : int
        Number of points and of clusters.

    Returns
    -------
    tuple of int
        ``(lo, hi)``; equal when ``K`` divides ``N``.
    """
    return n_points // k, -(-n_points // k)


@dataclass(frozen=True)
class ClusteringProblem:
    """One instance of the model, with its BQP.

    Attributes
    ----------
    features : ndarray, shape (N, d)
        The points as used (scaled to ``[-1, 1]`` unless built with ``scale=False``).
    k : int
        Number of clusters.
    weights : scipy.sparse.csr_matrix, shape (N, N)
        Symmetric ``W`` (:func:`knn_log_weights`).
    laplacian : scipy.sparse.csr_matrix, shape (N, N)
        ``L = D + W``, ``D = diag(-W 1)``: symmetric, rows summing to zero.
    sizes : tuple of int
        ``(lo, hi)`` bounds on every cluster's size (:func:`size_bounds`).
    lambda_min : float
        Smallest eigenvalue of ``L`` (a lower bound beyond 1500 points; about 0, up to
        rounding, when ``L`` is positive semi-definite).
    n_neighbors : int
        Neighbours per point in the graph.
    """

    features: np.ndarray
    k: int
    weights: sp.csr_matrix
    laplacian: sp.csr_matrix
    sizes: tuple[int, int]
    lambda_min: float
    n_neighbors: int = DEFAULT_NEIGHBOURS

    @property
    def n_points(self) -> int:
        """Number of points ``N``."""
        return int(self.features.shape[0])

    @property
    def n_variables(self) -> int:
        """Number of binary variables ``N K``."""
        return self.n_points * self.k

    @property
    def shift(self) -> float:
        """``c`` of the BQP's matrix ``L ⊗ I_K + c I``: ``max(0, -lambda_min)`` plus ``1e-8`` of
        ``L``'s largest diagonal entry (so that rounding cannot leave it indefinite)."""
        top = float(np.max(np.abs(self.laplacian.diagonal()))) if self.n_points else 0.0
        return max(0.0, -self.lambda_min) + 1e-8 * max(top, 1e-300)

    @property
    def psd(self) -> bool:
        """Whether ``L`` is positive semi-definite (up to ``1e-9`` of its largest diagonal
        entry): every edge's weight ``<= 0``, as the paper assumes."""
        top = float(np.max(np.abs(self.laplacian.diagonal()))) if self.n_points else 0.0
        return self.lambda_min >= -1e-9 * max(top, 1e-300)

    @property
    def offset(self) -> float:
        """``tr(Y'WY) - y'Ay`` (``A`` of :meth:`quadratic`) on any ``Y`` with one cluster a
        point: ``1'W1 - c N``."""
        return float(self.weights.sum()) - self.shift * self.n_points

    def quadratic(self) -> sp.csr_matrix:
        """``A = L ⊗ I_K + c I`` of the BQP ``min y'Ay`` over point-major ``y`` (``c`` is
        :attr:`shift`)."""
        A = sp.kron(self.laplacian, sp.identity(self.k), format="csr")
        return (A + self.shift * sp.identity(self.n_variables, format="csr")).tocsr()

    def constraints(self) -> tuple[tuple[sp.csr_matrix, np.ndarray],
                                   tuple[sp.csr_matrix, np.ndarray] | None]:
        """The rows of the BQP, over point-major ``y``.

        Returns
        -------
        eq : tuple (C1, d1)
            ``Y 1_K = 1_N`` (N rows) and, when ``K`` divides ``N``, ``Y' 1_N = N/K`` (K rows).
        ineq : tuple (C2, d2) or None
            When ``K`` does not divide ``N``: ``Y' 1_N <= ceil(N/K)`` and
            ``-Y' 1_N <= -floor(N/K)`` (2K rows); None otherwise.
        """
        n, k = self.n_points, self.k
        onehot = sp.kron(sp.identity(n), np.ones((1, k)), format="csr")
        column = sp.kron(np.ones((1, n)), sp.identity(k), format="csr")
        lo, hi = self.sizes
        if lo == hi:
            C1 = sp.vstack([onehot, column], format="csr")
            return (C1, np.concatenate([np.ones(n), np.full(k, float(lo))])), None
        C2 = sp.vstack([column, -column], format="csr")
        d2 = np.concatenate([np.full(k, float(hi)), np.full(k, -float(lo))])
        return (onehot, np.ones(n)), (C2, d2)


def build_problem(X: Any, k: int, n_neighbors: int | None = DEFAULT_NEIGHBOURS,
                  scale: bool = True) -> ClusteringProblem:
    """Build the model on points ``X`` with ``k`` clusters, by the authors' protocol.

    Parameters
    ----------
    X : array_like, shape (N, d)
        Points as rows.
    k : int
        Number of clusters, ``2 <= k <= N``.
    n_neighbors : int or None
        Neighbours per point in the graph (5 in the authors' code for iris, wine and glass);
        None for all pairs (:func:`knn_log_weights`).
    scale : bool
        Map every feature onto ``[-1, 1]`` first (:func:`scale_features`).

    Returns
    -------
    ClusteringProblem

    Raises
    ------
    ValueError
        For a bad ``X``, ``k`` or ``n_neighbors``.
    """
    X = scale_features(X) if scale else np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array of points as rows, got shape {X.shape}")
    n = X.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 2 <= k <= n:
        raise ValueError(f"k must be an integer in 2..{n}, got {k!r}")
    W = knn_log_weights(X, n_neighbors)
    L = (sp.diags(-np.asarray(W.sum(axis=1)).ravel()) + W).tocsr()
    lam = min_eigenvalue(L)
    log.debug("clustering: %d points, %d clusters, %d edges, lambda_min(L) = %.3g",
              n, k, W.nnz // 2, lam)
    return ClusteringProblem(features=X, k=int(k), weights=W, laplacian=L,
                             sizes=size_bounds(n, int(k)), lambda_min=float(lam),
                             n_neighbors=n - 1 if n_neighbors is None else int(n_neighbors))


# --------------------------------------------------------------------------- measures
def _labels(labels: Any, n: int | None = None) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.ndim != 1 or (n is not None and lab.size != n):
        raise ValueError(f"labels must be a vector of {n if n is not None else 'N'} entries, "
                         f"got shape {lab.shape}")
    if lab.size and not np.issubdtype(lab.dtype, np.integer):
        if not np.all(lab == np.round(lab)):
            raise ValueError("labels must be integers")
        lab = lab.astype(np.int64)
    return lab.astype(np.int64, copy=False)


def one_hot(labels: Any, k: int) -> np.ndarray:
    """Membership matrix ``Y`` (N x K, 0/1) of labels in ``0 .. k-1``.

    Raises
    ------
    ValueError
        For a label outside ``0 .. k-1``.
    """
    lab = _labels(labels)
    if lab.size and (lab.min() < 0 or lab.max() >= k):
        raise ValueError(f"labels must lie in 0..{k - 1}")
    Y = np.zeros((lab.size, k))
    Y[np.arange(lab.size), lab] = 1.0
    return Y


def objective(weights: Any, labels: Any) -> float:
    """``tr(Y' W Y)``: the sum of ``W_ij`` over ordered pairs ``(i, j)`` in one cluster.

    Parameters
    ----------
    weights : sparse matrix or ndarray, shape (N, N)
    labels : array_like of int, shape (N,)
        Any integer labels (only which points share one matters).

    Returns
    -------
    float
    """
    lab = _labels(labels, weights.shape[0])
    _, inv = np.unique(lab, return_inverse=True)
    Y = sp.csr_matrix((np.ones(lab.size), (np.arange(lab.size), inv.ravel())))
    WY = weights @ Y
    return float((Y.multiply(WY)).sum()) if sp.issparse(WY) else float(np.sum(Y.toarray() * WY))


def rand_index(truth: Any, labels: Any) -> float:
    """Rand index: the fraction of the ``N (N-1) / 2`` pairs on which two labellings agree
    (both put the pair in one cluster, or both in different ones).

    Parameters
    ----------
    truth, labels : array_like of int, shape (N,)
        Any integer labels; ``N >= 2``.

    Returns
    -------
    float
        In ``[0, 1]``; 1 when the partitions are the same.
    """
    a = _labels(truth)
    b = _labels(labels, a.size)
    n = a.size
    if n < 2:
        raise ValueError("the Rand index needs at least two points")
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia.ravel(), ib.ravel()), 1.0)

    def pairs(v: np.ndarray) -> float:
        return float(np.sum(v * (v - 1.0)) / 2.0)

    total = n * (n - 1) / 2.0
    both = pairs(table)
    same_a, same_b = pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    return float((total + 2.0 * both - same_a - same_b) / total)


def cluster_sizes(labels: Any, k: int) -> np.ndarray:
    """Number of points in each cluster ``0 .. k-1``."""
    return np.bincount(_labels(labels), minlength=k)[:k]


def is_feasible(problem: ClusteringProblem, labels: Any) -> bool:
    """Whether labels in ``0 .. K-1`` (one cluster a point by construction) give every cluster
    a size within ``problem.sizes``."""
    lab = _labels(labels, problem.n_points)
    if lab.size and (lab.min() < 0 or lab.max() >= problem.k):
        return False
    s = cluster_sizes(lab, problem.k)
    lo, hi = problem.sizes
    return bool(np.all((s >= lo) & (s <= hi)))


# --------------------------------------------------------------------------- K-means
def kmeans(X: Any, k: int, seed: int | None = None, n_init: int = 10, max_iter: int = 300,
           tol: float = 1e-10) -> np.ndarray:
    """Lloyd's K-means from k-means++ seeds; the best of ``n_init`` starts (least inertia).

    Parameters
    ----------
    X : array_like, shape (N, d)
        Points as rows.
    k : int
        Number of clusters.
    seed : int, optional
        Seed of the k-means++ draws (``numpy.random.default_rng``).
    n_init : int
        Number of starts. With 10 (scikit-learn's long-standing default) K-means gives, on
        iris, the partition whose Rand index the paper reports for K-means (87.37, no spread
        over its 10 runs); a single k-means++ start sometimes ends in a worse local minimum.
    max_iter : int
        Lloyd iterations per start.
    tol : float
        Stop a start when no centre moves by more than ``tol`` (squared).

    Returns
    -------
    ndarray of int, shape (N,)
        Labels in ``0 .. k-1``; a cluster that empties is re-seeded at the point furthest from
        its centre, so every label is used.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in 1..{n}, got {k}")
    rng = np.random.default_rng(seed)
    best, best_inertia = None, math.inf
    for _ in range(max(1, int(n_init))):
        centres = _kmeanspp(X, k, rng)
        for _ in range(int(max_iter)):
            d2 = ((X[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
            lab = np.argmin(d2, axis=1)
            new = centres.copy()
            for c in range(k):
                members = lab == c
                if members.any():
                    new[c] = X[members].mean(axis=0)
                else:  # re-seed an empty cluster at the worst-served point
                    far = int(np.argmax(d2[np.arange(n), lab]))
                    new[c] = X[far]
                    lab[far] = c
            shift = float(np.max(np.sum((new - centres) ** 2, axis=1)))
            centres = new
            if shift <= tol:
                break
        d2 = ((X[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        lab = np.argmin(d2, axis=1)
        inertia = float(d2[np.arange(n), lab].sum())
        if inertia < best_inertia - 1e-12:
            best, best_inertia = lab, inertia
    return np.asarray(best, dtype=np.int64)


def _kmeanspp(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    n = X.shape[0]
    centres = [X[rng.integers(n)]]
    d2 = np.sum((X - centres[0]) ** 2, axis=1)
    for _ in range(1, k):
        total = d2.sum()
        i = int(rng.choice(n, p=d2 / total)) if total > 0 else int(rng.integers(n))
        centres.append(X[i])
        d2 = np.minimum(d2, np.sum((X - X[i]) ** 2, axis=1))
    return np.array(centres)


# --------------------------------------------------------------------------- feasibility
def balanced_assignment(scores: Any, lo: int, hi: int) -> np.ndarray:
    """The labels maximising ``sum_i scores[i, label_i]`` with every cluster's size in
    ``[lo, hi]`` (exact: a linear assignment of points to ``hi`` slots per cluster, the first
    ``lo`` of which carry a bonus that fills them all).

    Parameters
    ----------
    scores : array_like, shape (N, K)
        For instance ADMM's continuous iterate, reshaped.
    lo, hi : int
        Size bounds, ``K lo <= N <= K hi``.

    Returns
    -------
    ndarray of int, shape (N,)

    Raises
    ------
    ValueError
        If no assignment meets the bounds.
    """
    S = np.asarray(scores, dtype=np.float64)
    n, k = S.shape
    if not (0 <= lo <= hi and k * lo <= n <= k * hi):
        raise ValueError(f"no assignment of {n} points to {k} clusters has sizes in [{lo}, {hi}]")
    bonus = 1.0 + 2.0 * n * (float(np.max(np.abs(S))) if S.size else 0.0)
    slot_cluster = np.repeat(np.arange(k), hi)
    slot_bonus = np.tile(np.r_[np.full(lo, bonus), np.zeros(hi - lo)], k)
    profit = S[:, slot_cluster] + slot_bonus[None, :]
    rows, cols = linear_sum_assignment(profit, maximize=True)
    out = np.empty(n, dtype=np.int64)
    out[rows] = slot_cluster[cols]
    return out


def swap_descent(weights: Any, labels: Any, k: int, lo: int, hi: int,
                 max_moves: int | None = None) -> tuple[np.ndarray, int]:
    """Best-improvement local search on ``tr(Y'WY)`` that keeps every size within ``[lo, hi]``.

    A move takes one point to another cluster (where both sizes allow it); a swap exchanges two
    points of different clusters. With ``G = W Y`` and ``W`` symmetric with a zero diagonal,
    moving ``i`` from ``a`` to ``b`` changes the objective by ``2 (G_ib - G_ia)``, and swapping
    ``i`` (in ``a``) with ``j`` (in ``b``) by ``2 (G_ib - G_ia + G_ja - G_jb) - 4 W_ij``. The
    best step is taken while it lowers the objective (by more than a relative 1e-12).

    Parameters
    ----------
    weights : sparse matrix or ndarray, shape (N, N)
        Symmetric, zero diagonal.
    labels : array_like of int, shape (N,)
        A start in ``0 .. k-1`` whose sizes lie in ``[lo, hi]``.
    k, lo, hi : int
    max_moves : int, optional
        Stop after this many steps (default: no limit but the descent's end).

    Returns
    -------
    labels : ndarray of int, shape (N,)
    steps : int
        Number of moves and swaps taken.
    """
    Wd = weights.toarray() if sp.issparse(weights) else np.asarray(weights, dtype=np.float64)
    lab = _labels(labels, Wd.shape[0]).copy()
    n = lab.size
    G = Wd @ one_hot(lab, k)
    sizes = cluster_sizes(lab, k)
    scale = max(float(np.abs(Wd).sum()), 1e-300)
    steps = 0
    rows = np.arange(n)
    while max_moves is None or steps < max_moves:
        own = G[rows, lab]
        # moves: gain[i, b] = 2 (G_ib - G_i,lab_i), allowed where sizes permit
        move = 2.0 * (G - own[:, None])
        move[rows, lab] = np.inf
        move[:, sizes >= hi] = np.inf
        move[sizes[lab] <= lo, :] = np.inf
        im, bm = np.unravel_index(int(np.argmin(move)), move.shape)
        best_move = move[im, bm]
        # swaps: delta[i, j] = 2 (G[i, lab_j] - own_i + G[j, lab_i] - own_j) - 4 W_ij
        Gx = G[:, lab]  # G[i, lab_j]
        swap = 2.0 * (Gx - own[:, None] + Gx.T - own[None, :]) - 4.0 * Wd
        swap[lab[:, None] == lab[None, :]] = np.inf
        iS, jS = np.unravel_index(int(np.argmin(swap)), swap.shape)
        best_swap = swap[iS, jS]
        if min(best_move, best_swap) >= -1e-12 * scale:
            break
        if best_move <= best_swap:
            a = lab[im]
            G[:, a] -= Wd[:, im]
            G[:, bm] += Wd[:, im]
            sizes[a] -= 1
            sizes[bm] += 1
            lab[im] = bm
        else:
            a, b = lab[iS], lab[jS]
            G[:, a] += Wd[:, jS] - Wd[:, iS]
            G[:, b] += Wd[:, iS] - Wd[:, jS]
            lab[iS], lab[jS] = b, a
        steps += 1
    return lab, steps


# --------------------------------------------------------------------------- ADMM
#: ADMM settings :func:`solve_admm` tries from the same start, keeping the best answer. The
#: penalty's best start depends on the data (iris: 0.02-0.05, wine: 0.5, both relative to the
#: problem's scale); the authors likewise ran a grid per data set and kept the least objective.
DEFAULT_SETTINGS: tuple[dict[str, Any], ...] = ({"rho0": 0.5}, {"rho0": 0.05})


@dataclass
class ClusteringResult:
    """ADMM's answer to one :class:`ClusteringProblem`.

    Attributes
    ----------
    labels : ndarray of int, shape (N,)
        Cluster of each point, ``0 .. K-1``.
    objective : float
        ``tr(Y'WY)`` of ``labels``.
    feasible : bool
        Every cluster's size lies within the problem's bounds (one cluster a point holds by
        construction).
    time_s : float
        Wall time of the whole solve: every setting's BQP set-up, ADMM, repair and descent.
    iterations : int
        ADMM iterations of the kept setting.
    setting : dict
        The :data:`DEFAULT_SETTINGS` entry (or the caller's) whose answer was kept.
    admm_labels : ndarray of int, shape (N,)
        That setting's own best rounded ADMM point (before repair and descent), as labels.
    admm_objective : float
        ``tr(Y'WY)`` of ``admm_labels``.
    admm_feasible : bool
        Whether that point met every row.
    repaired : bool
        Whether :func:`balanced_assignment` replaced that point (it missed a row).
    descent_steps : int
        Moves and swaps :func:`swap_descent` took after it.
    """

    labels: np.ndarray
    objective: float
    feasible: bool
    time_s: float
    iterations: int
    setting: dict[str, Any]
    admm_labels: np.ndarray
    admm_objective: float
    admm_feasible: bool
    repaired: bool
    descent_steps: int


def solve_admm(problem: ClusteringProblem, init: Any = None, *, seed: int | None = None,
               backend: str = "cpu", settings: Any = DEFAULT_SETTINGS, descent: bool = True,
               **params: Any) -> ClusteringResult:
    """Solve the model by ℓ2-box ADMM (:func:`solver.solve_bqp`) from a start assignment.

    For each setting, ADMM runs on the BQP from ``init``; an answer that misses a row (ADMM
    keeps the least violating rounded point) is replaced by the nearest assignment with sizes
    within the bounds (:func:`balanced_assignment` on the continuous iterate), and then, with
    ``descent``, improved by :func:`swap_descent`. The answer of least objective is kept.

    Parameters
    ----------
    problem : ClusteringProblem
    init : array_like of int, shape (N,), optional
        Start labels (the paper: K-means'), passed as ``x0``; None starts from ``seed``'s
        random point.
    seed : int, optional
        Seed of the random start when ``init`` is None.
    backend : {"cpu", "gpu", "auto"}
    settings : sequence of dict
        ADMM parameters of each try, applied over ``params`` (``({},)`` runs once with
        ``params`` alone).
    descent : bool
        Finish each try with :func:`swap_descent` (never raises the objective).
    **params
        :class:`solver.ADMMParams` fields shared by every try.

    Returns
    -------
    ClusteringResult
        Always feasible.

    Raises
    ------
    ValueError
        For a bad ``init`` or ADMM parameter, or no setting.
    """
    t0 = time.perf_counter()
    settings = [dict(st) for st in settings]
    if not settings:
        raise ValueError("settings must hold at least one setting (({},) for params alone)")
    n, k = problem.n_points, problem.k
    lo, hi = problem.sizes
    if init is not None:
        init = _labels(init, n)
    x0 = None if init is None else one_hot(init, k).ravel()
    A = problem.quadratic()
    eq, ineq = problem.constraints()
    best: ClusteringResult | None = None
    for setting in settings:
        res = solve_bqp(A, None, eq=eq, ineq=ineq, x0=x0, seed=seed, backend=backend,
                        **{**params, **setting})
        admm_labels = np.argmax(np.asarray(res.x, dtype=np.float64).reshape(n, k), axis=1)
        admm_feasible = bool(res.feasible) and is_feasible(problem, admm_labels)
        labels, repaired = admm_labels, False
        if not admm_feasible:
            cont = res.x_continuous if res.x_continuous is not None else res.x
            labels = balanced_assignment(np.asarray(cont, dtype=np.float64).reshape(n, k), lo, hi)
            repaired = True
        steps = 0
        if descent:
            labels, steps = swap_descent(problem.weights, labels, k, lo, hi)
        obj = objective(problem.weights, labels)
        admm_obj = objective(problem.weights, admm_labels)
        log.info("clustering: ADMM %s, %d iterations: objective %.6g%s, then %.6g after %d "
                 "descent steps", setting, res.iterations, admm_obj,
                 "" if admm_feasible else " (misses a row: repaired)", obj, steps)
        trial = ClusteringResult(labels=labels, objective=obj,
                                 feasible=is_feasible(problem, labels), time_s=0.0,
                                 iterations=int(res.iterations), setting=setting,
                                 admm_labels=admm_labels, admm_objective=admm_obj, admm_feasible=admm_feasible,
                                 repaired=repaired, descent_steps=steps)
        if best is None or (not trial.feasible, trial.objective) < (not best.feasible,
                                                                     best.objective):
            best = trial
    assert best is not None
    best.time_s = time.perf_counter() - t0
    return best
