"""Compiled (numba) CPU kernels for one ℓ2-box ADMM iteration of the two forms the segmentation
solver uses: one-hot groups kept by a penalty (:func:`solver.admm.systems.onehot_operator` with
:class:`solver.admm.systems.OneHotKronSystem`, K > 2) and the plain binary problem with a sparse
matrix and no constraints (:class:`solver.admm.systems.GenericSystem`, K = 2).

The generic loop of :meth:`solver.admm.loop.LpBoxADMM.run` spends about a dozen numpy and kernel
calls per iteration around the CG: the right-hand side, the constraint's transpose product, the
split into label directions, the merge, the projections and dual steps, the constraint residual,
the rounding, its feasibility and two dot products, a large share of an iteration's time
(measured: docs/decisions.md, Compiled CPU kernels). Here they are two passes: :func:`onehot_rhs`
before the CG and :func:`onehot_post` after it, with the same arithmetic in the same order (the dot
products are summed in pixel order, so they may differ from numpy's in the last bits). K = 2 has
the same structure with a single CG column: :func:`plain_rhs` and :func:`plain_post`; with an
area bound on label 2, :func:`sums_post` (the box with a bounded weighted sum, and its rounding).

The CG's arrays travel as tuples: before it, ``columns = (B, R, B_prev, R_prev, X, dshift,
have_r)`` (the right-hand sides to write, the residuals, the last solve's right-hand sides and
residuals, the warm start, the shifts' change, and whether the residual is carried over:
:func:`residual_rows`); after it, ``solved = (B, X, R, shift)`` for the one-hot form (``shift``
one per column) and ``(B, X, R, a_scale, shift)`` for K = 2. The one-hot form's duals are one
``duals = (y1, y2, y3)``.
"""

from __future__ import annotations

import numpy as np

from solver.admm.steps.cpu_kernels import box_sphere_entry, merge_pass
from solver.admm.sums import project_box_sums, round_k2_sums
from solver.backend.jit import jit


@jit
def residual_rows(B, B_prev, R_prev, X, dshift, R):  # pragma: no cover
    """``R[c] = (B[c] - B_prev[c] + R_prev[c]) - dshift[c] X[c]`` row by row: the residual of the
    warm start ``X`` for the new system, from the last solve's (as
    :meth:`solver.admm.systems._CompiledCSR.pcg` takes it), in a contiguous loop per row: inside
    the right-hand side's pixel loop the same arithmetic is slower (measured: docs/decisions.md,
    The ADMM loop's kernels, timed inside solves)."""
    for c in range(B.shape[0]):
        b, bp, rp, x, r, ds = B[c], B_prev[c], R_prev[c], X[c], R[c], dshift[c]
        for i in range(b.size):
            t = b[i] - bp[i]
            t += rp[i]
            r[i] = t - ds * x[i]


@jit
def onehot_rhs(z1, z2, duals, b, d, rho, rc, k, columns):  # pragma: no cover
    """The x-update's right-hand side, split into label directions, in one pass.

    ``rhs = rho (z1 + z2) - b - y1 - y2 + C1'(rc d - y3)`` for pixel-major vectors with groups of
    ``k`` (``C1`` sums each group), written to ``B`` as
    :func:`solver.admm.steps.cpu_kernels.onehot_split` lays it out: row 0 the mean over the
    group, row ``c`` the entry of label ``c - 1`` minus the mean. With ``have_r``, ``R`` receives
    the warm start ``X``'s residual for the new system from the last solve's (``B_prev``,
    ``R_prev``, shift change ``dshift``; :func:`residual_rows`), which spares a product (as
    :meth:`solver.admm.systems._CompiledCSR.pcg` does).
    """
    y1, y2, y3 = duals
    B, R, B_prev, R_prev, X, dshift, have_r = columns
    n = B.shape[1]
    v = np.empty(k)  # (each entry computed once and kept for the second loop)
    for i in range(n):
        e = rc * d[i] - y3[i]
        mean = 0.0
        for c in range(k):
            t = i * k + c
            v[c] = (rho * (z1[t] + z2[t]) - b[t] - y1[t] - y2[t]) + e
            mean += v[c]
        mean /= k
        B[0, i] = mean
        for c in range(1, k):
            B[c, i] = v[c - 1] - mean
    if have_r:
        residual_rows(B, B_prev, R_prev, X, dshift, R)


