"""Graph matching as a binary quadratic program (the paper's §4.2), with its baselines.

The problem: given two graphs with ``n1`` and ``n2`` nodes and a non-negative symmetric affinity
matrix ``M`` over candidate matches (``M[(i,a),(j,b)]`` says how well the edge ``i-j`` of the first
graph agrees with the edge ``a-b`` of the second), find the one-to-one matching

    maximise  x'Mx   over x in {0,1}^(n1 n2),  sum_a x_ia <= 1,  sum_i x_ia <= 1,

where ``x_ia = 1`` matches node ``i`` of the first graph to node ``a`` of the second. The variables
are laid out row-major, ``x[i * n2 + a]`` (``x.reshape(n1, n2)`` is the assignment matrix).

**The BQP that ADMM solves.** ``M`` is rarely positive semi-definite, so the paper uses the
identity (for binary ``x``, ``x_k^2 = x_k``)

    x'Mx = x'(M - D)x + d'x = -x'Lx + d'x,   d = M 1,  D = diag(d),  L = D - M,

and minimises ``x'Lx - d'x``. ``L`` is the Laplacian of the graph whose edge weights are the
affinities, so it is positive semi-definite by construction (no eigenvalue shift is needed), and
sparse wherever ``M`` is. :func:`laplacian_bqp` builds it; the matching score of a binary ``x`` is
minus its BQP objective.

**Constraints.** As ``M >= 0``, adding a match never lowers ``x'Mx``, so some maximiser matches
every node of the smaller graph. By default (``equality=True``) the smaller side's rows are
therefore equalities (``= 1``) and the larger side's inequalities (``<= 1``); with the same number
of nodes on both sides, both are equalities (a permutation). ``equality=False`` keeps the paper's
``C2 x <= 1`` throughout.

**Data.** :func:`make_problem` follows the synthetic protocol common in the matching literature
(Leordeanu & Hebert 2005; Cho, Lee & Lee 2010): ``N`` points uniform in the unit square; the second
graph is a copy under a random small affine deformation and Gaussian noise on each point, plus
outlier points uniform in the same square, then rotated, translated and shuffled; both graphs are
complete, edges weighted by length, and the affinity of two candidate matches is
``exp(-(d_ij - d_ab)^2 / sigma^2)``, cut to zero where ``|d_ij - d_ab| >= cutoff * sigma``
(which keeps ``M`` sparse). Matches of a node with itself (``i = j`` or ``a = b``) get no affinity.

**Baselines.** :func:`spectral_matching` (Leordeanu & Hebert 2005: the leading eigenvector of
``M``, rounded to a matching by the Hungarian method, ``scipy.optimize.linear_sum_assignment``) and
:func:`ipfp` (Leordeanu, Hebert & Sukthankar 2009: the integer projected fixed point method).
:func:`admm_matching` runs :func:`solver.bqp.solve_bqp` on the Laplacian BQP, started, as in the
paper, from spectral matching's answer; it keeps the best of ADMM's answer and its iterates
rounded to matchings by the Hungarian method, and ends with :func:`local_ascent` from its answer
and from each distinct rounded iterate, keeping the highest: :func:`swap_descent`, a local search
over swaps of partners (the analogue of the one-flip descent ``solve_bqp`` ends unconstrained
problems with), and IPFP's steps in turn. ``form="shift"`` runs ADMM on ``-x'Mx`` instead, made
PSD by the smallest uniform diagonal shift ``lambda_max(M)`` (``solve_bqp``'s own treatment of an
indefinite ``A``).

**Cost.** ``M`` has about ``rho (n1 n2)^2`` non-zeros, ``rho`` the fraction of pairs of edges
whose lengths differ by less than ``cutoff * sigma`` (about 0.3 with the defaults), built in
``O(n1^2 n2^2)`` time a row block at a time; each ADMM iteration costs a few products with the
sparse ``L`` (inner conjugate-gradient steps), so its time grows like ``nnz(M)``, i.e. like
``N^4`` for ``N`` nodes a side, times the iteration count (a few hundred to ``max_iter``).
``solve_bqp`` makes no dense ``n x n`` array for a sparse ``A`` of more than 1500 variables; below
that it takes one dense eigendecomposition to check ``A``'s smallest eigenvalue.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.optimize import linear_sum_assignment

from solver.bqp import solve_bqp
from solver.problems import matching_kernels as mk

log = logging.getLogger(__name__)

#: Names of the methods, as the benchmark records them.
METHODS = ("sm", "ipfp", "admm")


# --------------------------------------------------------------------------- the problem
@dataclass(frozen=True)
class MatchingProblem:
    """Two point sets, their affinity matrix and the true correspondence.

    Attributes
    ----------
    points1 : numpy.ndarray, shape (n1, 2)
        Nodes of the first graph.
    points2 : numpy.ndarray, shape (n2, 2)
        Nodes of the second graph (inliers and outliers, shuffled).
    M : scipy.sparse.csr_matrix, shape (n1 n2, n1 n2)
        Symmetric non-negative affinity matrix, variables laid out ``i * n2 + a``.
    truth : numpy.ndarray of int, shape (n1,)
        ``truth[i]`` is the node of the second graph that node ``i`` truly corresponds to
        (-1 where it has none).
    """

    points1: np.ndarray
    points2: np.ndarray
    M: sp.csr_matrix
    truth: np.ndarray

    @property
    def n1(self) -> int:
        """Number of nodes of the first graph."""
        return int(self.points1.shape[0])

    @property
    def n2(self) -> int:
        """Number of nodes of the second graph."""
        return int(self.points2.shape[0])

    @property
    def n(self) -> int:
        """Number of variables, ``n1 * n2``."""
        return self.n1 * self.n2

    def score(self, x: Any) -> float:
        """The matching score ``x'Mx`` (larger is better).

        Parameters
        ----------
        x : array_like, shape (n,)

        Returns
        -------
        float
        """
        x = np.asarray(x, dtype=np.float64).ravel()
        return float(x @ (self.M @ x))

    def accuracy(self, x: Any) -> float:
        """Fraction of the first graph's nodes with a true match that ``x`` matches correctly.

        Parameters
        ----------
        x : array_like, shape (n,)
            A binary assignment.

        Returns
        -------
        float
            In [0, 1] (1 when no node has a true match).
        """
        X = np.asarray(x).reshape(self.n1, self.n2)
        has = np.flatnonzero(self.truth >= 0)
        if has.size == 0:
            return 1.0
        return float(np.mean(X[has, self.truth[has]] > 0.5))

    def truth_vector(self) -> np.ndarray:
        """The ground-truth assignment as a 0/1 vector of length ``n`` (int8)."""
        X = np.zeros((self.n1, self.n2), dtype=np.int8)
        has = np.flatnonzero(self.truth >= 0)
        X[has, self.truth[has]] = 1
        return X.ravel()


def is_partial_permutation(x: Any, n1: int, n2: int) -> bool:
    """Whether ``x`` is a valid one-to-one (partial) matching.

    Parameters
    ----------
    x : array_like, shape (n1 * n2,)
    n1, n2 : int
        Numbers of nodes of the two graphs.

    Returns
    -------
    bool
        True when every entry is 0 or 1 and every row and column of ``x.reshape(n1, n2)`` has at
        most one 1.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.shape != (n1 * n2,) or not np.all((x == 0) | (x == 1)):
        return False
    X = x.reshape(n1, n2)
    return bool(np.all(X.sum(axis=1) <= 1) and np.all(X.sum(axis=0) <= 1))


