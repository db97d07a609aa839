"""Compiled (numba) CPU kernels for the x-update and the objective of ℓp-box ADMM on a sparse CSR
matrix: the hot loop of every ADMM iteration.

:func:`block_pcg` is the same Jacobi-preconditioned conjugate gradient as
:func:`solver.admm.pcg.pcg` (per-column step lengths, converged columns frozen, same stopping
rule), for the operator ``a_scale * A + shift[c] I`` for each right-hand side ``c``, in three
fused passes over memory per CG iteration instead of a dozen numpy temporaries; unsigned 32-bit
column indices spare the inner loop numba's negative-index check (it then beats scipy's own
``csr_matvec``).

The kernels are single-threaded on purpose: numba's threads gain little on an idle machine, and
when other work wants the cores (the app's own GUI thread does) they spin at the barriers of
thousands of short parallel loops and the solve slows down many times over (measured:
docs/decisions.md, Threads for ADMM and the polish). The numpy/cupy :func:`solver.admm.pcg.pcg`
stays the reference and the GPU path; the tests hold the two to the same iterates.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from solver.backend.jit import jit


class SplitMatrix(NamedTuple):
    """A symmetric matrix ``A`` as the CG kernels take it (one argument): its off-diagonal part
    in CSR (``indptr``, unsigned ``indices``, ``data``), the padded copy of that part from
    :func:`padded_split` (``cols``, ``vals``; empty: the CSR arrays are read) and its diagonal
    ``diag``."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    diag: np.ndarray


@jit
def _apply(indptr, indices, data, diag, a_scale, shift, v, out):  # pragma: no cover
    """``out = a_scale * A @ v + shift * v`` with ``A``'s off-diagonal part in CSR and its
    diagonal apart; returns ``v' out``."""
    vav = 0.0
    for i in range(v.size):
        s = diag[i] * v[i]
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * v[indices[p]]
        s = a_scale * s + shift * v[i]
        out[i] = s
        vav += v[i] * s
    return vav


#: Row width of the padded (ELL) copy of a matrix's off-diagonal part: the 8 neighbours of a grid
#: pixel, at every pyramid level.
ELL_WIDTH = 8


@jit
def padded_split(indptr, indices, data):  # pragma: no cover
    """A square CSR matrix's diagonal and the padded copy of its off-diagonal part, in one pass:
    ``(diag, cols, vals)``, each row's off-diagonal entries in CSR order (explicit zeros
    dropped: the entries of :func:`split_diagonal`'s off-diagonal part) padded with zeros on the
    row's own column; ``cols`` and ``vals`` are ``(0, 8)`` if a row has more than 8 of them
    (the caller then keeps the CSR rows)."""
    n = indptr.size - 1
    diag = np.zeros(n)
    cols = np.empty((n, 8), np.uint32)
    vals = np.zeros((n, 8))
    for i in range(n):
        q = 0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if j == i:
                diag[i] += data[p]
            elif data[p] != 0.0:
                if q == 8:
                    return diag, np.empty((0, 8), np.uint32), np.empty((0, 8))
                cols[i, q] = j
                vals[i, q] = data[p]
                q += 1
        for q2 in range(q, 8):
            cols[i, q2] = i
    return diag, cols, vals


@jit
def _apply_ell(cols, vals, diag, a_scale, shift, v, out):  # pragma: no cover
    """:func:`_apply` on the padded copy: a fixed, unrolled row of 8, faster than the CSR rows
    (measured: docs/decisions.md, Compiled CPU kernels). The same sum in the same order (a padding
    term adds an exact zero), hence the same result."""
    vav = 0.0
    for i in range(v.size):
        s = diag[i] * v[i]
        s += vals[i, 0] * v[cols[i, 0]]
        s += vals[i, 1] * v[cols[i, 1]]
        s += vals[i, 2] * v[cols[i, 2]]
        s += vals[i, 3] * v[cols[i, 3]]
        s += vals[i, 4] * v[cols[i, 4]]
        s += vals[i, 5] * v[cols[i, 5]]
        s += vals[i, 6] * v[cols[i, 6]]
        s += vals[i, 7] * v[cols[i, 7]]
        s = a_scale * s + shift * v[i]
        out[i] = s
        vav += v[i] * s
    return vav


