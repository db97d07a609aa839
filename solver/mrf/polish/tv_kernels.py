"""Compiled primal-dual iterations for the TV (ℓ1) relaxation of a K = 2 energy.

For two labels the energy of a labelling ``s`` in {0, 1}^n is, up to a constant,
``u^T s + sum_{i<j} c_ij |s_i - s_j|`` with ``u = d_2 - d_1`` and ``c_ij = 2 lam W_ij``. Over the
box [0, 1]^n this relaxation is tight: every level set ``{s > t}`` of a minimiser is a minimal
labelling. :func:`tv_iterate` runs linearized ADMM on it (the pairwise term split as
``p = D s``, the ``s``-update a projected gradient step, which is the primal-dual form of
Chambolle and Pock with diagonal steps). Its iterates are proposals for the polish's fusion,
not an answer of their own. Conventions as :mod:`solver.mrf.polish.icm_kernels`; on a grid
the problem travels as one :class:`TVGrid`.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from solver.backend.jit import inline_jit, jit, parallel_jit


class TVGrid(NamedTuple):
    """The relaxation on an 8-neighbour grid as the kernels take it (one argument): ``cost``
    ``(4, n)`` float32, the weight of pixel ``i``'s ``q``-th forward edge (east, south-west,
    south, south-east: ``offsets[4 + q]``), 0 where there is none; ``offsets`` ``(8,)`` (the
    neighbours', :func:`solver.mrf.build.stencil.grid_offsets`); ``u`` ``(n,)`` float32, the
    linear term; ``free`` ``(n,)`` bool, the pixels that may move; ``tau`` ``(n,)`` float32,
    the primal steps."""

    cost: np.ndarray
    offsets: np.ndarray
    u: np.ndarray
    free: np.ndarray
    tau: np.ndarray

# The gradient helper is inlined into its callers' code (``inline_jit``, as in
# :mod:`solver.mrf.polish.layered_kernels`).


@jit
def _most_moved(s, old):  # pragma: no cover
    """The largest ``|s_i - old_i|``; ``old`` becomes ``s``."""
    moved = 0.0
    for i in range(s.size):
        d = abs(s[i] - old[i])
        if d > moved:
            moved = d
        old[i] = s[i]
    return moved


@jit
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
        if done % 25 == 0 and _most_moved(s, old) < tol:
            break
    return done


@jit
def _dual(p, cost, bar, q, i, j, sigma):  # pragma: no cover
    """One dual step on edge ``(i, j)`` (pixel ``i``'s ``q``-th forward edge); whether it moved."""
    c = cost[q, i]
    v = min(max(p[q, i] + sigma * (bar[i] - bar[j]), -c), c)
    if v == p[q, i]:
        return False
    p[q, i] = v
    return True


@jit
def _touch(touched, tl, nt, i):  # pragma: no cover
    """Mark pixel ``i`` changed in this step (listed in ``tl`` once); the new count."""
    if not touched[i]:
        touched[i] = True
        tl[nt] = i
        nt += 1
    return nt


@inline_jit
def _gradient(i, u, p, extra, o0, o1, o2, o3):  # pragma: no cover
    """Pixel ``i``'s gradient ``u_i + (D'p)_i``: its forward edges' duals, ``extra`` (an area
    row's pull), then its backward edges' duals taken off, in that order (the bits of every
    step depend on it)."""
    g = u[i] + p[0, i] + p[1, i] + p[2, i] + p[3, i]
    g += extra
    if i >= o0:
        g -= p[0, i - o0]
    if i >= o1:
        g -= p[1, i - o1]
    if i >= o2:
        g -= p[2, i - o2]
    if i >= o3:
        g -= p[3, i - o3]
    return g


#: Pixels a thread takes at a time in :func:`_dense_step`'s sweep (duals, then values): small
#: enough that the duals just written are still in the cache when the values read them.
SEGMENT = 1024
#: Runs of pixels :func:`_dense_step` splits a step into, shared among the threads (a fixed
#: count: a kernel that asked numba for its thread count could not be cached).
RUNS = 4


@jit
def _duals_between(cost, offsets, bar, p, sigma, lo, hi):  # pragma: no cover
    """The dual step on the forward edges of pixels ``lo .. hi - 1``, from ``bar``. The loops
    read one-dimensional views that start where each term does, so that they need no offset
    and no test and the compiler vectorises them (measured: docs/decisions.md, The TV grid
    step's loops)."""
    n = bar.size
    for q in range(4):
        o = offsets[4 + q]
        end = min(hi, n - o)  # (no edge leaves the image)
        if end <= lo:
            continue
        pq = p[q, lo:end]
        cq = cost[q, lo:end]
        head = bar[lo:end]
        tail = bar[lo + o:end + o]
        for i in range(end - lo):
            c = cq[i]
            pq[i] = min(max(pq[i] + sigma * (head[i] - tail[i]), -c), c)


@jit
def _values_between(grid, s, bar, p, pull, w, lo, hi):  # pragma: no cover
    """Pixels ``lo .. hi - 1``'s gradients (:func:`_gradient`'s sum, in its order), values and
    extrapolations, from the duals; pixels without every backward edge (the first row and a
    pixel) one at a time, the others by views as in :func:`_duals_between`."""
    _, offsets, u, free, tau = grid
    o0, o1, o2, o3 = offsets[4], offsets[5], offsets[6], offsets[7]
    pulled = w.size > 0
    full = max(lo, min(hi, o3))  # the first pixel from which every backward edge is there
    for i in range(lo, full):
        g = _gradient(i, u, p, pull * w[i] if pulled else np.float32(0.0), o0, o1, o2, o3)
        t = min(max(s[i] - tau[i] * g, np.float32(0.0)), np.float32(1.0))
        if not free[i]:
            t = s[i]
        bar[i] = 2 * t - s[i]
        s[i] = t
    if hi <= full:
        return
    f0 = p[0, full:hi]
    f1 = p[1, full:hi]
    f2 = p[2, full:hi]
    f3 = p[3, full:hi]
    b0 = p[0, full - o0:hi - o0]
    b1 = p[1, full - o1:hi - o1]
    b2 = p[2, full - o2:hi - o2]
    b3 = p[3, full - o3:hi - o3]
    uu = u[full:hi]
    ff = free[full:hi]
    tt = tau[full:hi]
    ss = s[full:hi]
    bb = bar[full:hi]
    ww = w[full:hi] if pulled else w
    # (the update is written out as in the loop above: through an inlined helper taking the
    # views, this loop no longer vectorised and took 3x the time)
    for k in range(hi - full):
        g = uu[k] + f0[k] + f1[k] + f2[k] + f3[k]
        g += pull * ww[k] if pulled else np.float32(0.0)
        g -= b0[k]
        g -= b1[k]
        g -= b2[k]
        g -= b3[k]
        t = min(max(ss[k] - tt[k] * g, np.float32(0.0)), np.float32(1.0))
        if not ff[k]:
            t = ss[k]
        bb[k] = 2 * t - ss[k]
        ss[k] = t


@parallel_jit
def _dense_step(grid, s, bar, p, sigma, pull, w):  # pragma: no cover
    """One step over every edge and pixel: each edge's dual from the last step's ``bar``, then
    each pixel's gradient, value and ``bar``. Where ``w`` is not empty each pixel's gradient
    gains ``pull w_i`` (an area row's dual).

    It runs as one sweep over the image, split into :data:`RUNS` runs of pixels: a pixel's value
    needs only the duals of edges that reach back at most ``reach`` (the longest forward edge)
    pixels, and an edge's dual only ``bar`` up to ``reach`` pixels ahead. So the threads first
    take the duals of each run's last ``reach`` pixels (whose far ends lie in the next run,
    before that run's values change them), then go through each run in segments of
    :data:`SEGMENT` pixels, each segment's duals before its values. Every dual and value is the
    same expression of the same inputs as in a step a pass at a time, so the numbers are the
    same, on any number of threads; the image is read about once a step instead of twice
    (measured: docs/decisions.md, The TV grid step's loops)."""
    cost, offsets, _, _, _ = grid
    n = s.size
    reach = offsets[7]
    size = max((n + RUNS - 1) // RUNS, 2 * reach, 1)
    runs = (n + size - 1) // size
    for r in numba.prange(runs):
        hi = min(n, (r + 1) * size)
        _duals_between(cost, offsets, bar, p, sigma, max(r * size, hi - reach), hi)
    for r in numba.prange(runs):
        lo = r * size
        hi = min(n, lo + size)
        ahead = max(lo, hi - reach)  # (its duals are done)
        x = lo
        while x < hi:
            y = min(hi, x + SEGMENT)
            if x < ahead:
                _duals_between(cost, offsets, bar, p, sigma, x, min(y, ahead))
            _values_between(grid, s, bar, p, pull, w, x, y)
            x = y


@jit
def _list_around(tl, nt, touched, cost, offsets, listed, stamp, out):  # pragma: no cover
    """The touched pixels ``tl[:nt]`` and their neighbours along an edge, each once, into
    ``out`` (clearing ``touched``); their count."""
    n = touched.size
    na = 0
    for a in range(nt):
        i = tl[a]
        touched[i] = False
        for d in range(-1, 8):
            if d < 0:
                j = i
            else:
                j = i + offsets[d]
                if d >= 4:
                    if cost[d - 4, i] <= 0.0:
                        continue
                elif j < 0 or j >= n or cost[3 - d, j] <= 0.0:
                    continue
            if listed[j] != stamp:
                listed[j] = stamp
                out[na] = j
                na += 1
    return na


@jit
def _active_step(grid, s, bar, p, sigma, act, na, step, marks):  # pragma: no cover
    """One step over the listed pixels ``act[:na]``, their edges once each; with ``marks =
    (stamp, touched, tl)``, marks in ``touched`` (listed in ``tl``) every pixel whose ``bar`` or
    a dual at it changed, and returns their count (``stamp[q, i]``: the step edge ``q`` of ``i``
    was last updated in)."""
    cost, offsets, u, free, tau = grid
    stamp, touched, tl = marks
    nt = 0
    for a in range(na):  # the duals, from the last step's bar
        i = act[a]
        for q in range(4):
            o = offsets[4 + q]
            if cost[q, i] > 0.0 and stamp[q, i] != step:
                stamp[q, i] = step
                if _dual(p, cost, bar, q, i, i + o, sigma):
                    nt = _touch(touched, tl, nt, i)
                    nt = _touch(touched, tl, nt, i + o)
            j = i - o
            if j >= 0 and cost[q, j] > 0.0 and stamp[q, j] != step:
                stamp[q, j] = step
                if _dual(p, cost, bar, q, j, i, sigma):
                    nt = _touch(touched, tl, nt, i)
                    nt = _touch(touched, tl, nt, j)
    for a in range(na):  # the values, from this step's duals
        i = act[a]
        if not free[i]:
            continue
        g = u[i] + p[0, i] + p[1, i] + p[2, i] + p[3, i]
        for q in range(4):
            j = i - offsets[4 + q]
            if j >= 0:
                g -= p[q, j]
        t = min(max(s[i] - tau[i] * g, np.float32(0.0)), np.float32(1.0))
        b = 2 * t - s[i]
        if b != bar[i]:
            nt = _touch(touched, tl, nt, i)
        bar[i] = b
        s[i] = t
    return nt


#: The arguments of :func:`_dense_step` for no area row.
NO_PULL = np.float32(0.0)
NO_WEIGHTS = np.zeros(0, np.float32)

#: Share of the pixels below which the grid kernel visits only those that can move: a listed
#: pixel costs tens of times a pixel of a step over all of them (random reads of several
#: arrays). At 0.03 a 1e6-pixel rectangle case took 2.2 s instead of 1.3; at 0.01 converged
#: cases took 0.27-0.34 s instead of 1.4 (docs/decisions.md, "TV proposals for two labels").
SPARSE_BELOW = 0.01

#: Pixels below which the steps under an area bound (:func:`tv_iterate_grid_area`, every step
#: over every pixel) run on one thread: a step is two parallel passes, and on a small image
#: waking the threads for them costs about as much as the passes. On the tuning half's K = 2
#: area cases (quiet 2-core machine, 2026-12-03, the same energies): at 1e4 and 3e4 pixels the
#: constrained solve took 0.80-0.98x the time (median 0.86x), at 1e5 0.88-1.09x, so 1e5 stays
#: threaded (docs/decisions.md, "One thread for small area relaxations"). The numbers are the
#: same on any number of threads.
SERIAL_BELOW = 50_000


def step_threads(n: int) -> int | None:
    """The threads the grid steps on ``n`` pixels run on: 1 below :data:`SERIAL_BELOW`, else
    None (numba's setting), for :func:`solver.backend.threads.threaded`."""
    return 1 if n < SERIAL_BELOW else None


#: Pixels a thread sums at a time in :func:`grid_primal_value` and :func:`grid_dual_value`: the
#: blocks' sums are then added in order, so the value is the same on any number of threads.
BLOCK = 4096


@inline_jit
def _in_order(part):  # pragma: no cover
    """The sum of the blocks' sums ``part``, in order."""
    total = 0.0
    for blk in range(part.size):
        total += part[blk]
    return total


@parallel_jit
def grid_primal_value(cost, offsets, u, s):  # pragma: no cover
    """The TV relaxation's value at ``s``, ``u's + sum_q cost_q |s_i - s_{i + o_q}|``, each
    term in float64: the start's value that :func:`grid_dual_value` bounds. Summed like it, in
    fixed blocks of pixels in parallel, then the blocks in order. (float32 dot products lost
    about 1e-4 of it on a 3 MP image, more than the gap tests' tolerance: docs/decisions.md,
    "The gap test's start value".)"""
    n = u.size
    part = np.zeros((n + BLOCK - 1) // BLOCK)
    for blk in numba.prange(part.size):
        value = 0.0
        for i in range(blk * BLOCK, min(n, blk * BLOCK + BLOCK)):
            si = np.float64(s[i])
            value += np.float64(u[i]) * si
            for q in range(4):
                j = i + offsets[4 + q]
                if j < n:
                    value += np.float64(cost[q, i]) * abs(si - np.float64(s[j]))
        part[blk] = value
    return _in_order(part)


@parallel_jit
def grid_dual_value(offsets, u, free, s0, p, nu=0.0, w=None):  # pragma: no cover
    """The TV relaxation's dual objective at the edge duals ``p`` (each within its clip), a
    lower bound on its minimum and so, the relaxation being tight, on the two-label energy's
    (less its constant): each free pixel's least linear term over the box, ``min(0, g_i)``
    with ``g = u + D'p``, and each fixed pixel's at its value ``s0_i``. Summed in fixed
    blocks of pixels in parallel, then the blocks in order (the same number on any number of
    threads).

    With an area row's weights ``w`` and its dual ``nu``, each pixel's gradient gains
    ``nu w_i`` (as in :func:`tv_iterate_grid_area`'s steps); the area bounds' own term, the
    support ``nu a_hi`` or ``nu a_lo``, is the caller's."""
    o0, o1, o2, o3 = offsets[4], offsets[5], offsets[6], offsets[7]
    n = u.size
    part = np.zeros((n + BLOCK - 1) // BLOCK)
    for blk in numba.prange(part.size):
        value = 0.0
        for i in range(blk * BLOCK, min(n, blk * BLOCK + BLOCK)):
            extra = np.float32(0.0)
            if w is not None:
                extra = np.float32(nu * w[i])
            g = _gradient(i, u, p, extra, o0, o1, o2, o3)
            if free[i]:
                value += min(g, 0.0)
            else:
                value += g * s0[i]
        part[blk] = value
    return _in_order(part)


@jit
def tv_iterate_grid(grid, s, sigma, iterations, tol, sparse_below, start_value=np.inf,
                    gap_tol=-np.inf, p=None, bar=None):  # pragma: no cover
    """:func:`tv_iterate` on an 8-neighbour grid (a :class:`TVGrid`), in float32.

    An edge's dual stays 0 where its ``cost`` is 0. A step changes an edge's dual only if it
    changed in the last step or the extrapolated value ``bar`` of an end did, and a pixel's
    value only if its own ``bar`` or a dual at it did. So once few pixels change (a warm start
    from a good labelling, after some tens of steps) each step visits only those and their
    neighbours, and gives exactly what a step over every pixel gives. Steps over every pixel run
    until then: every 25 steps one of them is compared with the state before it, and below
    ``sparse_below`` of the pixels (:data:`SPARSE_BELOW`) the next are sparse, until they visit
    twice that share. Stops early once a 25-step block moves no ``s_i`` by more than ``tol``, or
    nothing changes, or (checked every 25 steps) once the start's value ``start_value`` is
    within ``gap_tol`` of the dual objective (:func:`grid_dual_value`): then no labelling is
    better than the start by more than that. Returns the number of steps run and how many of
    them were sparse.

    ``p`` (``(4, n)``) and ``bar`` (``(n,)``), float32, given together, are the duals and the
    extrapolation to go on from, updated in place, so that calls of a multiple of 25 steps
    each make the steps of one call; by default the steps start from duals at zero and
    ``bar = s``.
    """
    cost, offsets, u, free, _ = grid
    n = s.size
    if p is None:
        p = np.zeros((4, n), np.float32)
    if bar is None:
        bar = s.copy()
    old = s.copy()
    stamp = np.full((4, n), -1, np.int32)  # the step each edge's dual was last updated in
    listed = np.full(n, -1, np.int32)      # the step each pixel was last listed for
    touched = np.zeros(n, np.bool_)
    act = np.empty(n, np.int32)
    tl = np.empty(n, np.int32)
    na = n  # pixels the next step visits (n: all, by a step over every pixel)
    done = 0
    sparse = 0
    while done < iterations:
        step = np.int32(done)
        if na < n:
            sparse += 1
            nt = _active_step(grid, s, bar, p, sigma, act, na, step, (stamp, touched, tl))
            na = _list_around(tl, nt, touched, cost, offsets, listed, step, act)
            if na == 0:
                done += 1
                break
            if na > 2 * sparse_below * n:  # (grown again: back to steps over every pixel)
                na = n
        elif done % 25 == 24:  # a step over every pixel, compared with the state before it
            p0 = p.copy()
            b0 = bar.copy()
            _dense_step(grid, s, bar, p, sigma, NO_PULL, NO_WEIGHTS)
            # at most this many pixels changed (counted first: listing them all would cost
            # more than the step when most did)
            bound = 0
            for i in range(n):
                if bar[i] != b0[i]:
                    bound += 1
            for q in range(4):
                for i in range(n):
                    if p[q, i] != p0[q, i]:
                        bound += 2
            if bound < sparse_below * n:
                nt = 0
                for i in range(n):
                    if bar[i] != b0[i]:
                        nt = _touch(touched, tl, nt, i)
                for q in range(4):
                    o = offsets[4 + q]
                    for i in range(n - o):
                        if p[q, i] != p0[q, i]:
                            nt = _touch(touched, tl, nt, i)
                            nt = _touch(touched, tl, nt, i + o)
                na = _list_around(tl, nt, touched, cost, offsets, listed, step, act)
                if na == 0:
                    done += 1
                    break
        else:
            _dense_step(grid, s, bar, p, sigma, NO_PULL, NO_WEIGHTS)
        done += 1
        if done % 25 == 0:
            if _most_moved(s, old) < tol:
                break
            # (fixed pixels keep their start values: s is s0 there; no pass without a test)
            if (start_value < np.inf
                    and start_value - grid_dual_value(offsets, u, free, s, p) <= gap_tol):
                break
    return done, sparse


@jit
def tv_iterate_grid_area(grid, s, sigma, w, bounds, sigma_area, iterations, start_value=np.inf,
                         gap_tol=-np.inf):  # pragma: no cover
    """:func:`tv_iterate_grid` (steps over every pixel) with the area ``a(s) = sum w_i s_i``
    kept in ``bounds = (a_lo, a_hi)``: one more dual ``nu`` for that row, its step
    ``sigma_area``, the projection onto the interval through Moreau's identity; each pixel's
    gradient gains ``nu w_i`` (``tau`` must count the row: ``gamma / (deg_i + w_i)``). Every 25
    steps, where ``start_value`` (the relaxation's value at a labelling within the bounds) is
    finite, the dual objective is taken (:func:`grid_dual_value` with ``nu`` and ``w``, less
    the bounds' support, a lower bound on every labelling within them): once the start is
    within ``gap_tol`` of it the steps stop, no labelling being better by more. Returns the
    number of steps run, the final ``nu`` and the last gap found (inf if none)."""
    a_lo, a_hi = bounds
    _, offsets, u, free, _ = grid
    n = s.size
    bar = s.copy()
    p = np.zeros((4, n), np.float32)
    nu = 0.0
    area = 0.0
    gap = np.inf
    for i in range(n):
        area += w[i] * bar[i]
    done = 0
    while done < iterations:
        v = nu + sigma_area * area
        nu = v - sigma_area * min(max(v / sigma_area, a_lo), a_hi)
        _dense_step(grid, s, bar, p, sigma, np.float32(nu), w)
        area = 0.0
        for i in range(n):  # (in order, on one thread: the same sum on any number of threads)
            area += w[i] * bar[i]
        done += 1
        if done % 25 == 0 and start_value < np.inf:
            support = nu * a_hi if nu > 0 else nu * a_lo
            gap = start_value - (grid_dual_value(offsets, u, free, s, p, nu, w) - support)
            if gap <= gap_tol:
                break
    return done, nu, gap
