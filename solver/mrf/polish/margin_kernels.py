"""Compiled region moves with a margin, for the polish under apart pairs.

A whole region of one label often cannot move to a better label because a few of its pixels
touch a label apart from the new one (a hole's region touching a hard "inner" stroke cannot
become "outside"). :func:`margin_moves` moves such a region anyway and gives those few pixels
the cheapest label that may touch both sides (the margin a nesting asks for), taking the
compound move only when it is feasible and lowers the energy. Conventions (the graph arrays
of :mod:`solver.mrf.build.stencil` among them) as :mod:`solver.mrf.polish.constrained_kernels`.
"""

from __future__ import annotations

import numpy as np

from solver.backend.jit import jit
from solver.mrf.build.stencil import degree, link_at, neighbour_at, place
from solver.mrf.polish.constrained_kernels import apart_ok, pixel_costs


@jit
def _region(indptr, indices, gw, geom, lab, movable, seen, queue, s, cap):  # pragma: no cover
    """Grow the 8-connected region of movable pixels of ``lab[s]`` from ``s`` into ``queue``;
    returns its size, or -1 when it exceeds ``cap`` (the pixels are still marked seen)."""
    a = lab[s]
    seen[s] = True
    queue[0] = s
    head, end = 0, 1
    while head < end:
        i = queue[head]
        head += 1
        _, flags_t = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):  # (i itself, seen already, added nothing)
            j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
            if j >= 0 and not seen[j] and movable[j] and lab[j] == a:
                seen[j] = True
                queue[end] = j
                end += 1
    return end if end <= cap else -1


@jit
def _propose(potts, lab, prop, apart, queue, size, c):  # pragma: no cover
    """Set ``prop`` over the region to ``c``, its pixels beside a label apart from ``c`` (outside
    the region) to the cheapest label that may touch ``c`` and that neighbour; False when some
    pixel has no such label."""
    indptr, indices, _, gw, geom, unary, _ = potts
    for m in range(size):
        prop[queue[m]] = c
    return _margin_fix(indptr, indices, gw, geom, unary, prop, apart, queue, size, c)


@jit
def _change(potts, lab, prop, apart, mark, stamp, queue, size):  # pragma: no cover
    """Energy change of ``lab`` -> ``prop`` over the region (pixels with ``mark == stamp``), or
    inf when ``prop`` puts apart labels side by side: unaries, plus every edge with an end in
    the region, counted once."""
    indptr, indices, data, gw, geom, unary, two_lam = potts
    delta = 0.0
    for m in range(size):
        i = queue[m]
        li, pi = lab[i], prop[i]
        delta += unary[i, pi] - unary[i, li]
        row_t, flags_t = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):
            j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
            if j < 0 or (mark[j] == stamp and j < i):
                continue
            pj = prop[j]
            if apart[pi, pj]:
                return np.inf
            delta -= two_lam * v * ((pi != pj) - (li != lab[j]))
    return delta


@jit
def _settle_ring(potts, prop, apart, queue, start, end, cost):  # pragma: no cover
    """Two sweeps over ``queue[start:end]`` (the pixels around a moved region), each taking
    its cheapest label under ``prop`` that touches no label apart from it."""
    indptr, indices, _, gw, geom, unary, _ = potts
    k = unary.shape[1]
    for _ in range(2):
        for m in range(start, end):
            i = queue[m]
            pixel_costs(potts, prop, i, cost)
            best, best_cost = prop[i], cost[prop[i]]
            for c in range(k):
                if cost[c] < best_cost and apart_ok(indptr, indices, gw, geom, prop, apart, i,
                                                    c):
                    best, best_cost = c, cost[c]
            prop[i] = best