@jit
def _product(A, a_scale, shift, v, out):  # pragma: no cover
    """``out = a_scale * A @ v + shift * v`` (``A`` a :class:`SplitMatrix`) from the padded copy
    when there is one (``cols`` has a row per entry of ``v``), else from the CSR arrays; returns
    ``v' out``."""
    indptr, indices, data, cols, vals, diag = A
    if cols.shape[0] == v.size:
        return _apply_ell(cols, vals, diag, a_scale, shift, v, out)
    return _apply(indptr, indices, data, diag, a_scale, shift, v, out)


@jit
def _pcg(A, a_scale, shift, b, x, tol, maxiter, work, have_r):  # pragma: no cover
    """One column of :func:`block_pcg` (``work = (r, p, ap)``, its rows of ``R``, ``P``,
    ``AP``); returns ``(iterations, relative residual)``."""
    r, p, ap = work
    diag = A.diag
    n = b.size
    if not have_r:
        _product(A, a_scale, shift, x, ap)
        for i in range(n):
            r[i] = b[i] - ap[i]
    bb = rr = 0.0
    for i in range(n):
        bb += b[i] * b[i]
        rr += r[i] * r[i]
    bnorm = np.sqrt(bb) if bb > 0 else 1.0
    rel = np.sqrt(rr) / bnorm
    if rel <= tol:
        return 0, rel
    minv = np.empty(n)  # the Jacobi preconditioner, inverted once
    rz = 0.0
    for i in range(n):
        minv[i] = 1.0 / (a_scale * diag[i] + shift)
        z = r[i] * minv[i]
        p[i] = z
        rz += r[i] * z
    it = 0
    while it < maxiter:
        it += 1
        pap = _product(A, a_scale, shift, p, ap)
        alpha = rz / pap if pap > 0 else 0.0
        rr = rz_new = 0.0
        for i in range(n):
            x[i] += alpha * p[i]
            ri = r[i] - alpha * ap[i]
            r[i] = ri
            rr += ri * ri
            rz_new += ri * ri * minv[i]
        rel = np.sqrt(rr) / bnorm
        if rel <= tol or it == maxiter:
            break
        beta = rz_new / rz if rz != 0 else 0.0
        rz = rz_new
        for i in range(n):
            p[i] = r[i] * minv[i] + beta * p[i]
    return it, rel


@jit
def quad_from_residual(b, r, x, a_scale, shift):  # pragma: no cover
    """``x' A x`` from a solve of ``(a_scale A + shift I) x = b`` with residual ``r = b - M x``."""
    total = 0.0
    for i in range(x.size):
        total += x[i] * ((b[i] - r[i]) - shift * x[i])
    return total / a_scale


@jit
def block_pcg(A, a_scale, shift, B, X, tol, maxiter, work, have_r=False):  # pragma: no cover
    """Solve ``(a_scale A + shift[c] I) X[c] = B[c]`` per row ``c`` by Jacobi-preconditioned CG.

    ``A`` is a :class:`SplitMatrix` (its CSR ``indices`` unsigned: no negative-index checks in
    the inner loop; the diagonal apart: a contiguous read instead of a gather per row). Arrays
    are ``(m, n)``: one right-hand side per row. ``X`` holds the warm start and receives the
    solution; ``work = (R, P, AP)`` is scratch (``R`` ends as the residual; with ``have_r`` it
    holds the warm start's residual on entry, which spares a product). The columns are
    independent, so each runs until it converges; the count returned is the largest, as in
    :func:`solver.admm.pcg.pcg`. Returns ``(iterations, largest relative residual)``.
    """
    R, P, AP = work
    its, worst = 0, 0.0
    for c in range(B.shape[0]):
        it, rel = _pcg(A, a_scale, shift[c], B[c], X[c], tol, maxiter, (R[c], P[c], AP[c]),
                       have_r)
        its, worst = max(its, it), max(worst, rel)
    return its, worst


