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
Conventions as :mod:`solver.mrf.polish.icm_kernels`. The problem travels as one
:class:`LayeredGrid`, a step's iterate as one tuple ``(u1, u2, b1, b2, p1, p2, r)``: the
layers, their extrapolations, the edge duals and the order rows' duals.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from solver.backend.jit import inline_jit, jit, parallel_jit



class LayeredGrid(NamedTuple):
    """The layered relaxation as the kernels take it (one argument): ``cost`` ``(4, n)`` the
    forward edges' weights (``offsets[4 + q]``; 0: none), ``offsets`` ``(8,)``, ``g1``, ``g2``
    the layers' unary terms, ``free`` the movable pixels and ``tau`` the primal steps."""

    cost: np.ndarray
    offsets: np.ndarray
    g1: np.ndarray
    g2: np.ndarray
    free: np.ndarray
    tau: np.ndarray


# The helpers of the steps are inlined into their callers' code (``inline_jit``: a call inside
# a parallel loop made the step 2.5x slower).


@inline_jit
def _gradients(i, g1, g2, p1, p2, r, o0, o1, o2, o3):  # pragma: no cover
    """Pixel ``i``'s gradients in the two layers: its unary terms, the duals of its edges and
    of the order rows it is in (its own, its backward neighbours', its forward neighbours')."""
    n = g1.size
    G1 = g1[i] - r[8, i] + p1[0, i] + p1[1, i] + p1[2, i] + p1[3, i]
    G2 = (g2[i] + r[8, i] + p2[0, i] + p2[1, i] + p2[2, i] + p2[3, i]
          + r[0, i] + r[1, i] + r[2, i] + r[3, i] + r[4, i] + r[5, i] + r[6, i] + r[7, i])
    # (the four directions written out: a loop over them took 1.27x the step's time)
    if i >= o0:
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
    if i + o0 < n:
        G1 -= r[3, i + o0]
    if i + o1 < n:
        G1 -= r[2, i + o1]
    if i + o2 < n:
        G1 -= r[1, i + o2]
    if i + o3 < n:
        G1 -= r[0, i + o3]
    return G1, G2


@parallel_jit
def dual_value(offsets, g1, g2, free, s1, s2, p1, p2, r):  # pragma: no cover
    """The relaxation's dual objective at the duals ``p1``, ``p2``, ``r`` (feasible: within
    their clips), a lower bound on its minimum: each free pixel's least value of its linear
    term over the box, ``min(0, G1) + min(0, G2)``, and each fixed pixel's at its values
    ``s1``, ``s2``. Summed in fixed blocks of pixels in parallel, then the blocks in order (the
    same number on any number of threads)."""
    o0, o1, o2, o3 = offsets[4], offsets[5], offsets[6], offsets[7]
    n = g1.size
    blocks = (n + 4095) // 4096
    part = np.zeros(blocks)
    for blk in numba.prange(blocks):
        value = 0.0
        for i in range(blk * 4096, min(n, blk * 4096 + 4096)):
            G1, G2 = _gradients(i, g1, g2, p1, p2, r, o0, o1, o2, o3)
            if free[i]:
                value += min(G1, 0.0) + min(G2, 0.0)
            else:
                value += G1 * s1[i] + G2 * s2[i]
        part[blk] = value
    total = 0.0
    for blk in range(blocks):
        total += part[blk]
    return total


#: Pixels per chunk of :func:`layered_iterate`'s steps over what can change: a chunk is a run
#: of consecutive pixels (of one row but at its ends), visited whole or not at all. On the
#: bundled cameraman's 5e5-pixel nesting, 200 steps from the polished labelling took 1.3-1.6 s
#: at 8 or 16 instead of 3.2-3.4 s over every pixel (32: 1.6-1.9 s, 64: 2.1 s); on the textured
#: washer about half the chunks stay active and the steps took 0.9-1.0x the time
#: (docs/decisions.md, "Layered steps over what can change").
CHUNK = 16