def _pairwise(points: np.ndarray) -> np.ndarray:
    diff = points[:, None, :] - points[None, :, :]
    return np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))


def affinity_matrix(points1: np.ndarray, points2: np.ndarray, *, sigma: float = 0.05,
                    cutoff: float = 3.0) -> sp.csr_matrix:
    """Pairwise affinities from edge lengths, sparse.

    ``M[(i,a),(j,b)] = exp(-(d1[i,j] - d2[a,b])^2 / sigma^2)`` for ``i != j``, ``a != b`` and
    ``|d1[i,j] - d2[a,b]| < cutoff * sigma``; zero otherwise (the diagonal included: no unary
    terms). Built one node of the first graph at a time, so no temporary is larger than
    ``n1 * n2^2`` numbers.

    Parameters
    ----------
    points1 : numpy.ndarray, shape (n1, 2)
    points2 : numpy.ndarray, shape (n2, 2)
    sigma : float
        Width of the Gaussian on the difference of edge lengths (> 0).
    cutoff : float
        Differences of ``cutoff * sigma`` or more give no affinity (> 0).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n1 n2, n1 n2)
        Symmetric, non-negative, variables laid out ``i * n2 + a``.
    """
    if not sigma > 0 or not cutoff > 0:
        raise ValueError(f"sigma and cutoff must be > 0, got {sigma} and {cutoff}")
    p1 = np.asarray(points1, dtype=np.float64)
    p2 = np.asarray(points2, dtype=np.float64)
    n1, n2 = p1.shape[0], p2.shape[0]
    d1, d2 = _pairwise(p1), _pairwise(p2)
    off2 = ~np.eye(n2, dtype=bool)
    a_idx, b_idx = np.nonzero(off2)  # the second graph's edges, both directions
    e2 = d2[a_idx, b_idx]
    order = np.argsort(e2, kind="stable")
    a_idx, b_idx, e2 = a_idx[order], b_idx[order], e2[order]
    width = cutoff * sigma
    rows, cols, vals = [], [], []
    for i in range(n1):
        for j in range(n1):
            if i == j:
                continue
            # the edges a-b of the second graph whose length is within the cutoff of d1[i,j]
            lo, hi = np.searchsorted(e2, [d1[i, j] - width, d1[i, j] + width])
            if lo >= hi:
                continue
            delta = e2[lo:hi] - d1[i, j]
            keep = np.abs(delta) < width
            rows.append(i * n2 + a_idx[lo:hi][keep])
            cols.append(j * n2 + b_idx[lo:hi][keep])
            vals.append(np.exp(-(delta[keep] / sigma) ** 2))
    n = n1 * n2
    if rows:
        r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    else:
        r = c = np.zeros(0, dtype=np.int64)
        v = np.zeros(0)
    M = sp.csr_matrix((v, (r, c)), shape=(n, n))
    M.sum_duplicates()
    return M