@jit
def quad_form(indptr, indices, data, x, k):  # pragma: no cover
    """``x' (A ⊗ I_k) x`` for pixel-major ``x`` (``x.reshape(-1, k)``), forming no product."""
    total = 0.0
    for i in range(indptr.size - 1):
        for p in range(indptr[i], indptr[i + 1]):
            if k == 1:
                total += data[p] * x[i] * x[indices[p]]
            else:
                j = indices[p]
                for c in range(k):
                    total += data[p] * x[i * k + c] * x[j * k + c]
    return total


@jit
def quad_update(indptr, indices, data, k, x_old, x_new, v, q):  # pragma: no cover
    """Move ``x_old`` to ``x_new`` entry by entry, keeping ``v = (A ⊗ I_k) x_old`` and
    ``q = x_old' v`` exact; returns the new ``q``. Costs one pass to find the changed entries
    plus a row of ``A`` per change, instead of a full product."""
    for t in range(x_new.size):
        d = x_new[t] - x_old[t]
        if d == 0.0:
            continue
        i, c = t // k, t % k
        a_tt = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] == i:
                a_tt = data[p]
        q += d * (2.0 * v[t] + d * a_tt)
        for p in range(indptr[i], indptr[i + 1]):
            v[indices[p] * k + c] += d * data[p]
        x_old[t] = x_new[t]
    return q


@jit
def onehot_split(v, k):  # pragma: no cover
    """Pixel-major ``v`` (``v.reshape(-1, k)``) to the label directions of
    :class:`solver.admm.systems.OneHotKronSystem`: row 0 the mean over labels, row ``c`` (1 .. k-1)
    ``v_c - mean`` for label ``c - 1``. Returns a ``(k, n)`` array."""
    n = v.size // k
    out = np.empty((k, n))
    for i in range(n):
        mean = 0.0
        for c in range(k):
            mean += v[i * k + c]
        mean /= k
        out[0, i] = mean
        for c in range(1, k):
            out[c, i] = v[i * k + c - 1] - mean
    return out


@jit
def onehot_merge(B, X, R, shift):  # pragma: no cover
    """Recombine the label directions ``X`` (see :func:`onehot_split`) into pixel-major ``x``
    (``x_c = u + w_c``, the last label ``u - sum_c w_c``) and get ``x' (A ⊗ I_k) x`` from the CG
    residuals, ``A X[c] = (B[c] - R[c] - shift[c] X[c]) / 2``, with no further product: since
    ``sum_c w_c = 0`` it is ``k u'Au + sum_c w_c' A w_c``. Returns ``(x, quad)``."""
    x = np.empty(X.size)
    quad, _ = merge_pass(B, X, R, shift, x, x, 1.0, False)
    return x, quad


@jit
def merge_pass(B, X, R, shift, x, y2, rho, with_norm):  # pragma: no cover
    """:func:`onehot_merge` into ``x``, pixel by pixel; returns ``(quad, s)``, with ``s`` the
    squared norm of ``x + y2 / rho - 1/2`` (the sphere projection's) if ``with_norm``, else 0.
    Each pixel's terms are added in a fixed order, so every caller sums the same way.

    One loop for all pixels, not a helper per pixel that writes ``x``: numba passes each array to
    every call, which makes such a helper slow (measured: docs/decisions.md, Helpers inside compiled
    loops)."""
    k, n = X.shape
    quad = 0.0
    s = 0.0
    for i in range(n):
        rest = 0.0
        a_rest = 0.0
        for c in range(k):
            ax = 0.5 * (B[c, i] - R[c, i] - shift[c] * X[c, i])
            quad += (k if c == 0 else 1.0) * X[c, i] * ax
            if c > 0:
                x[i * k + c - 1] = X[0, i] + X[c, i]
                rest += X[c, i]
                a_rest += ax
        x[i * k + k - 1] = X[0, i] - rest
        quad = quad + rest * a_rest  # w_k = -rest, A w_k = -a_rest
        if with_norm:
            for c in range(k):
                v = x[i * k + c] + y2[i * k + c] / rho - 0.5
                s += v * v
    return quad, s


@jit
def group_sums(x, k):  # pragma: no cover
    """``x.reshape(-1, k).sum(axis=1)`` in one pass."""
    n = x.size // k
    out = np.empty(n)
    for i in range(n):
        s = 0.0
        for c in range(k):
            s += x[i * k + c]
        out[i] = s
    return out


