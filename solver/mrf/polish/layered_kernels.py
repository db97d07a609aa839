"""Compiled primal-dual steps on the layered TV relaxation of a three-label problem with one
apart pair.

With labels ``a``, ``m``, ``b`` and ``a``, ``b`` apart, a labelling is two nested layers,
``u1 = [label != a]`` and ``u2 = [label == b]``, with ``u2_i <= u1_j`` for every pixel ``i`` and
each ``j`` that is ``i`` or one of its neighbours (no ``b`` beside an ``a``). On such labellings
the Potts term is ``sum c_ij (|u1_i - u1_j| + |u2_i - u2_j|)`` and the unary term is linear in
the layers, so the energy's relaxation over ``[0, 1]`` with these order rows is a TV problem
whose every level set (both layers cut at the same ``t``) is a feasible minimiser: the
continuous form of the layered graph of Delong and Boykov (ICCV 2009). The steps are
Chambolle and Pock's with diagonal steps, as :mod:`solver.mrf.polish.tv_kernels`: the duals of
each layer's forward edges clipped to the edge's weight, the order rows' duals kept
non-negative (row ``d`` of pixel ``i`` is ``u2_i - u1_{i + offsets[d]}``, ``d = 8`` the pixel
itself), then the projected primal step and its extrapolation. Each step's passes are
parallel over the pixels (call them through :func:`solver.backend.threads.threaded`).
Conventions as :mod:`solver.mrf.polish.icm_kernels`.
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)
_pjit = numba.njit(cache=True, nogil=True, parallel=True)


@_pjit
def _duals(cost, offsets, b1, b2, p1, p2, r, sigma):  # pragma: no cover
    """Dual ascent from the extrapolated layers ``b1``, ``b2``: each layer's edge duals clipped
    to ``[-c, c]``, the order rows' duals projected on ``[0, inf)`` (0 where there is no
    neighbour). One pass per edge direction: the edge's two layer duals and its two order rows
    (``u2_i - u1_{i + o}``, row ``4 + q`` of pixel ``i``; ``u2_{i + o} - u1_i``, row ``3 - q`` of
    pixel ``i + o``)."""
    n = b1.size
    zero = np.float32(0.0)
    for i in numba.prange(n):
        r[8, i] = max(r[8, i] + sigma * (b2[i] - b1[i]), zero)
    for q in range(4):
        o = offsets[4 + q]
        for i in numba.prange(n - o):
            c = cost[q, i]
            j = i + o
            p1[q, i] = min(max(p1[q, i] + sigma * (b1[i] - b1[j]), -c), c)
            p2[q, i] = min(max(p2[q, i] + sigma * (b2[i] - b2[j]), -c), c)
            if c > 0.0:
                r[4 + q, i] = max(r[4 + q, i] + sigma * (b2[i] - b1[j]), zero)
                r[3 - q, j] = max(r[3 - q, j] + sigma * (b2[j] - b1[i]), zero)
            else:
                r[4 + q, i] = zero
                r[3 - q, j] = zero


@_pjit
def layered_step(cost, offsets, g1, g2, free, tau, u1, u2, b1, b2, p1, p2, r,
                 sigma):  # pragma: no cover
    """One step over every pixel, in place: the duals, then per pixel its layers' gradients
    (unary, edge duals, order rows), the projected primal step (pixels not ``free`` keep their
    values) and the extrapolation ``b = 2 u_new - u_old``."""
    n = u1.size
    _duals(cost, offsets, b1, b2, p1, p2, r, sigma)
    lo, hi = np.float32(0.0), np.float32(1.0)
    # (the four directions written out: a loop over them here took 1.27x the time)
    o0, o1, o2, o3 = offsets[4], offsets[5], offsets[6], offsets[7]
    for i in numba.prange(n):
        G1 = g1[i] - r[8, i] + p1[0, i] + p1[1, i] + p1[2, i] + p1[3, i]
        G2 = (g2[i] + r[8, i] + p2[0, i] + p2[1, i] + p2[2, i] + p2[3, i]
              + r[0, i] + r[1, i] + r[2, i] + r[3, i] + r[4, i] + r[5, i] + r[6, i]
              + r[7, i])
        if i >= o0:  # the edges and order rows from the pixel's backward neighbours
            G1 -= p1[0, i - o0] + r[4, i - o0]
            G2 -= p2[0, i - o0]
        if i >= o1:
            G1 -= p1[1, i - o1] + r[5, i - o1]
            G2 -= p2[1, i - o1]
        if i >= o2:
            G1 -= p1[2, i - o2] + r[6, i - o2]
            G2 -= p2[2, i - o2]
        if i >= o3:
            G1 -= p1[3, i - o3] + r[7, i - o3]
            G2 -= p2[3, i - o3]
        if i + o0 < n:  # the order rows of its forward neighbours
            G1 -= r[3, i + o0]
        if i + o1 < n:
            G1 -= r[2, i + o1]
        if i + o2 < n:
            G1 -= r[1, i + o2]
        if i + o3 < n:
            G1 -= r[0, i + o3]
        if free[i]:
            t1 = min(max(u1[i] - tau[i] * G1, lo), hi)
            t2 = min(max(u2[i] - tau[i] * G2, lo), hi)
            b1[i] = 2 * t1 - u1[i]
            b2[i] = 2 * t2 - u2[i]
            u1[i] = t1
            u2[i] = t2
        else:
            b1[i] = u1[i]
            b2[i] = u2[i]


@_jit
def _most_moved(u1, u2, o1, o2):  # pragma: no cover
    """The largest change of either layer since ``o1``, ``o2``, which become ``u1``, ``u2``."""
    moved = 0.0
    for i in range(u1.size):
        moved = max(moved, abs(u1[i] - o1[i]), abs(u2[i] - o2[i]))
        o1[i] = u1[i]
        o2[i] = u2[i]
    return moved


@_pjit
def layered_iterate(cost, offsets, g1, g2, free, tau, u1, u2, sigma, iterations,
                    tol):  # pragma: no cover
    """At most ``iterations`` steps (:func:`layered_step`) on ``u1``, ``u2`` (float32, in
    place), from duals at zero. ``cost[q, i]`` is the weight of pixel ``i``'s ``q``-th forward
    edge (``offsets[4 + q]``; 0: none), ``g1``, ``g2`` the layers' unary terms, ``tau`` the
    primal steps and ``sigma`` the dual one. Stops once a block of 25 steps moves no value by
    more than ``tol``; returns the steps run."""
    n = u1.size
    b1 = u1.copy()
    b2 = u2.copy()
    o1 = u1.copy()
    o2 = u2.copy()
    p1 = np.zeros((4, n), np.float32)
    p2 = np.zeros((4, n), np.float32)
    r = np.zeros((9, n), np.float32)
    done = 0
    while done < iterations:
        layered_step(cost, offsets, g1, g2, free, tau, u1, u2, b1, b2, p1, p2, r, sigma)
        done += 1
        if done % 25 == 0 and _most_moved(u1, u2, o1, o2) < tol:
            break
    return done