def make_problem(nodes: int, *, noise: float = 0.0, outliers: int = 0,
                 deformation: float = 0.05, sigma: float = 0.05, cutoff: float = 3.0,
                 seed: int | np.random.SeedSequence | None = None) -> MatchingProblem:
    """A synthetic instance: a random point set and a noisy, deformed copy with outliers.

    Parameters
    ----------
    nodes : int
        Number of nodes of the first graph (all inliers), >= 1.
    noise : float
        Standard deviation of the Gaussian noise added to each point of the copy (the unit square
        is the scale).
    outliers : int
        Points added to the second graph, uniform in the unit square.
    deformation : float
        Standard deviation of the entries of ``E`` in the random affine map ``I + E`` applied to
        the copy (about the centre of the square) before the noise.
    sigma, cutoff : float
        Of the affinities; see :func:`affinity_matrix`.
    seed : int or numpy.random.SeedSequence, optional

    Returns
    -------
    MatchingProblem
        With ``n1 = nodes`` and ``n2 = nodes + outliers``; the second graph is also rotated by a
        random angle and translated (edge lengths do not see either) and its nodes shuffled.
    """
    if nodes < 1 or outliers < 0:
        raise ValueError(f"need nodes >= 1 and outliers >= 0, got {nodes} and {outliers}")
    if noise < 0 or deformation < 0:
        raise ValueError(f"noise and deformation must be >= 0, got {noise} and {deformation}")
    rng = np.random.default_rng(seed)
    p1 = rng.uniform(0.0, 1.0, size=(nodes, 2))
    affine = np.eye(2) + deformation * rng.standard_normal((2, 2))
    inliers = (p1 - 0.5) @ affine.T + 0.5 + noise * rng.standard_normal((nodes, 2))
    p2 = np.vstack([inliers, rng.uniform(0.0, 1.0, size=(outliers, 2))])
    theta = rng.uniform(0.0, 2.0 * np.pi)
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    p2 = p2 @ rot.T + rng.uniform(-1.0, 1.0, size=2)
    perm = rng.permutation(nodes + outliers)  # new position k holds old point perm[k]
    p2 = p2[perm]
    where = np.empty_like(perm)
    where[perm] = np.arange(perm.size)
    truth = where[:nodes].astype(np.int64)
    M = affinity_matrix(p1, p2, sigma=sigma, cutoff=cutoff)
    log.debug("matching instance: %d x %d nodes, M has %d non-zeros (%.2f%%)", nodes,
              nodes + outliers, M.nnz, 100.0 * M.nnz / max(1, M.shape[0]) ** 2)
    return MatchingProblem(p1, p2, M, truth)


