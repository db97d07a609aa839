"""``solve_bqp``: the library's entry point for binary quadratic programs."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from solver.admm.loop import LpBoxADMM
from solver.admm.params import ADMMParams
from solver.admm.records import CANCELLED, CONVERGED, ADMMResult, IterationState
from solver.admm.systems import (
    GenericSystem,
    as_matrix,
    min_eigenvalue,
    problem_scale,
    sparse_operator,
)
from solver.backend import get_backend
from solver.bqp.descent import one_flip_descent

log = logging.getLogger(__name__)


def _vector(v: Any, n: int, name: str) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64).ravel() if v is not None else np.zeros(n)
    if a.shape != (n,):
        raise ValueError(f"{name} must have {n} entries, got shape {np.shape(v)}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} has non-finite entries (NaN or inf)")
    return a


def _constraint(pair: Any, n: int, name: str) -> tuple[sp.csr_matrix, np.ndarray] | None:
    if pair is None:
        return None
    try:
        C, d = pair
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (C, d)") from None
    C = sp.csr_matrix(C, dtype=np.float64)
    if C.shape[1] != n:
        raise ValueError(f"{name}: C must have {n} columns, got shape {C.shape}")
    if not np.all(np.isfinite(C.data)):
        raise ValueError(f"{name}: C has non-finite entries")
    return C, _vector(d, C.shape[0], f"{name}: d")


def _fixed(fixed: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    if fixed is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    try:
        idx, val = fixed
    except (TypeError, ValueError):
        raise ValueError("fixed must be a pair (indices, values)") from None
    idx = np.asarray(idx).ravel()
    val = np.asarray(val, dtype=np.float64).ravel()
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise ValueError("fixed indices must be integers")
    idx = idx.astype(np.int64)
    if idx.shape != val.shape:
        raise ValueError(f"fixed: {idx.size} indices but {val.size} values")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"fixed indices must lie in 0..{n - 1}")
    if not np.all((val == 0) | (val == 1)):
        raise ValueError("fixed values must be 0 or 1")
    order = np.argsort(idx, kind="stable")
    idx, val = idx[order], val[order]
    dup = idx[1:] == idx[:-1]
    if np.any(dup & (val[1:] != val[:-1])):
        raise ValueError(f"fixed index {idx[1:][dup & (val[1:] != val[:-1])][0]} has conflicting values")
    keep = np.concatenate([[True], ~dup])
    return idx[keep], val[keep]


def _reduce_constraint(C: sp.csr_matrix, d: np.ndarray, free: np.ndarray, fix: np.ndarray,
                       xf: np.ndarray, equality: bool, name: str):
    d_red = d - C[:, fix] @ xf
    Cf = C[:, free].tocsr()
    empty = np.diff(Cf.indptr) == 0
    bad = empty & (np.abs(d_red) > 1e-9 if equality else d_red < -1e-9)
    if np.any(bad):
        raise ValueError(f"the fixed values make {name} row {int(np.flatnonzero(bad)[0])} infeasible")
    return Cf[~empty], d_red[~empty]


def solve_bqp(A: Any, b: Any = None, *, eq: Any = None, ineq: Any = None, fixed: Any = None,
              x0: Any = None, seed: int | None = None, backend: str = "cpu",
              callback: Callable[[IterationState], bool | None] | None = None,
              polish: bool = True, **params: Any) -> ADMMResult:
    """Minimise ``x'Ax + b'x`` over ``x in {0,1}^n`` by ℓ2-box ADMM.

    Parameters
    ----------
    A : scipy sparse matrix or array, shape (n, n)
        Symmetric. If it is not positive semi-definite it is shifted by ``alpha I`` and ``b`` by
        ``-alpha 1``, which leaves the objective on binary points unchanged (``x'x = 1'x``).
    b : array, shape (n,), optional
        Linear term (zero when None).
    eq : tuple (C1, d1), optional
        Equality constraints ``C1 x = d1``.
    ineq : tuple (C2, d2), optional
        Inequality constraints ``C2 x <= d2`` (handled with a non-negative slack, as in the paper).
    fixed : tuple (indices, values), optional
        Variables fixed to 0/1. They are eliminated from the linear system, not penalised.
    x0 : array, shape (n,), optional
        Start point (warm start); values of fixed variables are ignored.
    seed : int, optional
        Seed of a uniformly random start point (when ``x0`` is None). None starts at 1/2.
    backend : {"cpu", "gpu", "auto"}
    callback : callable, optional
        ``callback(state)`` after every iteration; return True to stop.
    polish : bool
        For problems without equality/inequality constraints, finish with a greedy one-flip
        descent from ADMM's best binary point (never makes it worse; see ``solver.bqp.descent``).
    **params
        Fields of :class:`solver.ADMMParams`.

    Returns
    -------
    ADMMResult
        ``.x`` (numpy 0/1 vector over all variables), ``.objective``, ``.iterations``,
        ``.converged``, ``.history`` and more.

    Raises
    ------
    ValueError
        For any malformed argument (the message says what was expected).
    GPUUnavailableError
        For ``backend="gpu"`` without a usable GPU.
    """
    t0 = time.perf_counter()
    opts = ADMMParams.from_kwargs(**params)
    A = as_matrix(A)
    n = A.shape[0]
    b = _vector(b, n, "b")
    eqc, ineqc = _constraint(eq, n, "eq"), _constraint(ineq, n, "ineq")
    fix, xf = _fixed(fixed, n)
    be = get_backend(backend)
    free = np.setdiff1d(np.arange(n), fix)
    x_start = None if x0 is None else _vector(x0, n, "x0")[free]

    A_free_rows = A[free]
    Af = A_free_rows[:, free]
    Afc = A_free_rows[:, fix]
    bf = b[free] + 2.0 * (Afc @ xf)
    constant = float(xf @ (A[fix][:, fix] @ xf) + b[fix] @ xf)
    if eqc is not None:
        eqc = _reduce_constraint(*eqc, free, fix, xf, True, "eq")
    if ineqc is not None:
        ineqc = _reduce_constraint(*ineqc, free, fix, xf, False, "ineq")

    def expand(v: np.ndarray) -> np.ndarray:
        out = np.empty(n, dtype=np.float64)
        out[free], out[fix] = v, xf
        return out

    if free.size == 0:
        x = expand(np.zeros(0))
        return ADMMResult(x=x.astype(np.int8), objective=constant, feasible=True, iterations=0,
                          status=CONVERGED, time_s=time.perf_counter() - t0,
                          setup_time_s=time.perf_counter() - t0, x_continuous=x,
                          backend=be.name)
    lam_min = min_eigenvalue(Af)
    if lam_min < 0:
        alpha = -lam_min * (1 + 1e-9) + 1e-12
        log.info("A is indefinite (min eigenvalue %.3g): shifting by %.3g on the diagonal",
                 lam_min, alpha)
        Af = (Af + alpha * (sp.identity(Af.shape[0]) if sp.issparse(Af) else np.eye(Af.shape[0])))
        bf = bf - alpha
    scale = problem_scale(Af, bf)
    solver = LpBoxADMM(
        GenericSystem(Af, be), bf,
        eq=None if eqc is None else sparse_operator(*eqc, be),
        ineq=None if ineqc is None else sparse_operator(*ineqc, be),
        scale=scale, constant=constant, expand=expand, params=opts, backend=be,
    )
    result = solver.run(x0=x_start, seed=seed, callback=callback,
                        setup_time_s=time.perf_counter() - t0)
    if polish and eqc is None and ineqc is None and result.status != CANCELLED:
        xp, change, flips = one_flip_descent(Af, bf, result.x[free])
        if flips:
            result.x = expand(xp).astype(np.int8)
            result.objective += change
    return result
