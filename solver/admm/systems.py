"""Problem preparation for ℓp-box ADMM: validation, fixed-variable elimination, constraint
operators and the x-update linear systems.

Everything here runs once per problem (set-up); :mod:`solver.admm.loop` only iterates.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from solver.admm.pcg import PCGResult, pcg
from solver.admm.steps import cpu_kernels
from solver.backend import Backend

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- constraints
@dataclass
class LinearOperatorPair:
    """``C`` as matvec/rmatvec on a backend, with ``d`` and the diagonal of ``C'C``.

    ``groups`` (optional, shape (G, s), padded with the sentinel index ``n``) lists one-hot
    assignment groups (rows of 0/1 entries with disjoint supports and right-hand side 1), used to
    round an iterate to a feasible binary point by taking the largest entry of each group.
    ``group_size`` is set when the groups are consecutive runs of that size covering every
    variable (``x.reshape(-1, group_size)``), which lets the CPU round in one compiled pass.
    ``norm_sq`` bounds the largest eigenvalue of ``C'C`` from above (for the linearised x-update
    of :meth:`OneHotKronSystem.solve`). ``label_diag`` (length ``k``), when set, says that
    ``C'C = I ⊗ diag(label_diag)`` exactly for a pixel-major layout of ``k`` labels, which
    :meth:`OneHotKronSystem.solve` then takes exactly, keeping its split. ``nnz``, when known,
    is the number of non-zeros of ``C`` (what a product costs).
    """

    matvec: Any
    rmatvec: Any
    d: Any
    col_sq: Any
    groups: Any = None
    group_size: int | None = None
    norm_sq: float | None = None
    label_diag: Any = None
    nnz: int | None = None

    @property
    def m(self) -> int:
        """Number of rows."""
        return int(self.d.shape[0])


def sparse_operator(C: sp.spmatrix, d: np.ndarray, backend: Backend) -> LinearOperatorPair:
    """Wrap a scipy sparse ``C`` (and right-hand side ``d``) for use on ``backend``."""
    C = sp.csr_matrix(C, dtype=np.float64)
    col_sq = np.asarray(C.multiply(C).sum(axis=0)).ravel()
    absC = abs(C)
    # ||C||^2 <= (largest absolute row sum) (largest absolute column sum)
    norm_sq = (float(absC.sum(axis=1).max()) * float(absC.sum(axis=0).max())) if C.nnz else 0.0
    Cb = backend.as_sparse(C)
    CTb = backend.as_sparse(C.T.tocsr())
    groups = _onehot_groups(C, d)
    return LinearOperatorPair(
        matvec=lambda x: Cb @ x,
        rmatvec=lambda y: CTb @ y,
        d=backend.asarray(d, dtype=np.float64),
        col_sq=backend.asarray(col_sq),
        groups=None if groups is None else backend.asarray(groups),
        norm_sq=norm_sq,
        nnz=int(C.nnz),
    )


def _onehot_groups(C: sp.csr_matrix, d: np.ndarray) -> np.ndarray | None:
    """Padded index matrix of one-hot groups if ``C x = d`` is an assignment system, else None."""
    if C.nnz == 0 or not np.all(d == 1.0) or not np.all(C.data == 1.0):
        return None
    counts = np.bincount(C.indices, minlength=C.shape[1])
    if counts.max() > 1:  # a variable in two groups: not a partition
        return None
    sizes = np.diff(C.indptr)
    s = int(sizes.max())
    groups = np.full((C.shape[0], s), C.shape[1], dtype=np.int64)
    pos = np.arange(C.nnz) - np.repeat(C.indptr[:-1], sizes)
    groups[np.repeat(np.arange(C.shape[0]), sizes), pos] = C.indices
    return groups


def onehot_operator(n: int, k: int, backend: Backend) -> LinearOperatorPair:
    """``sum_k x[i, k] = 1`` for ``x`` laid out pixel-major (``x.reshape(n, k)``), matrix-free."""
    xp = backend.xp
    groups = np.arange(n * k, dtype=np.int64).reshape(n, k)
    sums = ((lambda x: x.reshape(n, k).sum(axis=1)) if backend.is_gpu
            else (lambda x: cpu_kernels.group_sums(x, k)))
    return LinearOperatorPair(
        matvec=sums,
        rmatvec=lambda y: xp.repeat(y, k),
        d=xp.ones(n),
        col_sq=xp.ones(n * k),
        groups=backend.asarray(groups),
        group_size=k,
    )


# --------------------------------------------------------------------------- linear systems
#: Warm-started CG solves in a row that reuse the previous residual before one recomputes it.
RESIDUAL_REFRESH = 16
class _CompiledCSR:
    """A host CSR matrix with the compiled CG and quadratic form of
    :mod:`solver.admm.steps.cpu_kernels`.

    Right-hand sides are the rows of ``(m, n)`` arrays (each one contiguous). The CG takes the
    off-diagonal part (``off_*``) and the diagonal apart; the quadratic forms the whole matrix. With
    ``padded`` (the default) the CG multiplies by a padded copy of the matrix (rows of 8,
    :func:`solver.admm.steps.cpu_kernels.padded_split`) where every row fits: the same sums as the
    CSR rows, in a fixed unrolled loop (measured: docs/decisions.md, Compiled CPU kernels); False
    keeps the CSR rows, to compare.
    """

    def __init__(self, A: sp.spmatrix, padded: bool = True) -> None:
        A = sp.csr_matrix(A, dtype=np.float64)
        self.data = A.data
        small = A.shape[1] < 2**32  # the padded copy's column indices are 32-bit
        # the padded copy the CG's products read (the same sums as the CSR rows) and the
        # diagonal, in one pass; empty if a row is too wide for it
        diag, self.cols, self.vals = (cpu_kernels.padded_split(A.indptr, A.indices, A.data)
                                      if padded and small
                                      else (None, np.empty((0, 8), np.uint32), np.empty((0, 8))))
        if self.cols.shape[0]:
            # the quadratic forms read the CSR arrays (unsigned columns, as the kernels take
            # them); the CG reads no CSR rows when it has the padded copy
            self.indptr = A.indptr.astype(np.int64, copy=False)
            self.indices, self.diag = A.indices.astype(np.uint32), diag
            self.off_indptr = np.zeros(1, np.int64)
            self.off_indices, self.off_data = np.empty(0, np.uint32), np.empty(0)
        elif small:  # one compiled pass instead of scipy's subtraction
            (self.indptr, self.indices, self.diag, self.off_indptr, self.off_indices,
             self.off_data) = cpu_kernels.split_diagonal(A.indptr, A.indices, A.data)
        else:
            self.indptr = A.indptr.astype(np.int64)
            self.indices = A.indices.astype(np.uint64)
            self.diag = np.asarray(A.diagonal(), dtype=np.float64)
            off = (A - sp.diags(self.diag)).tocsr()
            off.eliminate_zeros()
            self.off_indptr = off.indptr.astype(np.int64)
            self.off_indices = off.indices.astype(np.uint64)
            self.off_data = off.data
        # the matrix as the CG kernels take it
        self.operator = cpu_kernels.SplitMatrix(self.off_indptr, self.off_indices, self.off_data,
                                                self.cols, self.vals, self.diag)
        self._last: tuple | None = None  # (x, b, residual, shift, a_scale) of the last solve
        self._reused = 0
        # (pixel-major x, label directions) of the last one-hot solve
        self._onehot_last: tuple | None = None
        # (x, CG columns, right-hand sides, residuals, shifts, reuses) of solver.admm.steps's
        # last iteration
        self._fused: tuple | None = None

    def pcg(self, a_scale: float, shift: np.ndarray, B: np.ndarray, X0: np.ndarray | None,
            tol: float, maxiter: int, with_quad: bool = True) -> PCGResult:
        """``(a_scale A + shift[c] I) X[c] = B[c]`` for each row, warm-started at ``X0``; with
        ``with_quad`` the result's ``quad`` is the sum of the rows' ``X[c]'A X[c]``.

        When ``X0`` is the previous solution (ADMM's warm start), its residual for the new
        right-hand side and shift is ``B - (B' - R') - (shift - shift') X0`` from the previous
        solve, which spares a product; every :data:`RESIDUAL_REFRESH`-th time it is recomputed
        so the rounding in the recursive residual cannot build up.
        """
        B = np.ascontiguousarray(B, dtype=np.float64)
        shift = np.asarray(shift, dtype=np.float64)
        X = np.zeros_like(B) if X0 is None else np.array(X0, dtype=np.float64, order="C")
        R, P, AP = np.empty_like(B), np.empty_like(B), np.empty_like(B)
        last, have_r = self._last, False
        if (last is not None and X0 is not None and last[0].shape == X.shape
                and last[4] == a_scale and self._reused < RESIDUAL_REFRESH
                and np.array_equal(last[0], X)):
            np.subtract(B, last[1], out=R)
            R += last[2]
            R -= (shift - last[3])[:, None] * X
            have_r = True
            self._reused += 1
        else:
            self._reused = 0
        it, res = cpu_kernels.block_pcg(self.operator, float(a_scale), shift, B, X, float(tol),
                                        int(maxiter), (R, P, AP), have_r)
        self._last = (X.copy(), B.copy(), R, shift, a_scale)  # copies: callers may reuse theirs
        quad = None
        if with_quad:  # from the residual, sparing a product
            quad = sum(cpu_kernels.quad_from_residual(B[c], R[c], X[c], float(a_scale),
                                                      float(shift[c])) for c in range(B.shape[0]))
        return PCGResult(x=X, iterations=int(it), residual=float(res), converged=res <= tol,
                         quad=quad)

    def onehot_solve(self, rhs: np.ndarray, x0: np.ndarray | None, k: int, shift: np.ndarray,
                     tol: float, maxiter: int) -> PCGResult:
        """The x-update of :class:`OneHotKronSystem`: split, one CG per label direction, merge.

        A warm start equal to the last solution reuses that solution's label directions, so the
        CG can reuse its residual too (see :meth:`pcg`).
        """
        rhs = np.ascontiguousarray(rhs, dtype=np.float64)
        last = self._onehot_last
        if x0 is None:
            X0 = np.zeros((k, rhs.size // k))
        elif last is not None and last[0].shape == x0.shape and np.array_equal(last[0], x0):
            X0 = last[1]
        else:
            X0 = cpu_kernels.onehot_split(np.ascontiguousarray(x0, dtype=np.float64), k)
        B = cpu_kernels.onehot_split(rhs, k)
        res = self.pcg(2.0, shift, B, X0, tol, maxiter, with_quad=False)  # (merge makes it)
        x, quad = cpu_kernels.onehot_merge(B, res.x, self._last[2], self._last[3])
        self._onehot_last = (x.copy(), res.x.copy())
        return PCGResult(x=x, iterations=res.iterations, residual=res.residual,
                         converged=res.converged, quad=quad)

    def quad(self, x: np.ndarray, k: int = 1) -> float:
        """``x' (A ⊗ I_k) x`` for a pixel-major vector ``x``."""
        return float(cpu_kernels.quad_form(self.indptr, self.indices, self.data,
                                           np.ascontiguousarray(x, dtype=np.float64), k))

    def tracker(self, k: int = 1) -> Callable[[np.ndarray], float]:
        """``f(x) = x' (A ⊗ I_k) x``, updated from the previous call's ``x`` entry by entry: cheap
        for a sequence of vectors that differ in few entries (ADMM's rounded iterates)."""
        n = (self.indptr.size - 1) * k
        state = {"x": np.zeros(n), "v": np.zeros(n), "q": 0.0}

        def quad(x: np.ndarray) -> float:
            state["q"] = cpu_kernels.quad_update(self.indptr, self.indices, self.data, k,
                                                 state["x"], np.asarray(x, dtype=np.float64),
                                                 state["v"], state["q"])
            return float(state["q"])
        return quad


class GenericSystem:
    """x-update system ``(2A + rho I + rho3 C1'C1 + rho4 C2'C2) x = rhs`` for any sparse/dense A.

    On the CPU a sparse ``A`` without constraints is solved by the compiled CG of
    :mod:`solver.admm.steps.cpu_kernels` (same iterates as :func:`solver.admm.pcg.pcg`, fewer
    passes over memory).
    """

    def __init__(self, A: Any, backend: Backend) -> None:
        self.backend = backend
        self.n = A.shape[0]
        self.nnz = int(A.nnz) if sp.issparse(A) else self.n * self.n   # a product's cost
        self._compiled = None
        if sp.issparse(A):
            self._A = backend.as_sparse(A)
            if backend.is_gpu:
                diag = A.diagonal()
            else:
                self._compiled = _CompiledCSR(A)
                diag = self._compiled.diag
        else:
            self._A = backend.asarray(np.asarray(A, dtype=np.float64))
            diag = np.diag(A)
        self._diag2 = backend.asarray(2.0 * np.asarray(diag, dtype=np.float64))

    def apply_A(self, x: Any) -> Any:
        """``A @ x``."""
        return self._A @ x

    def quad(self, x: Any) -> float:
        """``x' A x``."""
        if self._compiled is not None:
            return self._compiled.quad(x)
        return self.backend.dot(x, self._A @ x)

    def quad_tracker(self) -> Callable[[Any], float]:
        """A function ``x -> x' A x`` that is cheap when ``x`` changes in few entries per call."""
        return self.quad if self._compiled is None else self._compiled.tracker()

    def solve(self, rhs: Any, x0: Any, rho: float, eq: LinearOperatorPair | None,
              rho_eq: float, ineq: LinearOperatorPair | None, rho_ineq: float,
              tol: float, maxiter: int) -> PCGResult:
        """Solve the x-update system by Jacobi-preconditioned CG, warm-started at ``x0``."""
        if self._compiled is not None and eq is None and ineq is None:
            res = self._compiled.pcg(2.0, np.array([rho]), rhs[None, :],
                                     None if x0 is None else x0[None, :], tol, maxiter)
            return PCGResult(res.x[0], res.iterations, res.residual, res.converged, res.quad)
        diag = self._diag2 + rho
        if eq is not None:
            diag = diag + rho_eq * eq.col_sq
        if ineq is not None:
            diag = diag + rho_ineq * ineq.col_sq

        def matvec(v: Any) -> Any:
            out = 2.0 * (self._A @ v) + rho * v
            if eq is not None:
                out += rho_eq * eq.rmatvec(eq.matvec(v))
            if ineq is not None:
                out += rho_ineq * ineq.rmatvec(ineq.matvec(v))
            return out

        ops = [(op, r) for op, r in ((eq, rho_eq), (ineq, rho_ineq)) if op is not None]
        # x'Ax from the CG's residual r = rhs - (2A + rho I + rc C'C) x, where the rows cost
        # less than the product with A the loop would otherwise spend on it (matching: 8e3
        # non-zeros in the rows against 5e6 in A)
        cheap = all(op.nnz is not None for op, _ in ops) and (
            2 * sum(op.nnz for op, _ in ops) < self.nnz)
        res = pcg(matvec, rhs, inv_diag=1.0 / diag, x0=x0, tol=tol, maxiter=maxiter,
                  backend=self.backend, keep_residual=cheap)
        if not cheap:
            return res
        be, x = self.backend, res.x
        twice = be.dot(x, rhs - res.residual_vector) - rho * be.dot(x, x)
        for op, r in ops:
            cx = op.matvec(x)
            twice -= r * be.dot(cx, cx)
        return PCGResult(x, res.iterations, res.residual, res.converged, 0.5 * float(twice))


class OneHotKronSystem:
    """x-update for ``A = L ⊗ I_k`` (pixel-major layout) with the one-hot constraint
    ``C1 = 1' ⊗ I``.

    The system ``(2 L⊗I + rho I + rho3 C1'C1)`` decouples along the label directions: with
    ``rbar`` the mean of the right-hand side over labels, ``x_k = u + w_k`` where
    ``(2L + (rho + k rho3) I) u = rbar`` and ``(2L + rho I) w_k = rhs_k - rbar``
    (``sum_k w_k = 0``). The ``w_k`` sum to zero, so only ``k - 1`` of them are solved for and
    the last is minus their sum (which keeps ``sum_k x_k = u`` exact even when CG stops early).
    The ``k`` solves share ``L`` and run as one block CG with a per-column diagonal shift.
    """

    def __init__(self, L: sp.spmatrix, k: int, backend: Backend) -> None:
        self.backend = backend
        self.k = k
        self.n = L.shape[0] * k
        self._L = backend.as_sparse(L)
        self._diag2 = backend.asarray(2.0 * L.diagonal())
        self._compiled = None if backend.is_gpu else _CompiledCSR(L)

    def apply_A(self, x: Any) -> Any:
        """``(L ⊗ I_k) @ x``."""
        return (self._L @ x.reshape(-1, self.k)).ravel()

    def quad(self, x: Any) -> float:
        """``x' (L ⊗ I_k) x``."""
        if self._compiled is not None:
            return self._compiled.quad(x, self.k)
        return self.backend.dot(x, self.apply_A(x))

    def quad_tracker(self) -> Callable[[Any], float]:
        """A function ``x -> x' (L ⊗ I_k) x`` that is cheap when ``x`` changes in few entries."""
        return self.quad if self._compiled is None else self._compiled.tracker(self.k)

    def solve(self, rhs: Any, x0: Any, rho: float, eq: LinearOperatorPair | None,
              rho_eq: float, ineq: LinearOperatorPair | None, rho_ineq: float,
              tol: float, maxiter: int) -> PCGResult:
        """Solve by the label-direction decomposition (see the class docstring).

        Inequality rows (which couple label directions, as "apart" pairs do) enter linearised
        at ``x0``, the current iterate: ``rho_ineq C'C`` is replaced by ``rho_ineq tau I`` with
        ``tau >= ||C'C||`` (``ineq.norm_sq``) and the right-hand side gains
        ``rho_ineq (tau x0 - C'C x0)``, a proximal-linear x-update that keeps the split exact.
        Rows whose ``C'C`` is a per-label diagonal (``ineq.label_diag``) enter exactly instead:
        see :meth:`_label_matrix_solve`.
        """
        xp, k = self.backend.xp, self.k
        if ineq is not None and ineq.label_diag is not None:
            return self._label_matrix_solve(rhs, x0, rho, rho_eq if eq is not None else 0.0,
                                            rho_ineq * np.asarray(ineq.label_diag, float),
                                            tol, maxiter)
        shift = np.full(k, float(rho))
        if ineq is not None:
            if x0 is None or ineq.norm_sq is None:
                raise ValueError("OneHotKronSystem takes inequality rows with a start point "
                                 "and a bound on ||C'C||")
            tau = float(ineq.norm_sq)
            shift += rho_ineq * tau
            rhs = rhs + rho_ineq * (tau * x0 - ineq.rmatvec(ineq.matvec(x0)))
        if eq is not None:
            shift[0] += k * rho_eq
        if self._compiled is not None:
            return self._compiled.onehot_solve(rhs, x0, k, shift, tol, maxiter)
        shift = xp.asarray(shift)
        R = rhs.reshape(-1, k)
        rbar = R.mean(axis=1, keepdims=True)
        B = xp.concatenate([rbar, R[:, :-1] - rbar], axis=1)
        X0 = None
        if x0 is not None:
            X = x0.reshape(-1, k)
            ubar = X.mean(axis=1, keepdims=True)
            X0 = xp.concatenate([ubar, X[:, :-1] - ubar], axis=1)
        inv = 1.0 / (self._diag2[:, None] + shift[None, :])

        def matvec(V: Any) -> Any:
            return 2.0 * (self._L @ V) + V * shift[None, :]

        res = pcg(matvec, B, inv_diag=inv, x0=X0, tol=tol, maxiter=maxiter, backend=self.backend)
        U = res.x
        W = xp.concatenate([U[:, 1:], -U[:, 1:].sum(axis=1, keepdims=True)], axis=1)
        x = (U[:, :1] + W).ravel()
        return PCGResult(x=x, iterations=res.iterations, residual=res.residual,
                         converged=res.converged)


    def _label_matrix_solve(self, rhs: Any, x0: Any, rho: float, rho_eq: float,
                            diag: np.ndarray, tol: float, maxiter: int) -> PCGResult:
        """``(2 L⊗I + I⊗M) x = rhs`` with the label matrix ``M = rho I + rho_eq 11' +
        diag(diag)``: with ``M = Q Λ Q'``, the columns of ``R Q`` (``R`` the right-hand side as
        ``(n, k)``) are ``k`` independent systems ``(2L + λ_j I) u_j``, solved as one block CG;
        then ``X = U Q'``. ``L⊗I`` and ``I⊗M`` commute, so this is exact.
        """
        xp, k = self.backend.xp, self.k
        M = rho * np.eye(k) + rho_eq * np.ones((k, k)) + np.diag(diag)
        lam, Q = np.linalg.eigh(M)
        Qb = xp.asarray(Q)
        R = rhs.reshape(-1, k)
        X0 = None if x0 is None else x0.reshape(-1, k) @ Qb
        if self._compiled is not None:
            res = self._compiled.pcg(2.0, lam, np.ascontiguousarray((R @ Q).T),
                                     None if X0 is None else np.ascontiguousarray(X0.T),
                                     tol, maxiter)
            U = res.x.T
            # x'(L⊗I)x = sum_j u_j' L u_j (Q is orthogonal): the CG's, from its residual
            quad = res.quad
        else:
            shift = xp.asarray(lam)
            inv = 1.0 / (self._diag2[:, None] + shift[None, :])

            def matvec(V: Any) -> Any:
                return 2.0 * (self._L @ V) + V * shift[None, :]

            res = pcg(matvec, R @ Qb, inv_diag=inv, x0=X0, tol=tol, maxiter=maxiter,
                      backend=self.backend)
            U, quad = res.x, None
        x = (U @ Qb.T).ravel()
        return PCGResult(x=x, iterations=res.iterations, residual=res.residual,
                         converged=res.converged, quad=quad)


# --------------------------------------------------------------------------- validation
#: Largest dense ``n`` whose smallest eigenvalue :func:`min_eigenvalue` computes exactly (a full
#: symmetric eigendecomposition, O(n^3) time and an n-by-n workspace); beyond it the Gershgorin
#: bound, sharpened by ARPACK when it is negative, as for large sparse matrices.
DENSE_EXACT_EIGEN_MAX_N = 2000
#: Largest sparse ``n`` that :func:`min_eigenvalue` densifies for an exact eigenvalue.
SPARSE_EXACT_EIGEN_MAX_N = 1500
#: Entries of a dense matrix read per block by the checks of :func:`as_matrix` (8 MB of float64),
#: so that no n-by-n temporary is made.
_BLOCK_ENTRIES = 1 << 20


def _dense_row_blocks(n: int):
    """Row slices of an n-by-n dense matrix, each of about :data:`_BLOCK_ENTRIES` entries."""
    rows = max(1, _BLOCK_ENTRIES // max(n, 1))
    for i in range(0, n, rows):
        yield slice(i, min(i + rows, n))


def _dense_checks(M: np.ndarray) -> tuple[bool, float, float]:
    """``(all finite, max |M - M'|, max |M|)`` of a square dense matrix, by row blocks."""
    finite, asym, scale = True, 0.0, 0.0
    for rows in _dense_row_blocks(M.shape[0]):
        block = M[rows]
        if not np.isfinite(block).all():
            finite = False
            break
        scale = max(scale, float(block.max()), -float(block.min()))
        diff = block - M[:, rows].T
        asym = max(asym, float(np.abs(diff, out=diff).max()))
        del diff  # before the next block's
    return finite, asym, scale


def as_matrix(A: Any, name: str = "A") -> Any:
    """Validate ``A`` (square, finite, symmetric) and return it as CSR or a float64 ndarray.

    Symmetry is checked relative to the largest entry (``max |A - A'| <= 1e-10 max |A|``), so the
    test means the same at every scale. A dense ``A`` is checked by row blocks, without an
    n-by-n temporary.

    Parameters
    ----------
    A : scipy sparse matrix or array_like, shape (n, n)
    name : str
        The argument's name, for messages.

    Returns
    -------
    scipy.sparse.csr_matrix or numpy.ndarray
        ``A`` as float64 (not copied when it already is a float64 array).

    Raises
    ------
    ValueError
        If ``A`` is not a square matrix, has NaN or inf entries, or is not symmetric.
    """
    if sp.issparse(A):
        M = sp.csr_matrix(A, dtype=np.float64)
        if M.shape[0] != M.shape[1]:
            raise ValueError(f"{name} must be square, got shape {M.shape}")
        if not np.all(np.isfinite(M.data)):
            raise ValueError(f"{name} has non-finite entries (NaN or inf)")
        asym = abs(M - M.T)
        asym = asym.max() if M.shape[0] else 0.0
        scale = abs(M).max() if M.shape[0] and M.nnz else 0.0
    else:
        M = np.asarray(A, dtype=np.float64)
        if M.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got an array of shape {M.shape}")
        if M.shape[0] != M.shape[1]:
            raise ValueError(f"{name} must be square, got shape {M.shape}")
        finite, asym, scale = _dense_checks(M)
        if not finite:
            raise ValueError(f"{name} has non-finite entries (NaN or inf)")
    if asym > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric (max |A - A'| = {asym:.3g}, "
                         f"max |A| = {scale:.3g})")
    return M


def _dense_gershgorin(A: np.ndarray) -> float:
    """Gershgorin lower bound on the smallest eigenvalue of dense symmetric ``A``, by row blocks."""
    n, low = A.shape[0], math.inf
    for rows in _dense_row_blocks(n):
        block = A[rows]
        diag = block[np.arange(block.shape[0]), np.arange(rows.start, rows.stop)]
        radius = np.abs(block).sum(axis=1) - np.abs(diag)
        low = min(low, float(np.min(diag - radius)))
    return low


def min_eigenvalue(A: Any) -> float:
    """Smallest eigenvalue of symmetric ``A``, or a lower bound on it for large ``A``.

    Exact (a full eigendecomposition) for sparse ``n <= SPARSE_EXACT_EIGEN_MAX_N`` and dense
    ``n <= DENSE_EXACT_EIGEN_MAX_N``. Beyond, the Gershgorin bound when it is non-negative, else
    ARPACK's smallest eigenvalue lowered by a safety margin (the Gershgorin bound if ARPACK fails);
    a dense matrix is then read by row blocks and only multiplied by vectors.

    Parameters
    ----------
    A : scipy sparse matrix or numpy.ndarray, shape (n, n)
        Symmetric.

    Returns
    -------
    float
        ``lambda_min(A)`` or a lower bound on it (0 for ``n = 0``).
    """
    n = A.shape[0]
    if n == 0:
        return 0.0
    if sp.issparse(A):
        if n <= SPARSE_EXACT_EIGEN_MAX_N:
            return float(np.linalg.eigvalsh(A.toarray())[0])
        diag = A.diagonal()
        gersh = float(np.min(diag - (abs(A).sum(axis=1).A1 - np.abs(diag))))
    else:
        if n <= DENSE_EXACT_EIGEN_MAX_N:
            return float(np.linalg.eigvalsh(A)[0])
        log.info("A is dense with n = %d > %d: bounding its smallest eigenvalue instead of a "
                 "full eigendecomposition", n, DENSE_EXACT_EIGEN_MAX_N)
        gersh = _dense_gershgorin(A)
    if gersh >= 0:
        return gersh
    try:
        # a seeded start: ARPACK's own random one makes the shift, and so every iterate,
        # differ in the last bits from one process to the next
        v0 = np.random.default_rng(0).random(n) + 0.5
        val = spla.eigsh(A, k=1, which="SA", tol=1e-4, v0=v0, return_eigenvectors=False)[0]
        return float(val) - 1e-3 * abs(float(val)) - 1e-9
    except Exception:  # ARPACK did not converge: use the safe bound
        log.debug("eigsh failed; using the Gershgorin bound %g", gersh)
        return gersh


def problem_scale(A: Any, b: np.ndarray) -> float:
    """A typical size of the objective, used to make penalty defaults scale-free.

    ``mean |b|`` (the pull of the linear term, which the penalty must balance); the mean absolute
    row sum of ``2A`` when ``b = 0``; 1 when both vanish.
    """
    s = float(np.abs(b).mean()) if b.size else 0.0
    if s <= 0.0 and A.shape[0]:
        s = 2.0 * float(np.asarray(abs(A).sum(axis=1)).ravel().mean())
    return s if s > 0.0 else 1.0