@jit
def onehot_post(solved, duals, d, b, rho, gamma, rc_step, k):  # pragma: no cover
    """Everything of one iteration after the CG, in two passes.

    Merges the label directions ``X`` into pixel-major ``x`` (with ``x' (L ⊗ I_k) x`` from the
    CG residuals, as :func:`solver.admm.steps.cpu_kernels.onehot_merge`), takes the box and sphere
    projections and dual steps (as :func:`solver.admm.steps.cpu_kernels.box_sphere_update`;
    ``y1``, ``y2`` in place), the one-hot residual ``r3 = C1 x - d`` and its dual step
    ``y3 += rc_step r3`` (in place), and rounds ``x`` to the largest entry of each group.

    Returns
    -------
    tuple
        ``(x, z1, z2, xr, quad, ||x - z1||^2, ||x - z2||^2, ||x||^2, ||r3||^2, ||d||^2,
        max |C1 xr - d|, b'x, b'xr)``.
    """
    B, X, R, shift = solved
    y1, y2, y3 = duals
    n = B.shape[1]
    size = n * k
    x = np.empty(size)
    quad, s = merge_pass(B, X, R, shift, x, y2, rho, True)
    norm = np.sqrt(s)
    scale = np.sqrt(size) / 2.0 / norm if norm > 0 else 0.0
    z1, z2, xr = np.empty(size), np.empty(size), np.zeros(size)
    d1 = d2 = xx = r3sq = dsq = viol = bx = bxr = 0.0
    for i in range(n):
        gsum = 0.0
        best = 0
        for c in range(k):
            t = i * k + c
            xi = x[t]
            z1[t], z2[t], y1[t], y2[t] = box_sphere_entry(xi, y1[t], y2[t], rho, gamma, scale,
                                                          norm > 0)
            e1, e2 = xi - z1[t], xi - z2[t]
            d1 += e1 * e1
            d2 += e2 * e2
            xx += xi * xi
            bx += b[t] * xi
            gsum += xi
            if c > 0 and xi > x[i * k + best]:
                best = c
        r3 = gsum - d[i]
        y3[i] += rc_step * r3
        r3sq += r3 * r3
        dsq += d[i] * d[i]
        xr[i * k + best] = 1.0
        bxr += b[i * k + best]
        viol = max(viol, abs(1.0 - d[i]))
    return x, z1, z2, xr, quad, d1, d2, xx, r3sq, dsq, viol, bx, bxr


@jit
def plain_rhs(z1, z2, y1, y2, b, rho, columns):  # pragma: no cover
    """``B[0] = rho (z1 + z2) - b - y1 - y2`` (the x-update's right-hand side with no
    constraints), and with ``have_r`` the warm start's residual as in :func:`onehot_rhs`."""
    B, R, B_prev, R_prev, X, dshift, have_r = columns
    b0 = B[0]
    for i in range(b.size):
        b0[i] = rho * (z1[i] + z2[i]) - b[i] - y1[i] - y2[i]
    if have_r:
        residual_rows(B, B_prev, R_prev, X, dshift, R)


@jit
def _solution(solved, y2, rho):  # pragma: no cover
    """The first pass after a one-column CG: ``x`` copied out of ``X[0]``, ``x' A x`` from the
    residual, and the norm of ``x + y2 / rho - 1/2`` with the sphere's scale over it
    (``(x, quad, norm, scale)``)."""
    B, X, R, a_scale, shift = solved
    n = X.shape[1]
    x = np.empty(n)
    quad = 0.0
    s = 0.0
    for i in range(n):
        xi = X[0, i]
        x[i] = xi
        quad += xi * ((B[0, i] - R[0, i]) - shift * xi)
        v = xi + y2[i] / rho - 0.5
        s += v * v
    quad /= a_scale
    norm = np.sqrt(s)
    scale = np.sqrt(n) / 2.0 / norm if norm > 0 else 0.0
    return x, quad, norm, scale