# --------------------------------------------------------------------------- the BQP
def laplacian_bqp(M: sp.spmatrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """The paper's PSD form of ``max x'Mx``: ``min x'Lx + b'x``, ``L = diag(M1) - M``, ``b = -M1``.

    For binary ``x``, ``x'Lx + b'x = -x'Mx``: the diagonal ``diag(d)`` adds ``d'x`` to the
    quadratic form, which ``b = -d`` takes away again. ``L`` is a graph Laplacian (non-negative
    weights), hence positive semi-definite, and as sparse as ``M`` plus its diagonal.

    Parameters
    ----------
    M : scipy sparse matrix, shape (n, n)
        Symmetric, non-negative.

    Returns
    -------
    L : scipy.sparse.csr_matrix
    b : numpy.ndarray
        ``-M 1``.
    """
    M = sp.csr_matrix(M, dtype=np.float64)
    d = np.asarray(M.sum(axis=1)).ravel()
    L = (sp.diags(d) - M).tocsr()
    return L, -d


def assignment_constraints(n1: int, n2: int, *, equality: bool = True
                           ) -> tuple[tuple[sp.csr_matrix, np.ndarray] | None,
                                      tuple[sp.csr_matrix, np.ndarray] | None]:
    """The one-to-one constraints as ``(eq, ineq)`` pairs for :func:`solver.bqp.solve_bqp`.

    Parameters
    ----------
    n1, n2 : int
        Numbers of nodes of the two graphs (variables ``i * n2 + a``).
    equality : bool
        True: the smaller side's sums are equalities ``= 1`` (both sides when ``n1 == n2``), the
        larger side's ``<= 1``. False: all ``<= 1`` (the paper's ``C2 x <= 1``).

    Returns
    -------
    eq, ineq : tuple (C, d) or None
    """
    rows = sp.kron(sp.identity(n1), np.ones((1, n2)), format="csr")  # sum_a x_ia, per i
    cols = sp.kron(np.ones((1, n1)), sp.identity(n2), format="csr")  # sum_i x_ia, per a
    if not equality:
        C = sp.vstack([rows, cols], format="csr")
        return None, (C, np.ones(n1 + n2))
    if n1 == n2:
        return (sp.vstack([rows, cols], format="csr"), np.ones(n1 + n2)), None
    small, large = (rows, cols) if n1 < n2 else (cols, rows)
    return (small, np.ones(small.shape[0])), (large, np.ones(large.shape[0]))


def hungarian(scores: Any) -> np.ndarray:
    """The matching that maximises the sum of ``scores`` (the Hungarian method).

    Parameters
    ----------
    scores : array_like, shape (n1, n2)

    Returns
    -------
    numpy.ndarray of int8, shape (n1 * n2,)
        A 0/1 assignment matching ``min(n1, n2)`` nodes.
    """
    S = np.asarray(scores, dtype=np.float64)
    r, c = linear_sum_assignment(S, maximize=True)
    X = np.zeros(S.shape, dtype=np.int8)
    X[r, c] = 1
    return X.ravel()


# --------------------------------------------------------------------------- methods
@dataclass
class MatchingResult:
    """A method's matching.

    Attributes
    ----------
    method : str
        ``"sm"``, ``"ipfp"`` or ``"admm"``.
    x : numpy.ndarray of int8, shape (n,)
        The assignment (``x.reshape(n1, n2)``).
    objective : float
        ``x'Mx``.
    accuracy : float
        Fraction of true matches found.
    feasible : bool
        Whether ``x`` is a valid partial permutation.
    time_s : float
        Wall time, including the spectral start for the methods started from it.
    iterations : int
        Iterations of the method (0 for spectral matching).
    info : dict
        Method-specific details (ADMM: its own feasibility, iterations, status).
    """

    method: str
    x: np.ndarray
    objective: float
    accuracy: float
    feasible: bool
    time_s: float
    iterations: int = 0
    info: dict[str, Any] = field(default_factory=dict)


def _result(problem: MatchingProblem, method: str, x: np.ndarray, t: float, iterations: int = 0,
            **info: Any) -> MatchingResult:
    x = np.asarray(x).astype(np.int8).ravel()
    return MatchingResult(method, x, problem.score(x), problem.accuracy(x),
                          is_partial_permutation(x, problem.n1, problem.n2), t, iterations, info)


def leading_eigenvector(M: sp.spmatrix) -> np.ndarray:
    """The non-negative principal eigenvector of a symmetric non-negative ``M`` (unit norm).

    Deterministic: ARPACK starts from the all-ones vector; a small ``M`` is decomposed densely.

    Parameters
    ----------
    M : scipy sparse matrix, shape (n, n)

    Returns
    -------
    numpy.ndarray, shape (n,)
    """
    n = M.shape[0]
    if M.nnz == 0:
        return np.full(n, 1.0 / np.sqrt(max(n, 1)))
    if n <= 64:
        vals, vecs = np.linalg.eigh(M.toarray())
        v = vecs[:, -1]
    else:
        _, vecs = spla.eigsh(M, k=1, which="LA", v0=np.ones(n), tol=1e-8)
        v = vecs[:, 0]
    v = np.abs(v)  # Perron-Frobenius: a non-negative eigenvector exists
    return v / max(np.linalg.norm(v), 1e-300)


def spectral_matching(problem: MatchingProblem) -> MatchingResult:
    """Spectral matching (Leordeanu & Hebert, ICCV 2005) with Hungarian rounding.

    The leading eigenvector of ``M`` maximises ``v'Mv`` over ``||v|| = 1``; reshaped to
    ``(n1, n2)`` it is rounded to the matching with the largest sum of its entries by
    ``scipy.optimize.linear_sum_assignment``.

    Parameters
    ----------
    problem : MatchingProblem

    Returns
    -------
    MatchingResult
        ``info["eigenvector"]`` holds the continuous solution.
    """
    t0 = time.perf_counter()
    v = leading_eigenvector(problem.M)
    x = hungarian(v.reshape(problem.n1, problem.n2))
    return _result(problem, "sm", x, time.perf_counter() - t0, eigenvector=v)


def ipfp(problem: MatchingProblem, x0: Any = None, *, max_iter: int = 100) -> MatchingResult:
    """Integer projected fixed point (Leordeanu, Hebert & Sukthankar, NIPS 2009).

    From ``x`` (continuous, in the assignment polytope, or binary), repeat: ``b`` = the matching
    maximising ``b'Mx`` (the Hungarian method on ``Mx``, the first-order Taylor step); the line
    search of ``f(x + t(b - x))`` on ``[0, 1]`` (``C = x'M(b - x)``, ``D = (b - x)'M(b - x)``:
    ``t = 1`` when ``D >= 0``, else ``min(-C/D, 1)``); keep the best ``b`` seen; stop when ``x``
    no longer moves.

    Parameters
    ----------
    problem : MatchingProblem
    x0 : array_like, shape (n,), optional
        Start; the uniform point ``1/max(n1, n2)`` when None. A binary feasible start also counts
        as a candidate, so the result is never worse than it.
    max_iter : int
        Iteration limit.

    Returns
    -------
    MatchingResult
        The best discrete ``b`` seen (``time_s`` excludes computing ``x0``).
    """
    t0 = time.perf_counter()
    M, n1, n2 = problem.M, problem.n1, problem.n2
    x = (np.full(problem.n, 1.0 / max(n1, n2)) if x0 is None
         else np.asarray(x0, dtype=np.float64).ravel().copy())
    best_x, best = None, -np.inf
    if x0 is not None and is_partial_permutation(x, n1, n2):
        best_x, best = x.astype(np.int8), problem.score(x)
    Mx = M @ x
    it = 0
    for it in range(1, max_iter + 1):
        b = hungarian(Mx.reshape(n1, n2)).astype(np.float64)
        Mb = M @ b
        score_b = float(b @ Mb)
        if score_b > best:
            best_x, best = b.astype(np.int8), score_b
        step = b - x
        C = float(x @ Mb) - float(x @ Mx)         # x'M(b - x)
        D = score_b - 2.0 * float(x @ Mb) + float(x @ Mx)  # (b - x)'M(b - x)
        t = 1.0 if D >= 0 else min(-C / D, 1.0)
        if t <= 0 or np.max(np.abs(step)) == 0:
            break
        x_new = x + t * step
        Mx = Mx + t * (Mb - Mx)
        if np.max(np.abs(x_new - x)) < 1e-12:
            break
        x = x_new
    return _result(problem, "ipfp", best_x, time.perf_counter() - t0, it)


def swap_descent(M: sp.spmatrix, x: Any, n1: int, n2: int, *, max_moves: int | None = None
                 ) -> tuple[np.ndarray, int]:
    """Best-improvement local search over matchings: swaps, moves to free nodes, additions.

    The smallest changes that keep a one-to-one matching (the analogue, under the one-to-one
    rows, of the one-flip descent that :func:`solver.bqp.solve_bqp` ends with on unconstrained
    problems): two matched nodes exchange partners; a matched node moves to a free node of the
    other graph; a free node is matched to a free node. Each step takes the move that raises
    ``x'Mx`` most, until none raises it (on a tie the first in row-major order over the smaller
    side's nodes, swaps before moves before additions). With ``g = Mx`` the gain of a change
    ``delta`` is ``2 delta'g + delta'M delta``; matches sharing a node have no affinity in the
    problems of :func:`make_problem`, but the gains here count every entry of ``M``.

    The loop is compiled (:func:`solver.problems.matching_kernels.descend`): the entries of
    ``M`` the gains need are read by binary search into small tables, read again only for the
    nodes whose partners change, and ``g`` is updated from the changed variables' rows of ``M``,
    so a step costs ``O(k^2)`` for ``k`` matched nodes instead of sparse products and fancy
    indexing of ``M``. The sums are formed in the order of the plain numpy form (``g`` as a
    CSR product with sorted indices sums it), so the steps are the same, rounding included.

    Parameters
    ----------
    M : scipy sparse matrix, shape (n1 n2, n1 n2)
        Symmetric affinities (exactly: its columns are read from its rows).
    x : array_like, shape (n1 n2,)
        A valid partial permutation (``x.reshape(n1, n2)``).
    n1, n2 : int
    max_moves : int, optional
        Limit on the steps (none when None).

    Returns
    -------
    x : numpy.ndarray of int8
        The improved matching (never worse than the input).
    moves : int
        Steps taken.
    """
    if not is_partial_permutation(x, n1, n2):
        raise ValueError("swap_descent needs a valid partial permutation")
    M = sp.csr_matrix(M, dtype=np.float64)
    # the scale of the tolerance is of M as given (before duplicates are summed)
    scale = max(mk.largest_magnitude(np.ascontiguousarray(M.data)), 1e-300)
    if not M.has_canonical_format:  # sorted indices, no duplicates: for the binary searches
        M = M.copy()
        M.sum_duplicates()
    indptr, indices, data = M.indptr, M.indices, np.ascontiguousarray(M.data)
    X = np.asarray(x, dtype=np.float64).reshape(n1, n2)
    # the descent's rows are the smaller side: the first graph's nodes, variable (i, a) at
    # i * n2 + a, or the second graph's, (a, i) at i * n2 + a
    rows_first = n1 <= n2
    P = X if rows_first else X.T
    partner = np.where(P.sum(axis=1) > 0.5, np.argmax(P, axis=1), -1).astype(np.int64)
    sr, sc = (n2, 1) if rows_first else (1, n2)
    g = np.zeros(n1 * n2)
    support = np.flatnonzero(X.ravel())
    mk.add_columns(indptr, indices, data, g, support, np.ones(support.size), np.zeros(g.size))
    tol = 1e-12 * scale * max(min(n1, n2), 1)
    moves = mk.descend((indptr, indices, data), mk.diagonal(indptr, indices, data), g, partner,
                       P.shape[1], sr, sc, tol, -1 if max_moves is None else int(max_moves))
    out = np.zeros(P.shape, dtype=np.int8)
    matched = np.flatnonzero(partner >= 0)
    out[matched, partner[matched]] = 1
    return (out if rows_first else out.T).ravel(), int(moves)


ADMM_FORMS = ("laplacian", "shift")


def _matched_score(M: sp.csr_matrix, x: np.ndarray) -> float:
    """``x'Mx`` for a 0/1 ``x`` with few ones: the sum of M's block on them."""
    S = np.flatnonzero(x)
    return float(M[S][:, S].sum())


def admm_matching(problem: MatchingProblem, x0: Any = None, *, form: str = "laplacian",
                  equality: bool = True, round_iterates: bool = True, polish: bool = True,
                  ascent_starts: int | None = None, backend: str = "cpu",
                  **params: Any) -> MatchingResult:
    """ℓ2-box ADMM on the matching BQP with the one-to-one constraints, then a local ascent.

    Parameters
    ----------
    problem : MatchingProblem
    x0 : array_like, shape (n,), optional
        Start point (the paper starts from spectral matching's answer); None starts at the
        uniform ``1/max(n1, n2)``.
    form : {"laplacian", "shift"}
        Which PSD minimisation of ``-x'Mx`` ADMM runs. ``"laplacian"``: the paper's,
        ``min x'Lx - d'x`` (:func:`laplacian_bqp`). ``"shift"``: ``min -x'Mx``, which
        :func:`solver.bqp.solve_bqp` makes PSD by the smallest uniform shift,
        ``-M + lambda_max(M) I`` with ``b = -lambda_max(M) 1`` (the same values on binary points;
        a tighter relaxation, as ``lambda_max(M) <= max_i d_i``).
    equality : bool
        See :func:`assignment_constraints`.
    round_iterates : bool
        Also round every continuous iterate to its nearest matching (the Hungarian method on
        ``x.reshape(n1, n2)``, through ``solve_bqp``'s callback) and keep the best of these and
        ADMM's own answer. ``solve_bqp`` rounds an iterate entry by entry (or by the largest
        entry of each equality row), which can break the other side's rows; the best matching
        is often met early, while the penalty is still small.
    polish : bool
        Finish with :func:`local_ascent` (the swap descent, then IPFP's steps and the descent in
        turn while they raise the score) from ADMM's answer and from its distinct rounded
        iterates (``ascent_starts``), and keep the highest end (the better start is ahead on
        ties); never lowers the score.
    ascent_starts : int or None
        How many of the distinct rounded iterates, best first, the ascent also starts from
        besides ADMM's answer; None (the default) for all of them. Each ascent costs a few
        Hungarian steps and a compiled swap descent (about 0.15 s at 60 nodes, where ADMM
        takes 5-40 s and rounds to 3-75 distinct matchings). Needs ``round_iterates``.
    backend : {"cpu", "gpu", "auto"}
    **params
        ADMM parameters (fields of :class:`solver.ADMMParams`).

    Returns
    -------
    MatchingResult
        ``x`` is ADMM's binary answer when it meets the constraints, otherwise (rare: ADMM ran
        out of iterations before every row held; ``info["admm_feasible"]`` is False) its last
        continuous iterate rounded by the Hungarian method; or the better rounded iterate, with
        ``round_iterates``; then the descent, if asked.
        ``info["admm_objective"]``, ``info["admm_accuracy"]`` are of ADMM's own point (the best
        of its answer and its rounded iterates), before the descent; ``info["rounded_iterate"]``
        the iteration whose rounding gave it (None when ADMM's answer was best);
        ``info["moves"]`` the descent's steps, ``info["ascents"]`` the rounds in which IPFP's
        steps raised the score, ``info["ascended_from"]`` which of ADMM's points (``"answer"``,
        or ``"iterate r"``: the r-th best distinct rounded iterate) the kept ascent started
        from. ``time_s`` excludes computing ``x0``.
    """
    if form not in ADMM_FORMS:
        raise ValueError(f"form must be one of {', '.join(ADMM_FORMS)}, got {form!r}")
    t0 = time.perf_counter()
    if form == "laplacian":
        A, b = laplacian_bqp(problem.M)
    else:
        A, b = -sp.csr_matrix(problem.M, dtype=np.float64), None
    eq, ineq = assignment_constraints(problem.n1, problem.n2, equality=equality)
    start = (np.full(problem.n, 1.0 / max(problem.n1, problem.n2)) if x0 is None
             else np.asarray(x0, dtype=np.float64).ravel())
    M = sp.csr_matrix(problem.M)
    # the distinct matchings the iterates round to: (score, first iteration, matching)
    rounded: dict[bytes, tuple[float, int, np.ndarray]] = {}

    def rounder(state: Any) -> None:
        y = hungarian(state.x_host().reshape(problem.n1, problem.n2))
        key = np.packbits(y).tobytes()
        if key not in rounded:
            rounded[key] = (_matched_score(M, y), state.iteration, y)

    res = solve_bqp(A, b, eq=eq, ineq=ineq, x0=start, backend=backend,
                    callback=rounder if round_iterates else None, **params)
    x = res.x
    if not res.feasible:
        log.info("ADMM's best point violates the one-to-one rows; rounding its continuous "
                 "iterate by the Hungarian method")
        x = hungarian(res.x_continuous.reshape(problem.n1, problem.n2))
    answer = np.asarray(x).ravel().astype(np.int8)
    answer_score = problem.score(answer)
    ranked = sorted(rounded.items(), key=lambda kv: -kv[1][0])  # stable: the earliest on ties
    from_iterate = bool(ranked) and ranked[0][1][0] > answer_score
    x = ranked[0][1][2] if from_iterate else answer
    own_score, own_acc = problem.score(x), problem.accuracy(x)
    moves = ascents = 0
    ascended_from = "iterate 1" if from_iterate else "answer"
    if polish:
        # the ascent from ADMM's answer and from its best distinct rounded iterates: the better
        # start does not always climb higher; starts are taken best first, so ties go to it
        answer_key = np.packbits(answer).tobytes()
        others = [v for k, v in ranked if k != answer_key]
        if ascent_starts is not None:
            others = others[:max(0, ascent_starts)]
        starts = [(answer_score, "answer", answer)]
        starts += [(sc, f"iterate {r + 1}", y) for r, (sc, _, y) in enumerate(others)]
        starts.sort(key=lambda t: -t[0])       # stable: the answer ahead on ties
        top = -np.inf
        for _, name, start in starts:
            y, m, a = local_ascent(problem, start)
            score = problem.score(y)
            if score > top:
                top, x, moves, ascents, ascended_from = score, y, m, a, name
    return _result(problem, "admm", x, time.perf_counter() - t0, res.iterations,
                   admm_feasible=bool(res.feasible), status=res.status,
                   admm_objective=own_score, admm_accuracy=own_acc, moves=moves,
                   ascents=ascents, rounded_iterate=ranked[0][1][1] if from_iterate else None,
                   ascended_from=ascended_from)


def local_ascent(problem: MatchingProblem, x: Any, *, max_rounds: int = 50
                 ) -> tuple[np.ndarray, int, int]:
    """Raise ``x'Mx`` from a matching by IPFP's steps and the swap descent in turn, until
    neither raises it.

    IPFP from a binary start (:func:`ipfp`) climbs along the linearisation's best matchings
    (each a Hungarian step, then a line search), the swap descent (:func:`swap_descent`) by the
    smallest exchanges; a fixed point of one is often not of the other. Both keep the best
    matching seen, so the score never drops.

    Parameters
    ----------
    problem : MatchingProblem
    x : array_like, shape (n,)
        A valid partial permutation.
    max_rounds : int
        Limit on IPFP-then-descent rounds.

    Returns
    -------
    x : numpy.ndarray of int8
        The matching reached (score at least the input's).
    moves : int
        The swap descent's steps, over all rounds.
    ascents : int
        The rounds in which IPFP raised the score.
    """
    x = np.asarray(x).ravel().astype(np.int8)
    x, moves = swap_descent(problem.M, x, problem.n1, problem.n2)
    score, ascents = problem.score(x), 0
    for _ in range(max_rounds):
        y = ipfp(problem, x).x
        if problem.score(y) <= score + 1e-12 * abs(score):
            break
        ascents += 1
        y, m = swap_descent(problem.M, y, problem.n1, problem.n2)
        x, score, moves = y, problem.score(y), moves + m
    return x, moves, ascents


def solve_all(problem: MatchingProblem, *, admm_params: dict[str, Any] | None = None,
              form: str = "laplacian", equality: bool = True, round_iterates: bool = True,
              polish: bool = True, ascent_starts: int | None = None
              ) -> dict[str, MatchingResult]:
    """Spectral matching, then IPFP and ADMM both started from its answer (as in the paper).

    Parameters
    ----------
    problem : MatchingProblem
    admm_params : dict, optional
        ADMM parameters for :func:`admm_matching`.
    form, equality, round_iterates, polish, ascent_starts
        See :func:`admm_matching`.

    Returns
    -------
    dict
        ``{"sm": ..., "ipfp": ..., "admm": ...}``; the times of IPFP and ADMM include the spectral
        start's.
    """
    sm = spectral_matching(problem)
    out = {"sm": sm}
    for name, fn in (("ipfp", lambda: ipfp(problem, sm.x)),
                     ("admm", lambda: admm_matching(problem, sm.x, form=form, equality=equality,
                                                    round_iterates=round_iterates,
                                                    polish=polish, ascent_starts=ascent_starts,
                                                    **(admm_params or {})))):
        r = fn()
        r.time_s += sm.time_s
        out[name] = r
    return out