@jit
def _margin_bound(potts, lab, mark, stamp, queue, size, end):  # pragma: no cover
    """A lower bound on the energy change of any margin move of the region ``queue[:size]``
    (all one label ``a``; it and its ring ``queue[size:end]`` have ``mark == stamp``): a
    region pixel with all its neighbours in the region takes the proposed label (not ``a``),
    any other pixel of the region or the ring its cheapest label, and every cut edge at them
    goes uncut (edges between two of them counted from both ends: still a bound). At least 0:
    no margin move of the region lowers the energy."""
    indptr, indices, data, gw, geom, unary, two_lam = potts
    k = unary.shape[1]
    a = lab[queue[0]]
    bound = 0.0
    for m in range(end):
        i = queue[m]
        li = lab[i]
        interior = m < size
        row_t, flags_t = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):
            j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
            if j < 0:
                continue
            if interior and (mark[j] != stamp or lab[j] != a):
                interior = False
            w = -v
            if (lab[j] != li) == (w > 0.0):  # a cut edge that may go uncut, or the reverse
                bound -= two_lam * abs(w)
        low = np.inf
        for c in range(k):
            if unary[i, c] < low and not (interior and c == a):
                low = unary[i, c]
        bound += low - unary[i, li]
    return bound


@jit
def margin_moves(potts, lab, movable, areas, cap):  # pragma: no cover
    """Move whole regions with a margin (see the module docstring), each region of at most
    ``cap`` pixels to the best of its labels, region by region in pixel order. The movable
    pixels around the region then settle (two sweeps of their cheapest feasible label: a
    margin the old region needed may go), and the compound move is taken at once when it is
    feasible and lowers the energy. A region whose :func:`_margin_bound` is at least 0 is not
    tried. Changes ``lab`` and ``counts`` in place; returns the moves taken."""
    indptr, indices, _, gw, geom, unary, _ = potts
    w, counts, lo, hi, apart = areas
    n, k = unary.shape
    seen = np.zeros(n, np.bool_)
    mark = np.full(n, -1, np.int64)
    queue = np.empty(n, np.int64)
    prop = lab.copy()
    best = np.empty(n, np.int64)
    net = np.zeros(k)
    cost = np.empty(k)
    moves = 0
    for s in range(n):
        if seen[s] or not movable[s]:
            continue
        size = _region(indptr, indices, gw, geom, lab, movable, seen, queue, s, cap)
        if size < 0:
            continue
        a = lab[s]
        for m in range(size):
            mark[queue[m]] = s
        end = size  # the ring: movable pixels outside the region beside it
        for m in range(size):
            i = queue[m]
            _, flags_t = place(gw, geom, i)
            for t in range(degree(indptr, gw, i)):  # (i itself, marked already, added nothing)
                j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
                if j >= 0 and mark[j] != s and movable[j]:
                    mark[j] = s
                    queue[end] = j
                    end += 1
        if _margin_bound(potts, lab, mark, s, queue, size, end) >= 0.0:
            continue  # (no move of it can be taken: skipping it is exact)
        best_delta = 0.0
        scale = 1.0
        for c in range(k):
            if c == a:
                continue
            if _propose(potts, lab, prop, apart, queue, size, c):
                _settle_ring(potts, prop, apart, queue, size, end, cost)
                net[:] = 0.0
                for m in range(end):
                    i = queue[m]
                    net[lab[i]] -= w[i]
                    net[prop[i]] += w[i]
                ok = True
                for b in range(k):
                    if counts[b] + net[b] < lo[b] or counts[b] + net[b] > hi[b]:
                        ok = False
                if ok:
                    d = _change(potts, lab, prop, apart, mark, s, queue, end)
                    scale = max(scale, abs(d)) if np.isfinite(d) else scale
                    if d < best_delta:
                        best_delta = d
                        for m in range(end):
                            best[m] = prop[queue[m]]
            for m in range(end):  # back to the labelling as it stands
                prop[queue[m]] = lab[queue[m]]
        if best_delta < -1e-9 * scale:
            for m in range(end):
                i = queue[m]
                counts[lab[i]] -= w[i]
                counts[best[m]] += w[i]
                lab[i] = best[m]
                prop[i] = best[m]
            moves += 1
    return moves


