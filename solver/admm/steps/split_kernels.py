"""Compiled (numba) steps of :class:`solver.admm.splits.PairSplit` on the CPU: the projection
of every pair on its half-plane, and the largest excess of a vector's rows, in one pass each
instead of numpy's temporaries (the same arithmetic)."""

from __future__ import annotations

from solver.backend.jit import jit


@jit
def pair_prox(v, second, bound, out):  # pragma: no cover
    """``out``: each pair ``(v[2r], v[2r + 1])`` projected on ``s + second[r] t <= bound[r]``."""
    for r in range(bound.size):
        s, t = v[2 * r], v[2 * r + 1]
        e = s + second[r] * t - bound[r]
        if e > 0.0:
            cut = e / (1.0 + second[r])
            out[2 * r] = s - cut
            out[2 * r + 1] = t - second[r] * cut
        else:
            out[2 * r] = s
            out[2 * r + 1] = t
    return out


@jit
def pair_excess(x, first, second, bound):  # pragma: no cover
    """``max_r (x[first[r]] + x[second[r]] - bound[r])`` (no second entry where
    ``second[r] < 0``), at least 0."""
    worst = 0.0
    for r in range(bound.size):
        e = x[first[r]] - bound[r]
        j = second[r]
        if j >= 0:
            e += x[j]
        if e > worst:
            worst = e
    return worst


@jit
def pair_rhs(first, second, z0, y0, r0, rhs):  # pragma: no cover
    """``rhs += C0'(r0 z0 - y0)``, ``C0`` picking ``x[first[r]]`` and ``x[second[r]]``."""
    for r in range(first.size):
        rhs[first[r]] += r0 * z0[2 * r] - y0[2 * r]
        j = second[r]
        if j >= 0:
            rhs[j] += r0 * z0[2 * r + 1] - y0[2 * r + 1]


@jit
def pair_update(x, first, second, has2, bound, z0, y0, r0, gamma):  # pragma: no cover
    """The split's step after the x-update, in place: ``u = C0 x``, ``z0`` the projection of
    ``u + y0 / r0`` on the half-planes, ``y0 += gamma r0 (u - z0)``. Returns ``(|u - z0|^2,
    |u|^2)``."""
    res = 0.0
    unorm = 0.0
    for r in range(first.size):
        s = x[first[r]]
        j = second[r]
        t = x[j] if j >= 0 else 0.0
        vs = s + y0[2 * r] / r0
        vt = t + y0[2 * r + 1] / r0
        e = vs + has2[r] * vt - bound[r]
        if e > 0.0:
            cut = e / (1.0 + has2[r])
            vs -= cut
            vt -= has2[r] * cut
        z0[2 * r] = vs
        z0[2 * r + 1] = vt
        ds, dt = s - vs, t - vt
        y0[2 * r] += gamma * r0 * ds
        y0[2 * r + 1] += gamma * r0 * dt
        res += ds * ds + dt * dt
        unorm += s * s + t * t
    return res, unorm
