"""The box with bounded weighted sums: ADMM's ``z1`` set for cardinality (area) constraints.

A cardinality constraint ``lo <= sum_i w_i x_i <= hi`` on binary ``x`` is kept by ADMM exactly
as the box is: ``{0,1}^n ∩ {lo <= w'x <= hi} = ([0,1]^n ∩ {lo <= w'x <= hi}) ∩ sphere``, so the
box copy ``z1`` is projected onto the box intersected with the bounds, and the x-update is the
same linear system as without the constraint. The projection is cheap: by the KKT conditions
``z_i = clip(v_i - theta w_i, 0, 1)`` with one multiplier ``theta`` per sum, ``theta = 0`` when
the clipped sum already lies in ``[lo, hi]``, else the root of a monotone piecewise-linear
function, found by safeguarded Newton steps (a few passes over the entries).

For pixel-major label weights (``x.reshape(m, k)``), each label's column has its own bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.backend.jit import jit


#: Newton steps before the projection settles for bisection's last bracket (never reached in
#: practice: a piecewise-linear root takes a handful).
MAX_STEPS = 100


@jit
def _column_sum(v, k, c, w, theta):  # pragma: no cover
    """``f(theta) = sum_i w_i clip(v_ic - theta w_i, 0, 1)`` and its slope ``-sum w_i^2`` over
    the entries strictly inside the box (four running sums, so the additions overlap; a pass
    over a 5e5-pixel column takes 1.4 ms instead of 4)."""
    t0 = t1 = t2 = t3 = 0.0
    s0 = s1 = s2 = s3 = 0.0
    m = w.size
    q = m // 4
    for j in range(q):
        i = 4 * j
        z = v[i * k + c] - theta * w[i]
        t0 += w[i] * min(max(z, 0.0), 1.0)
        s0 -= w[i] * w[i] * ((z > 0.0) & (z < 1.0))
        z = v[(i + 1) * k + c] - theta * w[i + 1]
        t1 += w[i + 1] * min(max(z, 0.0), 1.0)
        s1 -= w[i + 1] * w[i + 1] * ((z > 0.0) & (z < 1.0))
        z = v[(i + 2) * k + c] - theta * w[i + 2]
        t2 += w[i + 2] * min(max(z, 0.0), 1.0)
        s2 -= w[i + 2] * w[i + 2] * ((z > 0.0) & (z < 1.0))
        z = v[(i + 3) * k + c] - theta * w[i + 3]
        t3 += w[i + 3] * min(max(z, 0.0), 1.0)
        s3 -= w[i + 3] * w[i + 3] * ((z > 0.0) & (z < 1.0))
    for i in range(4 * q, m):
        z = v[i * k + c] - theta * w[i]
        t0 += w[i] * min(max(z, 0.0), 1.0)
        s0 -= w[i] * w[i] * ((z > 0.0) & (z < 1.0))
    return (t0 + t1) + (t2 + t3), (s0 + s1) + (s2 + s3)


@jit
def _column_theta(v, k, c, w, lo, hi, guess):  # pragma: no cover
    """The multiplier of column ``c``: 0 if its clipped sum lies in ``[lo, hi]``, else the root of
    ``f(theta) = target`` (``hi`` above, ``lo`` below), by Newton steps from ``guess`` (the last
    call's multiplier: ADMM's iterates move little from one iteration to the next) kept in a
    bracket that shrinks as they go."""
    f0, _ = _column_sum(v, k, c, w, 0.0)
    if lo <= f0 <= hi:
        return 0.0
    if f0 > hi:  # theta > 0 (f falls to 0 once theta passes every v_i / w_i)
        target, a, b = hi, 0.0, np.inf
        theta = guess if guess > 0.0 else 0.0
    else:  # theta < 0 (f rises to sum w once theta is below every (v_i - 1) / w_i)
        target, a, b = lo, -np.inf, 0.0
        theta = guess if guess < 0.0 else 0.0
    tol = 1e-12 * max(1.0, abs(target))
    for _ in range(MAX_STEPS):
        f, slope = _column_sum(v, k, c, w, theta)
        if abs(f - target) <= tol:
            return theta
        if f > target:
            a = max(a, theta)
        else:
            b = min(b, theta)
        step = theta - (f - target) / slope if slope < 0.0 else np.nan
        if a < step < b:
            theta = step
        elif np.isfinite(a) and np.isfinite(b):
            theta = 0.5 * (a + b)
        else:  # no finite bracket yet: step out from the finite end
            theta = (a + max(1.0, 2.0 * abs(a))) if np.isfinite(a) else (b - max(1.0, 2.0 * abs(b)))
        if np.isfinite(a) and np.isfinite(b) and b - a <= 1e-15 * max(1.0, abs(a), abs(b)):
            break
    return theta


@jit
def project_box_sums(v, k, w, lo, hi, guess, out):  # pragma: no cover
    """Project pixel-major ``v`` (``(m * k,)``) onto ``[0, 1]`` with each column's weighted sum
    in ``[lo[c], hi[c]]`` (a column without bounds has ``lo = -inf``, ``hi = inf``); writes
    ``out`` and the multipliers into ``guess`` (read first as the starting points)."""
    for c in range(k):
        if lo[c] > -np.inf or hi[c] < np.inf:
            guess[c] = _column_theta(v, k, c, w, lo[c], hi[c], guess[c])
        else:
            guess[c] = 0.0
    thetas = guess
    m = w.size
    for i in range(m):
        for c in range(k):
            z = v[i * k + c] - thetas[c] * w[i]
            out[i * k + c] = 0.0 if z < 0.0 else (1.0 if z > 1.0 else z)
    return thetas


@jit
def _greedy_k2(v, w, x, s, lo, hi, order, drop):  # pragma: no cover
    """The rounding's greedy pass over ``order``: with ``drop``, members (``x == 1``) leave
    while the sum stays at least ``lo``, until it is at most ``hi``; else non-members join
    while it stays at most ``hi``, until it is at least ``lo``. Returns the sum and whether
    it got within the bounds."""
    for t in range(order.size):
        i = order[t]
        if drop:
            if x[i] == 1.0 and s - w[i] >= lo:
                x[i] = 0.0
                s -= w[i]
                if s <= hi:
                    return s, True
        elif x[i] == 0.0 and s + w[i] <= hi:
            x[i] = 1.0
            s += w[i]
            if s >= lo:
                return s, True
    return s, False


@jit
def _extreme_first(key, pool, count):  # pragma: no cover
    """Indices of ``pool`` (an index array into ``key``) whose keys are among its ``count``
    smallest (every tie of the largest of them too), sorted by key: the head of the pool's
    order by key, without sorting the whole pool."""
    vals = key[pool]
    if count < pool.size:
        cut = np.partition(vals, count - 1)[count - 1]
        pool = pool[vals <= cut]
        vals = key[pool]
    return pool[np.argsort(vals)]


@jit
def round_k2_sums(v, w, lo, hi):  # pragma: no cover
    """Label 1's indicator (``(m,)`` float 0/1) from its weights ``v``: ``v > 1/2``, then the
    largest weights added, or the smallest removed, until ``lo <= sum(w x) <= hi``.

    The pass takes the members (or non-members) in order of weight; it first orders only the
    weakest (strongest) ones that can make up the excess twice over, and the rest only when
    those do not reach the bounds."""
    m = v.size
    x = np.zeros(m)
    s = 0.0
    for i in range(m):
        if v[i] > 0.5:
            x[i] = 1.0
            s += w[i]
    if s <= hi and s >= lo:
        return x
    drop = s > hi
    key = v if drop else -v
    pool = np.flatnonzero(x == 1.0) if drop else np.flatnonzero(x == 0.0)
    if pool.size == 0:
        return x
    least = np.inf
    for i in pool:
        least = min(least, w[i])
    excess = (s - hi) if drop else (lo - s)
    count = min(pool.size, 2 * int(np.ceil(excess / max(least, 1e-300))) + 64)
    start = x.copy()
    s0 = s
    s, done = _greedy_k2(v, w, x, s, lo, hi, _extreme_first(key, pool, count), drop)
    if not done and count < pool.size:  # (the head was not enough: the whole order)
        x[:] = start
        _greedy_k2(v, w, x, s0, lo, hi, _extreme_first(key, pool, pool.size), drop)
    return x


@jit
def round_onehot_sums(x, k, w, lo, hi):  # pragma: no cover
    """One-hot rounding (``(m * k,)``) of pixel-major weights that keeps each label's weighted
    count within ``[lo, hi]`` where it can: each pixel takes its largest weight, then labels
    above their upper bound give up the pixels that prefer them least (to the label each likes
    next best among those with room), and labels below their lower bound take the pixels that
    lose least by joining them (from labels with count to spare)."""
    m = w.size
    lab = np.empty(m, np.int64)
    counts = np.zeros(k)
    for i in range(m):
        best = 0
        for c in range(1, k):
            if x[i * k + c] > x[i * k + best]:
                best = c
        lab[i] = best
        counts[best] += w[i]
    for a in range(k):
        if counts[a] > hi[a]:
            # the pixels that prefer a least go first, each to the label it likes next best
            # among those with room as they stand
            loss = np.full(m, np.inf)
            for i in range(m):
                if lab[i] != a:
                    continue
                second = -np.inf
                for c in range(k):
                    if c != a and x[i * k + c] > second:
                        second = x[i * k + c]
                loss[i] = x[i * k + a] - second
            order = np.argsort(loss)
            for t in range(m):
                i = order[t]
                if counts[a] <= hi[a] or loss[i] == np.inf:
                    break
                if counts[a] - w[i] < lo[a]:
                    continue
                best = -1
                for c in range(k):
                    if c != a and counts[c] + w[i] <= hi[c] and (
                            best < 0 or x[i * k + c] > x[i * k + best]):
                        best = c
                if best < 0:
                    continue
                lab[i] = best
                counts[a] -= w[i]
                counts[best] += w[i]
    for c in range(k):
        if counts[c] < lo[c]:
            loss = np.full(m, np.inf)
            for i in range(m):
                a = lab[i]
                if a != c and counts[a] - w[i] >= lo[a]:
                    loss[i] = x[i * k + a] - x[i * k + c]
            order = np.argsort(loss)
            for t in range(m):
                i = order[t]
                if counts[c] >= lo[c] or loss[i] == np.inf:
                    break
                a = lab[i]
                if counts[a] - w[i] < lo[a] or counts[c] + w[i] > hi[c]:
                    continue
                lab[i] = c
                counts[a] -= w[i]
                counts[c] += w[i]
    out = np.zeros(m * k)
    for i in range(m):
        out[i * k + lab[i]] = 1.0
    return out



def _project_xp(xp: Any, v: Any, k: int, w: Any, lo: np.ndarray, hi: np.ndarray) -> Any:
    """:func:`project_box_sums` with array operations (CuPy or numpy); the same multipliers up
    to rounding."""
    V = v.reshape(-1, k)
    thetas = np.zeros(k)
    for c in range(k):
        if not (lo[c] > -np.inf or hi[c] < np.inf):
            continue
        col = V[:, c]

        def f(theta: float, col: Any = col) -> tuple[float, float]:
            z = col - theta * w
            inside = (z > 0.0) & (z < 1.0)
            total = float(xp.sum(w * xp.clip(z, 0.0, 1.0)))
            return total, -float(xp.sum(w * w * inside))

        f0 = f(0.0)[0]
        if lo[c] <= f0 <= hi[c]:
            continue
        pos = w > 0
        if f0 > hi[c]:
            target, a, b = hi[c], 0.0, max(0.0, float(xp.max(xp.where(pos, col / xp.where(pos, w, 1), 0))))
        else:
            target, a, b = lo[c], min(0.0, float(xp.min(xp.where(pos, (col - 1) / xp.where(pos, w, 1), 0)))), 0.0
        tol = 1e-12 * max(1.0, abs(target))
        theta = 0.0
        for _ in range(MAX_STEPS):
            val, slope = f(theta)
            if abs(val - target) <= tol:
                break
            if val > target:
                a = max(a, theta)
            else:
                b = min(b, theta)
            step = theta - (val - target) / slope if slope < 0 else np.nan
            theta = step if a < step < b else 0.5 * (a + b)
            if b - a <= 1e-15 * max(1.0, abs(a), abs(b)):
                break
        thetas[c] = theta
    Z = xp.clip(V - w[:, None] * xp.asarray(thetas)[None, :], 0.0, 1.0)
    return Z.ravel()


@dataclass
class BoxWithSums:
    """``[0, 1]^(m k)`` with bounds on each label column's weighted sum, for ADMM's ``z1``.

    Attributes
    ----------
    k : int
        Columns (labels) of the pixel-major layout; 1 for a plain vector.
    weights : numpy.ndarray
        ``(m,)`` non-negative weight of each row in the sums (pixel multiplicities; ones at full
        resolution).
    lo, hi : numpy.ndarray
        ``(k,)`` bounds of each column's weighted sum (``-inf`` / ``inf`` where there is none).
    """

    k: int
    weights: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def __post_init__(self) -> None:
        self.weights = np.ascontiguousarray(self.weights, dtype=np.float64)
        self.lo = np.asarray(self.lo, dtype=np.float64).reshape(self.k)
        self.hi = np.asarray(self.hi, dtype=np.float64).reshape(self.k)
        if np.any(self.lo > self.hi):
            raise ValueError("a sum's lower bound is above its upper bound")
        if np.any(self.weights < 0):
            raise ValueError("sum weights must be non-negative")
        self._device = {}
        self._theta = np.zeros(self.k)  # the last projection's multipliers (Newton's start)

    @property
    def m(self) -> int:
        """Rows (pixels)."""
        return int(self.weights.size)

    def project(self, v: Any, backend: Any) -> Any:
        """The Euclidean projection of ``v`` (``(m * k,)`` on ``backend``) onto the set."""
        if not backend.is_gpu:
            out = np.empty_like(v)
            project_box_sums(np.ascontiguousarray(v, dtype=np.float64), self.k, self.weights,
                             self.lo, self.hi, self._theta, out)
            return out
        return _project_xp(backend.xp, v, self.k, self._weights_on(backend), self.lo, self.hi)

    def _weights_on(self, backend: Any) -> Any:
        """The weights on a GPU backend (copied there once)."""
        w = self._device.get("w")
        if w is None:
            w = self._device["w"] = backend.asarray(self.weights)
        return w

    def sums(self, x: np.ndarray) -> np.ndarray:
        """``(k,)`` weighted column sums of a host vector ``x``."""
        return self.weights @ np.asarray(x, dtype=np.float64).reshape(self.m, self.k)

    def violation(self, x: np.ndarray) -> float:
        """Largest amount by which a column sum of host ``x`` lies outside its bounds."""
        return self._outside(self.sums(x))

    def _outside(self, s: np.ndarray) -> float:
        """Largest amount by which one of the column sums ``s`` lies outside its bounds."""
        return float(max(0.0, np.max(self.lo - s), np.max(s - self.hi)))

    def relative_violation(self, x: Any, backend: Any) -> float:
        """:meth:`violation` of an iterate on ``backend``, relative to the largest finite bound
        (at least 1): the constraint residual an ADMM record reports."""
        if backend.is_gpu:
            s = backend.to_numpy(self._weights_on(backend) @ x.reshape(self.m, self.k))
        else:
            s = self.sums(x)
        over = self._outside(s)
        finite = np.concatenate([np.abs(self.lo[np.isfinite(self.lo)]),
                                 np.abs(self.hi[np.isfinite(self.hi)])])
        return over / max(1.0, float(finite.max()) if finite.size else 1.0)

    def restricted(self, keep: np.ndarray, fixed_sums: np.ndarray) -> BoxWithSums:
        """The set over the rows ``keep`` when the others are fixed with column sums
        ``fixed_sums`` (their weighted one-hot counts): the bounds move by those sums."""
        return BoxWithSums(self.k, self.weights[keep], self.lo - fixed_sums,
                           self.hi - fixed_sums)