@jit
def group_argmax_onehot(x, k):  # pragma: no cover
    """One-hot of each consecutive group of ``k``'s largest entry (the first on ties)."""
    n = x.size // k
    out = np.zeros(x.size)
    for i in range(n):
        best = 0
        for c in range(1, k):
            if x[i * k + c] > x[i * k + best]:
                best = c
        out[i * k + best] = 1.0
    return out


@jit
def admm_rhs(z1, z2, y1, y2, b, rho):  # pragma: no cover
    """Right-hand side of the x-update, ``rho (z1 + z2) - b - y1 - y2``, in one pass."""
    out = np.empty(b.size)
    for i in range(b.size):
        out[i] = rho * (z1[i] + z2[i]) - b[i] - y1[i] - y2[i]
    return out


@jit
def box_sphere_update(x, y1, y2, rho, gamma):  # pragma: no cover
    """The z- and y-updates of ℓ2-box ADMM after an x-update, in two passes.

    ``z1`` is the projection of ``x + y1 / rho`` onto the box, ``z2`` that of ``x + y2 / rho``
    onto the sphere through the binary points (as :func:`solver.admm.projections.project_lp_sphere`,
    p = 2); the duals ``y1``, ``y2`` take their steps in place. Returns
    ``(z1, z2, ||x - z1||^2, ||x - z2||^2, ||x||^2)``.
    """
    n = x.size
    s = 0.0
    for i in range(n):
        v = x[i] + y2[i] / rho - 0.5
        s += v * v
    norm = np.sqrt(s)
    scale = np.sqrt(n) / 2.0 / norm if norm > 0 else 0.0
    z1, z2 = np.empty(n), np.empty(n)
    d1 = d2 = xx = 0.0
    for i in range(n):
        z1[i], z2[i], y1[i], y2[i] = box_sphere_entry(x[i], y1[i], y2[i], rho, gamma, scale,
                                                      norm > 0)
        e1, e2 = x[i] - z1[i], x[i] - z2[i]
        d1 += e1 * e1
        d2 += e2 * e2
        xx += x[i] * x[i]
    return z1, z2, d1, d2, xx


@jit
def box_sphere_entry(xt, y1t, y2t, rho, gamma, scale, has_norm):  # pragma: no cover
    """One entry of :func:`box_sphere_update`'s second pass, from ``x``, ``y1``, ``y2`` there:
    returns ``(z1, z2, y1, y2)`` after the projections and the dual steps. ``scale`` is the
    sphere's radius over the norm of ``x + y2 / rho - 1/2`` (``has_norm``: that norm is not 0).

    Scalars in and out, so the callers' loops write the arrays themselves: numba passes each
    array to every call, which makes a helper that writes them slow (measured:
    docs/decisions.md, Helpers inside compiled loops)."""
    a = min(max(xt + y1t / rho, 0.0), 1.0)
    c = 0.5 + (xt + y2t / rho - 0.5) * scale if has_norm else 1.0
    return a, c, y1t + gamma * rho * (xt - a), y2t + gamma * rho * (xt - c)


@jit
def split_diagonal(indptr, indices, data):  # pragma: no cover
    """A square CSR matrix as the kernels take it, in one pass: ``(indptr, indices, diag,
    off_indptr, off_indices, off_data)`` with int64 row pointers, uint32 column indices, the
    diagonal apart, and the off-diagonal part without its explicit zeros."""
    n = indptr.size - 1
    full_indptr = np.empty(n + 1, np.int64)
    full_indices = np.empty(indices.size, np.uint32)
    diag = np.zeros(n)
    m = 0
    for p in range(indices.size):
        full_indices[p] = indices[p]
    for i in range(n):
        full_indptr[i] = indptr[i]
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] == i:
                diag[i] += data[p]
            elif data[p] != 0.0:
                m += 1
    full_indptr[n] = indptr[n]
    off_indptr = np.zeros(n + 1, np.int64)
    off_indices = np.empty(m, np.uint32)
    off_data = np.empty(m)
    q = 0
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] != i and data[p] != 0.0:
                off_indices[q] = indices[p]
                off_data[q] = data[p]
                q += 1
        off_indptr[i + 1] = q
    return full_indptr, full_indices, diag, off_indptr, off_indices, off_data
