"""Jacobi-preconditioned conjugate gradient on numpy or cupy, for one or many right-hand sides.

Several right-hand sides ``B`` of shape ``(n, m)`` are solved together: every CG iteration does one
(sparse matrix) x (dense block) product for all columns, which is much cheaper than ``m`` separate
products, while each column keeps its own step lengths, so the result equals ``m`` independent
CG runs. Columns that have converged are frozen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from solver.backend import CPU, Backend


@dataclass(frozen=True)
class PCGResult:
    """Outcome of :func:`pcg`.

    Attributes
    ----------
    x : array
        Solution, same shape as the right-hand side.
    iterations : int
        CG iterations performed (the same count for all columns).
    residual : float
        Largest relative residual ``||b - A x|| / ||b||`` over the columns.
    converged : bool
        Whether every column reached the tolerance.
    quad : float or None
        For an ADMM x-update, ``x' A x`` of the objective's matrix ``A`` when the solver got it
        for free from its residual; None otherwise.
    residual_vector : array or None
        The CG's residual ``b - A x`` as its recurrence carried it (same shape as ``x``), when
        asked for (``keep_residual``); it differs from a fresh product by rounding only.
    """

    x: Any
    iterations: int
    residual: float
    converged: bool
    quad: float | None = None
    residual_vector: Any = None


def _coldot(xp: Any, a: Any, b: Any) -> Any:
    """Column-wise dot products of two ``(n, m)`` arrays (einsum: no temporary, unlike
    ``sum(a * b, axis=0)``)."""
    return xp.einsum("ij,ij->j", a, b)


def _colnorm(xp: Any, a: Any) -> Any:
    return xp.sqrt(_coldot(xp, a, a))


def pcg(
    matvec: Callable[[Any], Any],
    b: Any,
    *,
    inv_diag: Any = None,
    x0: Any = None,
    tol: float = 1e-5,
    maxiter: int = 200,
    backend: Backend = CPU,
    keep_residual: bool = False,
) -> PCGResult:
    """Solve ``A x = b`` for a symmetric positive-definite ``A`` by Jacobi-preconditioned CG.

    Parameters
    ----------
    matvec : callable
        ``matvec(X)`` returns ``A @ X`` for ``X`` of shape ``(n,)`` or ``(n, m)``.
    b : array, shape (n,) or (n, m)
        Right-hand side(s), on ``backend``.
    inv_diag : array, shape (n,) or (n, m), optional
        Inverse of the diagonal of ``A`` (the Jacobi preconditioner); shape ``(n, m)`` gives each
        column its own, for block solves whose operator differs per column by a diagonal shift.
        None means no preconditioning.
    x0 : array, optional
        Warm start, same shape as ``b``. Zero when None.
    tol : float
        Relative residual tolerance, per column.
    maxiter : int
        Maximum number of CG iterations.
    backend : Backend
        Where the arrays live.
    keep_residual : bool
        Return the final residual in ``residual_vector``.

    Returns
    -------
    PCGResult
    """
    xp = backend.xp
    vector = b.ndim == 1
    B = b[:, None] if vector else b
    X = xp.zeros_like(B) if x0 is None else (x0[:, None] if vector else x0).astype(B.dtype, copy=True)
    M = None if inv_diag is None else (inv_diag[:, None] if inv_diag.ndim == 1 else inv_diag)

    def apply(v: Any) -> Any:
        out = matvec(v[:, 0])[:, None] if v.shape[1] == 1 else matvec(v)
        return out

    bnorm = _colnorm(xp, B)
    bnorm = xp.where(bnorm > 0, bnorm, 1.0)
    R = B - apply(X) if x0 is not None else B.copy()
    rel = _colnorm(xp, R) / bnorm
    active = rel > tol
    it = 0
    if bool(xp.any(active)):
        Z = R * M if M is not None else R
        P = Z.copy()
        rz = _coldot(xp, R, Z)
        while it < maxiter:
            it += 1
            AP = apply(P)
            pap = _coldot(xp, P, AP)
            alpha = xp.where(active & (pap > 0), rz / xp.where(pap > 0, pap, 1.0), 0.0)
            X += alpha * P
            R -= alpha * AP
            rel = _colnorm(xp, R) / bnorm
            active = active & (rel > tol)
            if not bool(xp.any(active)):
                break
            Z = R * M if M is not None else R
            rz_new = _coldot(xp, R, Z)
            beta = xp.where(active, rz_new / xp.where(rz != 0, rz, 1.0), 0.0)
            P = Z + beta * P
            rz = rz_new
    res = float(xp.max(rel))
    x = X[:, 0] if vector else X
    r = None if not keep_residual else (R[:, 0] if vector else R)
    return PCGResult(x=x, iterations=it, residual=res, converged=res <= tol, residual_vector=r)