@jit
def _mark(act, lo, hi, chunk):  # pragma: no cover
    """Set ``act`` on the chunks of the pixels ``lo..hi`` (clipped to the image)."""
    nc = act.size
    a = max(lo, 0) // chunk
    b = min(hi // chunk, nc - 1)
    for c in range(a, b + 1):
        act[c] = True


@jit
def _listed(act, out):  # pragma: no cover
    """The chunks set in ``act`` into ``out``; their count."""
    k = 0
    for c in range(act.size):
        if act[c]:
            out[k] = c
            k += 1
    return k


@parallel_jit
def _active_duals(grid, state, sigma, chunks, nk, chunk, changed):  # pragma: no cover
    """Dual ascent from the extrapolated layers ``b1``, ``b2`` on the edges and rows stored at
    the pixels of the listed chunks ``chunks[:nk]``: each layer's edge duals clipped to
    ``[-c, c]``, the order rows' duals projected on ``[0, inf)`` (0 where there is no
    neighbour). An edge's are stored at its first end ``i`` with its two order rows
    (``u2_i - u1_{i + o}``, row ``4 + q`` of pixel ``i``; ``u2_{i + o} - u1_i``, row ``3 - q``
    of pixel ``i + o``), and pixel ``i``'s own row ``u2_i - u1_i`` is row 8. ``changed[c]``
    tells whether any of chunk ``c``'s changed."""
    cost, offsets, _, _, _, _ = grid
    _, _, b1, b2, p1, p2, r = state
    n = b1.size
    zero = np.float32(0.0)
    for k in numba.prange(nk):
        c = chunks[k]
        moved = False
        for i in range(c * chunk, min(n, c * chunk + chunk)):
            v = max(r[8, i] + sigma * (b2[i] - b1[i]), zero)
            moved |= v != r[8, i]
            r[8, i] = v
            for q in range(4):
                o = offsets[4 + q]
                j = i + o
                if j >= n:
                    continue
                cq = cost[q, i]
                v = min(max(p1[q, i] + sigma * (b1[i] - b1[j]), -cq), cq)
                w = min(max(p2[q, i] + sigma * (b2[i] - b2[j]), -cq), cq)
                moved |= (v != p1[q, i]) | (w != p2[q, i])
                p1[q, i] = v
                p2[q, i] = w
                if cq > 0.0:
                    v = max(r[4 + q, i] + sigma * (b2[i] - b1[j]), zero)
                    w = max(r[3 - q, j] + sigma * (b2[j] - b1[i]), zero)
                else:
                    v = zero
                    w = zero
                moved |= (v != r[4 + q, i]) | (w != r[3 - q, j])
                r[4 + q, i] = v
                r[3 - q, j] = w
        changed[c] = moved


@parallel_jit
def _active_values(grid, state, chunks, nk, chunk, moved, barred):  # pragma: no cover
    """The primal part of a step on the pixels of the listed chunks: per free pixel its
    layers' gradients (:func:`_gradients`), the projected step and the extrapolation
    ``b = 2 u_new - u_old`` (pixels not ``free`` keep their values and ``b = u``);
    ``moved[c]`` tells whether a value of chunk ``c`` changed, ``barred[c]`` whether an
    extrapolation did."""
    _, offsets, g1, g2, free, tau = grid
    u1, u2, b1, b2, p1, p2, r = state
    n = u1.size
    lo, hi = np.float32(0.0), np.float32(1.0)
    o0, o1, o2, o3 = offsets[4], offsets[5], offsets[6], offsets[7]
    for k in numba.prange(nk):
        c = chunks[k]
        mv = False
        br = False
        for i in range(c * chunk, min(n, c * chunk + chunk)):
            if not free[i]:
                continue
            G1, G2 = _gradients(i, g1, g2, p1, p2, r, o0, o1, o2, o3)
            t1 = min(max(u1[i] - tau[i] * G1, lo), hi)
            t2 = min(max(u2[i] - tau[i] * G2, lo), hi)
            e1 = 2 * t1 - u1[i]
            e2 = 2 * t2 - u2[i]
            mv |= (t1 != u1[i]) | (t2 != u2[i])
            br |= (e1 != b1[i]) | (e2 != b2[i])
            b1[i] = e1
            b2[i] = e2
            u1[i] = t1
            u2[i] = t2
        moved[c] = mv
        barred[c] = br


@jit
def layered_step(grid, state, sigma):  # pragma: no cover
    """One step over every pixel of the iterate ``state`` (see the module docstring), in place
    (every chunk listed): the duals (:func:`_active_duals`), then the values
    (:func:`_active_values`). ``b1``, ``b2`` must equal ``u1``, ``u2`` at the pixels not
    ``free``."""
    n = state[0].size
    nc = (n + CHUNK - 1) // CHUNK
    chunks = np.arange(nc)
    flags = np.zeros(nc, np.bool_)
    _active_duals(grid, state, sigma, chunks, nc, CHUNK, flags)
    _active_values(grid, state, chunks, nc, CHUNK, flags, flags.copy())


@jit
def _most_moved(u1, u2, o1, o2):  # pragma: no cover
    """The largest change of either layer since ``o1``, ``o2``, which become ``u1``, ``u2``."""
    moved = 0.0
    for i in range(u1.size):
        moved = max(moved, abs(u1[i] - o1[i]), abs(u2[i] - o2[i]))
        o1[i] = u1[i]
        o2[i] = u2[i]
    return moved


@parallel_jit
def layered_iterate(grid, u1, u2, sigma, iterations, tol, start_value, gap_tol,
                    chunk=CHUNK):  # pragma: no cover
    """At most ``iterations`` steps (:func:`layered_step`) on ``u1``, ``u2`` (float32, in
    place), from duals at zero, on the :class:`LayeredGrid` ``grid``, ``sigma`` the dual
    step. Every 25 steps: stops once the block moved no
    value by more than ``tol``, or once the starting layers' value ``start_value`` is within
    ``gap_tol`` of the dual objective (:func:`dual_value`): then no labelling is better than
    the start by more than that. Returns the steps run and the last gap found (inf if none).

    Each step visits only the chunks of ``chunk`` pixels where something can change, and
    gives the bits of a step over every pixel. A dual changes only if it changed in the last
    step or an extrapolation ``b`` at one of its ends did; a value (and its extrapolation)
    only if it changed in the last step or a dual its gradient reads changed in this one.
    From a labelling most pixels far from its boundaries settle within a few steps.
    """
    _, offsets, g1, g2, free, _ = grid
    n = u1.size
    b1 = u1.copy()
    b2 = u2.copy()
    o1 = u1.copy()
    o2 = u2.copy()
    s1 = u1.copy()
    s2 = u2.copy()
    p1 = np.zeros((4, n), np.float32)
    p2 = np.zeros((4, n), np.float32)
    r = np.zeros((9, n), np.float32)
    state = (u1, u2, b1, b2, p1, p2, r)
    nc = (n + chunk - 1) // chunk
    south = offsets[6]
    chunks = np.empty(nc, np.int64)
    dual_act = np.ones(nc, np.bool_)   # chunks whose duals the next step updates
    value_act = np.ones(nc, np.bool_)  # chunks whose values this step updates
    duals_moved = np.zeros(nc, np.bool_)
    moved = np.ones(nc, np.bool_)      # a value changed in the last step
    barred = np.zeros(nc, np.bool_)    # an extrapolation changed in the last step
    done = 0
    gap = np.inf
    while done < iterations:
        nk = _listed(dual_act, chunks)
        duals_moved[:] = False
        _active_duals(grid, state, sigma, chunks, nk, chunk, duals_moved)
        # a dual stored at pixel i is read by the gradients of i and of its forward neighbours
        value_act[:] = moved
        for c in range(nc):
            if duals_moved[c]:
                lo = c * chunk
                hi = min(n, lo + chunk) - 1
                _mark(value_act, lo, hi + 1, chunk)
                _mark(value_act, lo + south - 1, hi + south + 1, chunk)
        nk = _listed(value_act, chunks)
        moved[:] = False
        barred[:] = False
        _active_values(grid, state, chunks, nk, chunk, moved, barred)
        # an extrapolation at pixel i is read by the duals stored at i and at its backward
        # neighbours
        dual_act[:] = duals_moved
        for c in range(nc):
            if barred[c]:
                lo = c * chunk
                hi = min(n, lo + chunk) - 1
                _mark(dual_act, lo - 1, hi, chunk)
                _mark(dual_act, lo - south - 1, hi - south + 1, chunk)
        done += 1
        if done % 25 == 0:
            if _most_moved(u1, u2, o1, o2) < tol:
                break
            gap = start_value - dual_value(offsets, g1, g2, free, s1, s2, p1, p2, r)
            if gap <= gap_tol:
                break
    return done, gap