@jit
def plain_post(solved, y1, y2, b, rho, gamma):  # pragma: no cover
    """Everything of one unconstrained iteration after the CG of ``(a_scale A + shift I) x = b``.

    Copies the solution ``X[0]`` out (the CG keeps ``X`` as its next warm start), takes
    ``x' A x`` from the CG residual (as
    :func:`solver.admm.steps.cpu_kernels.quad_from_residual`), the box and sphere projections
    and dual steps (as :func:`solver.admm.steps.cpu_kernels.box_sphere_update`; ``y1``, ``y2``
    in place), and rounds at 1/2.

    Returns
    -------
    tuple
        ``(x, z1, z2, xr, quad, ||x - z1||^2, ||x - z2||^2, ||x||^2, b'x, b'xr)``.
    """
    n = b.size
    x, quad, norm, scale = _solution(solved, y2, rho)
    z1, z2, xr = np.empty(n), np.empty(n), np.empty(n)
    d1 = d2 = xx = bx = bxr = 0.0
    for i in range(n):
        xi = x[i]
        z1[i], z2[i], y1[i], y2[i] = box_sphere_entry(xi, y1[i], y2[i], rho, gamma, scale,
                                                      norm > 0)
        e1, e2 = xi - z1[i], xi - z2[i]
        d1 += e1 * e1
        d2 += e2 * e2
        xx += xi * xi
        bx += b[i] * xi
        if xi > 0.5:
            xr[i] = 1.0
            bxr += b[i]
        else:
            xr[i] = 0.0
    return x, z1, z2, xr, quad, d1, d2, xx, bx, bxr


@jit
def sums_post(solved, y1, y2, b, rho, gamma, area):  # pragma: no cover
    """:func:`plain_post` with ``z1`` in the box with a bounded weighted sum ``lo <= w'z1 <=
    hi``, ``area = (w, lo, hi, theta)`` (:func:`solver.admm.sums.project_box_sums`, its
    multiplier ``theta`` (1,) the warm start, updated) and the rounding that keeps the sum
    within the bounds (:func:`solver.admm.sums.round_k2_sums`): the K = 2 form with an area
    bound, as the generic loop runs it.

    Returns
    -------
    tuple
        ``(x, z1, z2, xr, quad, ||x - z1||^2, ||x - z2||^2, ||x||^2, b'x, b'xr, violation)``,
        the violation the amount by which ``w'xr`` lies outside the bounds.
    """
    w, lo, hi, theta = area
    n = b.size
    x, quad, norm, scale = _solution(solved, y2, rho)
    v = np.empty(n)
    for i in range(n):
        v[i] = x[i] + y1[i] / rho
    z1, z2 = np.empty(n), np.empty(n)
    bounds_lo, bounds_hi = np.array([lo]), np.array([hi])
    project_box_sums(v, 1, w, bounds_lo, bounds_hi, theta, z1)
    d1 = d2 = xx = bx = 0.0
    for i in range(n):
        xi = x[i]
        _, z2[i], _, y2[i] = box_sphere_entry(xi, y1[i], y2[i], rho, gamma, scale, norm > 0)
        y1[i] += gamma * rho * (xi - z1[i])
        e1, e2 = xi - z1[i], xi - z2[i]
        d1 += e1 * e1
        d2 += e2 * e2
        xx += xi * xi
        bx += b[i] * xi
    xr = round_k2_sums(x, w, lo, hi)
    bxr = 0.0
    total = 0.0
    for i in range(n):
        if xr[i] == 1.0:
            bxr += b[i]
            total += w[i]
    viol = max(0.0, lo - total, total - hi)
    return x, z1, z2, xr, quad, d1, d2, xx, bx, bxr, viol
