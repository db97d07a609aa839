"""Compiled primal-dual iterations for the TV (ℓ1) relaxation of a K = 2 energy.

For two labels the energy of a labelling ``s`` in {0, 1}^n is, up to a constant,
``u^T s + sum_{i<j} c_ij |s_i - s_j|`` with ``u = d_2 - d_1`` and ``c_ij = 2 lam W_ij``. Over the
box [0, 1]^n this relaxation is tight: every level set ``{s > t}`` of a minimiser is a minimal
labelling. :func:`tv_iterate` runs linearized ADMM on it (the pairwise term split as
``p = D s``, the ``s``-update a projected gradient step, which is the primal-dual form of
Chambolle and Pock with diagonal steps). Its iterates are proposals for the polish's fusion,
not an answer of their own. Conventions as :mod:`solver.mrf.polish.icm_kernels`.
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@_jit
def tv_iterate(ei, ej, c, u, free, s, p, gamma, iterations, tol):  # pragma: no cover
    """Run at most ``iterations`` primal-dual steps on the TV relaxation, in place.

    The graph is its edge list ``ei < ej`` with weights ``c`` (the pairwise cost of a cut
    edge). ``s`` (float64, n) is the primal iterate in [0, 1] (pixels not ``free`` keep their
    value), ``p`` (float64, edges) the dual, each in ``[-c_e, c_e]``. Steps:
    ``tau_i = gamma / deg_i`` and ``sigma = 1 / (2 gamma)`` (Pock and Chambolle's diagonal
    preconditioning, scaled by ``gamma``). Stops early once a 25-step block moves no ``s_i`` by
    more than ``tol``. Returns the number of steps run.
    """
    n = s.size
    m = ei.size
    sigma = 0.5 / gamma
    bar = s.copy()
    grad = np.empty(n)
    old = s.copy()
    tau = np.zeros(n)
    for e in range(m):
        tau[ei[e]] += 1.0
        tau[ej[e]] += 1.0
    for i in range(n):
        tau[i] = gamma / max(tau[i], 1.0)
    done = 0
    while done < iterations:
        # dual ascent on each edge, clipped to its weight
        for i in range(n):
            grad[i] = u[i]
        for e in range(m):
            i = ei[e]
            j = ej[e]
            v = p[e] + sigma * (bar[i] - bar[j])
            if v > c[e]:
                v = c[e]
            elif v < -c[e]:
                v = -c[e]
            p[e] = v
            grad[i] += v
            grad[j] -= v
        # projected primal descent and extrapolation
        for i in range(n):
            if not free[i]:
                continue
            t = s[i] - tau[i] * grad[i]
            if t < 0.0:
                t = 0.0
            elif t > 1.0:
                t = 1.0
            bar[i] = 2.0 * t - s[i]
            s[i] = t
        done += 1
        if done % 25 == 0:
            moved = 0.0
            for i in range(n):
                d = abs(s[i] - old[i])
                if d > moved:
                    moved = d
                old[i] = s[i]
            if moved < tol:
                break
    return done
