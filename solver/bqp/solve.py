"""``solve_bqp``: the library's entry point for binary quadratic programs."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from solver.admm.loop import L1Split, LpBoxADMM
from solver.admm.params import ADMMParams, check_callable, check_seed, shown
from solver.admm.records import (
    CANCELLED,
    CONVERGED,
    ADMMResult,
    IterationRecord,
    IterationState,
)
from solver.admm.systems import (
    DENSE_EXACT_EIGEN_MAX_N,
    GenericSystem,
    as_matrix,
    min_eigenvalue,
    problem_scale,
    sparse_operator,
)
from solver.backend import get_backend
from solver.bqp.descent import one_flip_descent, unit_scale

log = logging.getLogger(__name__)

#: numpy dtype kinds whose entries are real numbers: bool, signed and unsigned integers, floats.
_REAL_KINDS = "biuf"


def _entries(dtype: np.dtype) -> str:
    """How a message names entries of ``dtype``."""
    return {"O": "object", "U": "string", "S": "string"}.get(dtype.kind, dtype.name)


def _real(v: Any, name: str, what: str) -> Any:
    """``v`` as an array (a sparse matrix stays one) after checking its entries are real numbers.

    Booleans, integers and floats are numbers; complex, object (even of Python numbers),
    string and other dtypes are refused, rather than cast with numpy's ComplexWarning (or
    none), read from strings, or left to fail later with a TypeError.

    Parameters
    ----------
    v : object
        The argument given (not None).
    name : str
        Its name, for the message.
    what : str
        What it must be, for the message: ``"a real numeric matrix"``, ...

    Raises
    ------
    ValueError
        One line: ``"{name} must be {what}, got complex128 entries"`` (or the value itself,
        for a scalar or what is no array at all).
    """
    if not sp.issparse(v):
        try:
            a = np.asarray(v)
        except (TypeError, ValueError) as err:  # ragged nesting, ...
            reason = " ".join(str(err).split())
            raise ValueError(f"{name} must be {what}: {reason}") from None
    else:
        a = v
    if a.dtype.kind not in _REAL_KINDS:
        if not sp.issparse(a) and a.ndim == 0:  # a scalar (or no array at all): show it
            raise ValueError(f"{name} must be {what}, got {shown(v)}")
        raise ValueError(f"{name} must be {what}, got {_entries(a.dtype)} entries")
    return a


def _vector(v: Any, n: int, name: str) -> np.ndarray:
    a = (np.asarray(_real(v, name, "a real numeric vector"), dtype=np.float64).ravel()
         if v is not None else np.zeros(n))
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
    C = sp.csr_matrix(_real(C, f"{name}: C", "a real numeric matrix"), dtype=np.float64)
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
    try:
        idx = np.asarray(idx).ravel()
    except (TypeError, ValueError) as err:  # ragged nesting, ...
        raise ValueError(f"fixed indices must be integers: {' '.join(str(err).split())}") from None
    val = np.asarray(_real(val, "fixed values", "a real numeric vector"), dtype=np.float64).ravel()
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"fixed indices must be integers, got {_entries(idx.dtype)} entries")
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
    _check_rows(Cf, d_red, equality, name, fixed=fix.size > 0)
    empty = np.diff(Cf.indptr) == 0
    return Cf[~empty], d_red[~empty]


#: Most subset sums :func:`_check_rows` enumerates (over all short rows together) to find
#: equality rows that no 0/1 point meets although their bounds allow it.
_ENUMERATION_BUDGET = 1 << 22
#: Longest row whose subset sums are enumerated.
_ENUMERATION_MAX_NNZ = 12


def _check_rows(C: sp.csr_matrix, d: np.ndarray, equality: bool, name: str, fixed: bool) -> None:
    """Raise ValueError naming the first row of ``C x = d`` (or ``C x <= d``) that no 0/1 point
    meets within the tolerance by which results are called feasible (1e-9).

    Over 0/1 points ``c'x`` ranges over ``[sum of negative c, sum of positive c]``; an inequality
    row is feasible exactly when the lower end is at most ``d``. An equality row also needs ``d``
    to be a sum of a subset of its coefficients: checked exactly for short rows (by enumeration)
    and, for rows of integer coefficients, by their greatest common divisor.
    """
    if C.shape[0] == 0:
        return
    rows = np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))
    lo = np.bincount(rows, weights=np.minimum(C.data, 0.0), minlength=C.shape[0])
    hi = np.bincount(rows, weights=np.maximum(C.data, 0.0), minlength=C.shape[0])
    absd = np.abs(d)
    # rounding of the sums, plus the absolute 1e-9 of ADMMResult.feasible
    tol = 1e-9 + 1e-12 * (hi - lo + absd)
    after = " once the fixed variables take their values" if fixed else ""

    def fail(i: int, why: str) -> None:
        rel = "=" if equality else "<="
        raise ValueError(f"{name} row {i} is infeasible{after}: no 0/1 point x has "
                         f"C[{i}] x {rel} {d[i]:.6g}; {why}")

    if not equality:
        bad = np.flatnonzero(lo > d + tol)
        if bad.size:
            i = int(bad[0])
            fail(i, f"the smallest value C[{i}] x takes is {lo[i]:.6g}")
        return
    bad = np.flatnonzero((d < lo - tol) | (d > hi + tol))
    if bad.size:
        i = int(bad[0])
        fail(i, f"C[{i}] x takes values in [{lo[i]:.6g}, {hi[i]:.6g}] only")
    nnz = np.diff(C.indptr)
    # integer rows: every subset sum is a multiple of the coefficients' gcd
    whole = (C.data == np.round(C.data)) & (np.abs(C.data) < 2.0**53)
    nonempty = np.flatnonzero(nnz > 0)
    if nonempty.size:
        starts = C.indptr[:-1][nonempty]
        all_whole = np.logical_and.reduceat(whole, starts)
        if np.any(all_whole):
            ints = np.where(whole, np.abs(C.data), 0.0).astype(np.int64)
            g = np.gcd.reduceat(ints, starts).astype(np.float64)
            dd = d[nonempty]
            off = np.abs(dd - g * np.round(dd / np.where(g > 0, g, 1.0)))
            bad = nonempty[all_whole & (g > 0) & (off > tol[nonempty])]
            if bad.size:
                i = int(bad[0])
                gi = int(g[np.searchsorted(nonempty, i)])
                fail(i, "its coefficients are integers" + (
                    f" whose sums are all multiples of {gi}" if gi > 1 else ", so C x is one"))
    # short rows: every subset sum, within a budget
    budget = _ENUMERATION_BUDGET
    for k in range(1, _ENUMERATION_MAX_NNZ + 1):
        sel = np.flatnonzero(nnz == k)
        if sel.size == 0:
            continue
        bits = ((np.arange(1 << k)[None, :] >> np.arange(k)[:, None]) & 1).astype(np.float64)
        chunk = max(1, (1 << 20) >> k)
        for j in range(0, sel.size, chunk):
            part = sel[j:j + chunk]
            if part.size << k > budget:
                return
            budget -= part.size << k
            coef = C.data[C.indptr[part][:, None] + np.arange(k)[None, :]]
            miss = np.min(np.abs(coef @ bits - d[part][:, None]), axis=1)
            bad = part[miss > tol[part]]
            if bad.size:
                fail(int(bad[0]), "it is not the sum of any subset of the row's coefficients")


def _l1_term(l1: Any, n: int) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """Validate ``l1 = (C, weight)``: C sparse/dense with n columns, weight a non-negative
    number or one per row of C. Returns ``(C, w)`` with ``w`` a 0-d or (m,) float array."""
    if l1 is None:
        return None
    try:
        C, w = l1
    except (TypeError, ValueError):
        raise ValueError("l1 must be a pair (C, weight)") from None
    C = sp.csr_matrix(_real(C, "l1: C", "a real numeric matrix"), dtype=np.float64)
    if C.shape[1] != n:
        raise ValueError(f"l1: C must have {n} columns, got shape {C.shape}")
    if not np.all(np.isfinite(C.data)):
        raise ValueError("l1: C has non-finite entries")
    w = np.asarray(_real(w, "l1: weight", "a real number or vector"), dtype=np.float64)
    if w.ndim != 0 and w.shape != (C.shape[0],):
        raise ValueError(f"l1: weight must be a number or have {C.shape[0]} entries (one per row "
                         f"of C), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("l1: weight must be finite and non-negative")
    return C, w


def _l1_values(C: sp.csr_matrix, d: np.ndarray, w: np.ndarray, x: np.ndarray) -> float:
    """``sum_r w_r |(C x - d)_r|``."""
    a = np.abs(C @ x - d)
    return float(w * a.sum()) if w.ndim == 0 else float(w @ a)


def _l1_flip_descent(A: Any, b: np.ndarray, C: sp.csr_matrix, d: np.ndarray, w: np.ndarray,
                     x: np.ndarray, tol: float) -> tuple[np.ndarray, float, int]:
    """Greedy single flips while they lower ``x'Ax + b'x + sum_r w_r |(C x - d)_r|``.

    Each round computes every variable's flip gain (one pass over the non-zeros of ``A`` and
    ``C``) and flips, best first, the improving variables no two of which share a row of ``C``
    or an entry of ``A`` (so each gain is still exact when its flip is made); rounds repeat until
    no flip gains more than ``tol``. Returns ``(x, objective change <= 0, flips)``.
    """
    x = np.asarray(x, dtype=np.float64).copy()
    n = x.size
    Acsc = sp.csc_matrix(A)
    diag = Acsc.diagonal()
    Cc = sp.csc_matrix(C)
    cols = np.repeat(np.arange(n), np.diff(Cc.indptr))
    wr = (np.full(C.shape[0], float(w)) if w.ndim == 0 else w)[Cc.indices]
    # variables that interact: share a row of C or an entry of A
    pattern = (abs(Cc).T @ abs(Cc) + abs(Acsc)).tocsr()
    ax = np.asarray(Acsc @ x).ravel()
    u = C @ x - d
    change, flips = 0.0, 0
    for _ in range(n):
        delta = 1.0 - 2.0 * x
        gain = delta * (2.0 * ax + b) + diag
        gain += np.bincount(cols, weights=wr * (np.abs(u[Cc.indices] + delta[cols] * Cc.data)
                                                - np.abs(u[Cc.indices])), minlength=n)
        cand = np.flatnonzero(gain < -tol)
        if cand.size == 0:
            break
        cand = cand[np.argsort(gain[cand], kind="stable")]
        blocked = np.zeros(n, dtype=bool)
        for i in cand:
            if blocked[i]:
                continue
            blocked[pattern.indices[pattern.indptr[i]:pattern.indptr[i + 1]]] = True
            blocked[i] = True
            lo, hi = Cc.indptr[i], Cc.indptr[i + 1]
            u[Cc.indices[lo:hi]] += delta[i] * Cc.data[lo:hi]
            lo, hi = Acsc.indptr[i], Acsc.indptr[i + 1]
            ax[Acsc.indices[lo:hi]] += delta[i] * Acsc.data[lo:hi]
            x[i] += delta[i]
            change += float(gain[i])
            flips += 1
    if flips:
        log.debug("l1 flip descent: %d flips, objective change %.6g", flips, change)
    return x, change, flips


def _warn_if_infeasible(result: ADMMResult, eqc: Any, ineqc: Any, x: np.ndarray) -> None:
    """Log a warning when the returned point violates the constraints."""
    if result.feasible or result.status == CANCELLED:
        return
    eq_v = float(np.max(np.abs(eqc[0] @ x - eqc[1]))) if eqc is not None and eqc[1].size else 0.0
    in_v = (float(np.max(ineqc[0] @ x - ineqc[1], initial=0.0))
            if ineqc is not None and ineqc[1].size else 0.0)
    log.warning("solve_bqp: no feasible point found (status %s after %d iterations): the "
                "returned x violates the equality rows by up to %.3g and the inequality rows "
                "by up to %.3g; the rows may contradict one another, or more iterations "
                "(max_iter) or a larger rho_constraints may help. Check result.feasible.",
                result.status, result.iterations, eq_v, in_v)


#: Relative size of an eigenvalue that is zero up to rounding (of the largest absolute row sum).
_ROUNDING = 1e-11


def _row_sum_bound(A: Any) -> float:
    """The largest absolute row sum of ``A`` (a bound on its spectral radius)."""
    return float(np.max(np.asarray(abs(A).sum(axis=1)).ravel())) if A.shape[0] else 0.0


def _scaled_record(rec: IterationRecord, s: float) -> IterationRecord:
    return replace(rec, objective=rec.objective * s,
                   objective_rounded=rec.objective_rounded * s, rho=rec.rho * s)


def solve_bqp(A: Any, b: Any = None, *, eq: Any = None, ineq: Any = None, fixed: Any = None,
              x0: Any = None, seed: int | None = None, backend: str = "cpu",
              callback: Callable[[IterationState], bool | None] | None = None,
              polish: bool = True, l1: Any = None, rho_l1: float = 1.0,
              **params: Any) -> ADMMResult:
    """Minimise ``x'Ax + b'x`` (plus ``w ||C x||_1`` with ``l1``) over ``x in {0,1}^n`` by
    ℓ2-box ADMM.

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
        Seed of a uniformly random start point (when ``x0`` is None): an integer >= 0 (``int``
        or a numpy integer; ``bool`` and floats such as ``1.0`` are refused, as for the integer
        ADMM parameters). None starts at 1/2.
    backend : {"cpu", "gpu", "auto"}
    callback : callable, optional
        ``callback(state)`` after every iteration; return True to stop.
    polish : bool
        For problems without equality/inequality constraints, finish with a greedy one-flip
        descent from ADMM's best binary point (never makes it worse; see ``solver.bqp.descent``;
        with ``l1``, single flips that count the ℓ1 term).
    l1 : tuple (C, weight), optional
        An ℓ1 term ``sum_r w_r |(C x)_r|`` added to the objective (the paper's §5: total
        variation with ``C`` a difference operator, ℓ1 trend filtering with second differences).
        ``C`` is a sparse (or dense) matrix with ``n`` columns; ``weight`` a non-negative number
        or one per row of ``C``. It is handled by the extra split ``z0 = C x`` (soft-threshold
        update of ``z0``, dual step for its multiplier ``y0``; see
        :class:`solver.admm.loop.L1Split`), so the run takes the generic (non-compiled) loop.
        Every objective reported (result, history, callback) includes the term. None (the
        default) leaves the solver exactly as without it.
    rho_l1 : float
        Penalty of the split ``z0 = C x`` relative to ``rho1`` (it grows with it); > 0. Used only
        with ``l1``.
    **params
        Fields of :class:`solver.ADMMParams`.

    Returns
    -------
    ADMMResult
        ``.x`` (numpy 0/1 vector over all variables), ``.objective``, ``.feasible``,
        ``.iterations``, ``.converged``, ``.history`` and more. ``.feasible`` is False when no
        point meeting the constraints (within 1e-9) was found; ``.x`` is then the least violating
        point seen, and a warning is logged (logger ``solver.bqp.solve``).

    Raises
    ------
    ValueError
        For any malformed argument, in one line naming it, before any iteration and with no
        warning: a wrong shape, NaN or inf, entries that are no real numbers (complex, object or
        string dtypes: ``"A must be a real numeric matrix, got complex128 entries"``; booleans,
        integers and floats are numbers), a ``seed`` that is not None or an integer >= 0, a
        ``callback`` that is not None or callable, a bad ADMM parameter; and for a constraint
        row that no 0/1 point can meet (naming the row): an equality row whose right-hand side
        lies outside the range of ``c'x`` over 0/1 points or is no sum of a subset of its
        coefficients (checked exactly for rows of up to 12 entries, and by the greatest common
        divisor for integer rows), or an inequality row whose smallest value exceeds ``d``.
    GPUUnavailableError
        For ``backend="gpu"`` without a usable GPU.

    Notes
    -----
    The result does not depend on the scale of the problem: ``A`` and ``b`` are divided by a
    power of two (exactly) that brings their largest entry near 1 before any tolerance is
    applied, and the objectives reported (result, history and callback) are multiplied back, so
    ``solve_bqp(c A, c b)`` returns the same ``x`` as ``solve_bqp(A, b)`` with ``c`` times the
    objective, for ``c`` from 1e-30 to 1e30 and beyond. Constraints are not rescaled. With
    ``l1`` its weight is divided by the same power of two (and counted in choosing it).
    """
    t0 = time.perf_counter()
    opts = ADMMParams.from_kwargs(**params)
    seed = check_seed(seed)
    check_callable(callback, "callback")
    A = as_matrix(_real(A, "A", "a real numeric matrix"))
    n = A.shape[0]
    b = _vector(b, n, "b")
    eqc, ineqc = _constraint(eq, n, "eq"), _constraint(ineq, n, "ineq")
    l1c = _l1_term(l1, n)
    if l1c is not None and (isinstance(rho_l1, bool) or not isinstance(rho_l1, (int, float))
                            or not np.isfinite(rho_l1) or rho_l1 <= 0):
        raise ValueError(f"rho_l1 must be a finite number > 0, got {rho_l1!r}")
    fix, xf = _fixed(fixed, n)
    be = get_backend(backend)
    free = np.setdiff1d(np.arange(n), fix)
    x_start = None if x0 is None else _vector(x0, n, "x0")[free]

    # Work at unit scale: divide A and b by a power of two (exact; 1 for problems already near
    # unit scale), so every tolerance below (the shift's margin, the eigenvalue bound's, the flip
    # descent's, the stopping test's) is relative to the problem's scale.
    s = (unit_scale(A.data if sp.issparse(A) else A, b) if l1c is None
         else unit_scale(A.data if sp.issparse(A) else A, b, l1c[1]))
    b = b / s
    owned = False  # whether the dense Af is our own copy (so it may be changed in place)
    if sp.issparse(A):
        if s != 1.0:
            A = A / s
        A_free_rows = A[free]
        Af = A_free_rows[:, free]
        Afc = A_free_rows[:, fix]
        Aff = A[fix][:, fix]
    elif fix.size:
        A_free_rows = A[free]
        Af, Afc, Aff = A_free_rows[:, free], A_free_rows[:, fix], A[fix][:, fix]
        del A_free_rows
        if s != 1.0:
            Af /= s
            Afc, Aff = Afc / s, Aff / s
        owned = True
    else:  # no n-by-n copy unless the scale or the shift needs one
        Af, Afc, Aff = A, A[:, :0], A[:0, :0]
        if s != 1.0:
            Af, owned = np.divide(A, s, order="F"), True
    bf = b[free] + 2.0 * (Afc @ xf)
    constant = float(xf @ (Aff @ xf) + b[fix] @ xf)
    if eqc is not None:
        eqc = _reduce_constraint(*eqc, free, fix, xf, True, "eq")
    if ineqc is not None:
        ineqc = _reduce_constraint(*ineqc, free, fix, xf, False, "ineq")
    l1_split = None  # (C over the free variables, d0, weight at unit scale): w |C x - d0|
    if l1c is not None:
        C0, w0 = l1c
        w0 = w0 / s
        off = C0[:, fix] @ xf
        C0 = C0[:, free].tocsr()
        keep = np.diff(C0.indptr) > 0
        # rows over fixed variables only are constants
        constant += (float(w0 * np.abs(off[~keep]).sum()) if w0.ndim == 0
                     else float(w0[~keep] @ np.abs(off[~keep])))
        if np.any(keep):
            l1_split = (C0[keep], -off[keep], w0 if w0.ndim == 0 else w0[keep])

    def expand(v: np.ndarray) -> np.ndarray:
        out = np.empty(n, dtype=np.float64)
        out[free], out[fix] = v, xf
        return out

    if free.size == 0:
        x = expand(np.zeros(0))
        return ADMMResult(x=x.astype(np.int8), objective=constant * s, feasible=True,
                          iterations=0, status=CONVERGED, time_s=time.perf_counter() - t0,
                          setup_time_s=time.perf_counter() - t0, x_continuous=x,
                          backend=be.name)
    lam_min = min_eigenvalue(Af)
    # a singular PSD A (a graph Laplacian) comes back from the eigensolver a rounding error
    # below zero; shifting by that would leave b a rounding error too, and the penalties,
    # which scale with b (problem_scale), with it: ADMM then never meets the constraints
    if lam_min < 0 and -lam_min <= _ROUNDING * _row_sum_bound(Af):
        lam_min = 0.0
    if lam_min < 0:
        alpha = -lam_min * (1 + 1e-9) + 1e-12
        log.info("A is indefinite (min eigenvalue %.3g): shifting by %.3g on the diagonal",
                 lam_min * s, alpha * s)
        if sp.issparse(Af):
            Af = Af + alpha * sp.identity(Af.shape[0])
        else:
            if not (owned and Af.flags.c_contiguous):
                Af = np.array(Af, order="C")
            Af[np.diag_indices_from(Af)] += alpha
        bf = bf - alpha
    elif not sp.issparse(Af) and Af.shape[0] <= DENSE_EXACT_EIGEN_MAX_N:
        # column-major, as the dense A's free block has always been passed on (the same sums,
        # so the same results as before); a large one is used as given, sparing a copy
        Af = np.asfortranarray(Af)
    scale = problem_scale(Af, bf)
    run_callback = callback
    if callback is not None and s != 1.0:  # the caller sees the objective at its scale
        def run_callback(state: IterationState) -> bool:
            return bool(callback(replace(state, record=_scaled_record(state.record, s))))
    solver = LpBoxADMM(
        GenericSystem(Af, be), bf,
        eq=None if eqc is None else sparse_operator(*eqc, be),
        ineq=None if ineqc is None else sparse_operator(*ineqc, be),
        scale=scale, constant=constant, expand=expand, params=opts, backend=be,
        **({} if l1_split is None else {"l1": L1Split(
            sparse_operator(l1_split[0], l1_split[1], be),
            float(l1_split[2]) if l1_split[2].ndim == 0 else be.asarray(l1_split[2]),
            float(rho_l1))}),
    )
    result = solver.run(x0=x_start, seed=seed, callback=run_callback,
                        setup_time_s=time.perf_counter() - t0)
    if (polish and l1_split is not None and eqc is None and ineqc is None
            and result.status != CANCELLED):
        xp, change, flips = _l1_flip_descent(Af, bf, *l1_split, result.x[free], tol=1e-12)
        if flips:
            result.x = expand(xp).astype(np.int8)
            result.objective += change
    elif polish and eqc is None and ineqc is None and result.status != CANCELLED:
        xp, change, flips = one_flip_descent(Af, bf, result.x[free], tol=1e-12)
        if flips:
            result.x = expand(xp).astype(np.int8)
            result.objective += change
    if s != 1.0:
        result.objective *= s
        result.history = [_scaled_record(r, s) for r in result.history]
    _warn_if_infeasible(result, eqc, ineqc, result.x[free].astype(np.float64))
    return result