@jit
def _margin_fix(indptr, indices, gw, geom, unary, prop, apart, queue, size,
                avoid):  # pragma: no cover
    """Give each pixel of the region whose proposed label touches one apart from it the
    cheapest label that touches none (and, where ``avoid >= 0``, is not apart from ``avoid``);
    False when some pixel has none. (A label is never apart from itself.)"""
    k = unary.shape[1]
    for m in range(size):
        i = queue[m]
        if apart_ok(indptr, indices, gw, geom, prop, apart, i, prop[i]):
            continue
        best, best_cost = -1, np.inf
        for b in range(k):
            if (avoid >= 0 and apart[b, avoid]) or unary[i, b] >= best_cost:
                continue
            if apart_ok(indptr, indices, gw, geom, prop, apart, i, b):
                best, best_cost = b, unary[i, b]
        if best < 0:
            return False
        prop[i] = best
    return True


@jit
def fuse_with_margin(potts, lab, movable, areas, x, c, t, seeds, scratch, base):  # pragma: no cover
    """Fusion with the level set "label ``c`` wherever ``x[i, c] > t``", region by region,
    with a margin: the movable pixels where it differs from ``lab`` form connected regions;
    each takes label ``c``, its pixels that then touch a label apart from theirs take the
    cheapest label that touches none, and the region is kept when that is feasible and lowers
    the energy. Changes ``lab`` and ``counts`` in place; returns the regions taken.

    Regions start only from ``seeds`` (increasing pixel indices holding every pixel where the
    proposal differs from ``lab``: all pixels, or
    :func:`solver.mrf.polish.constrained_kernels.level_set_seeds`; a kept region changes only
    its own pixels, which were seeds, so the list stays complete).

    Scratch space, so that a call costs no allocation: ``prop`` equal to ``lab`` (kept so),
    ``mark`` (int64, values below ``base`` ignored: the caller raises ``base`` by ``n`` each
    call) and ``queue`` (int64), all of length ``n``."""
    prop, mark, queue = scratch
    indptr, indices, _, gw, geom, unary, _ = potts
    w, counts, lo, hi, apart = areas
    n, k = unary.shape
    net = np.zeros(k)
    taken = 0
    for s in seeds:
        if mark[s] >= base or not movable[s] or lab[s] == c or not x[s, c] > t:
            continue
        stamp = base + s
        mark[s] = stamp
        queue[0] = s
        head, end = 0, 1
        while head < end:
            i = queue[head]
            head += 1
            _, flags_e = place(gw, geom, i)
            for e in range(degree(indptr, gw, i)):  # (i itself, marked already, added nothing)
                j = neighbour_at(indptr, indices, gw, geom, i, flags_e, e)
                if j >= 0 and mark[j] < base and movable[j] and lab[j] != c and x[j, c] > t:
                    mark[j] = stamp
                    queue[end] = j
                    end += 1
        for m in range(end):
            prop[queue[m]] = c
        keep = _margin_fix(indptr, indices, gw, geom, unary, prop, apart, queue, end, -1)
        if keep:
            net[:] = 0.0
            for m in range(end):
                i = queue[m]
                net[lab[i]] -= w[i]
                net[prop[i]] += w[i]
            for b in range(k):
                if counts[b] + net[b] < lo[b] or counts[b] + net[b] > hi[b]:
                    keep = False
        if keep:
            d = _change(potts, lab, prop, apart, mark, stamp, queue, end)
            keep = d < -1e-9 * max(1.0, abs(d)) if np.isfinite(d) else False
        for m in range(end):
            i = queue[m]
            if keep:
                counts[lab[i]] -= w[i]
                counts[prop[i]] += w[i]
                lab[i] = prop[i]
            else:
                prop[i] = lab[i]
        taken += keep
    return taken
