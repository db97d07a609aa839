"""Compiled (numba) kernels of the polish under area bounds and apart pairs.

Conventions as :mod:`solver.mrf.polish.icm_kernels` (the energy as one
:class:`solver.mrf.build.stencil.Potts`, 0-based labels). The state of the constraints travels
as one :class:`Areas`: ``w`` (each pixel's weight in the areas: 1, or the image pixels a coarse
pixel stands for), ``counts`` (each label's current area, kept up to date in place),
``lo``/``hi`` (the area bounds, with a tolerance added by the caller) and ``apart`` (``(K, K)``
bool). A move is feasible when it keeps every area within its bounds and puts no label beside
one it must not touch; the moves here are single pixels and pairs of pixels, taken one at a
time (not colour-parallel, since the areas are shared by the whole image), so every labelling
they pass through is feasible once the start is.
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from solver.backend.jit import jit
from solver.mrf.build.stencil import column_at, degree, link_at, neighbour_at, place, row_length
from solver.mrf.polish.icm_kernels import neighbour_weights


class Areas(NamedTuple):
    """One labelling's constraint state as the kernels take it (one argument; see the module
    docstring). Made by :func:`solver.mrf.polish.constrained.level_state`."""

    w: np.ndarray
    counts: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    apart: np.ndarray


@jit
def pixel_costs(potts, lab, i, cost):  # pragma: no cover
    """``cost[c]``: the energy pixel ``i`` contributes with label ``c``, its neighbours fixed."""
    indptr, indices, data, gw, geom, unary, two_lam = potts
    total = neighbour_weights(indptr, indices, data, gw, geom, lab, i, cost)
    for c in range(unary.shape[1]):
        cost[c] = unary[i, c] + two_lam * (total - cost[c])


@jit
def apart_ok(indptr, indices, gw, geom, lab, apart, i, c):  # pragma: no cover
    """Whether pixel ``i`` may take label ``c``: no neighbour carries a label apart from ``c``."""
    _, flags_t = place(gw, geom, i)
    for t in range(degree(indptr, gw, i)):
        j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
        if j >= 0 and apart[c, lab[j]]:
            return False
    return True


@jit
def _area_ok(w, counts, lo, hi, i, a, c):  # pragma: no cover
    """Whether moving pixel ``i`` from label ``a`` to ``c`` keeps both areas in bounds."""
    return counts[a] - w[i] >= lo[a] and counts[c] + w[i] <= hi[c]


@jit
def constrained_icm(potts, lab, movable, areas, max_sweeps, active, pending):  # pragma: no cover
    """ICM that takes a pixel's best label only where the move is feasible. The first sweep
    visits the pixels of ``active`` (movable ones; overwritten) in index order, with those after
    a pixel that moves beside it, later sweeps the neighbours of pixels that moved; ``lab`` and
    ``counts`` change in place. ``pending`` (written) marks the pixels a later call must visit
    even if no neighbour changes: those with a label cheaper than theirs that a constraint
    refused (an area may move), and those left unvisited when the sweeps ran out. A first sweep
    over every movable pixel and one over the pixels pending from the last call and the
    neighbours of those changed since take the same moves. Returns the moves."""
    indptr, indices, _, gw, geom, unary, _ = potts
    w, counts, lo, hi, apart = areas
    n, k = unary.shape
    cost = np.empty(k)
    nxt = np.zeros(n, np.bool_)
    pending[:] = False
    moves = 0
    moved = 0
    for sweep in range(max_sweeps):
        moved = 0
        for i in range(n):
            if not active[i]:
                continue
            a = lab[i]
            pixel_costs(potts, lab, i, cost)
            best, best_cost = a, cost[a]
            for c in range(k):
                if (c != a and cost[c] < best_cost and _area_ok(w, counts, lo, hi, i, a, c)
                        and apart_ok(indptr, indices, gw, geom, lab, apart, i, c)):
                    best, best_cost = c, cost[c]
            if best != a and best_cost < cost[a] - 1e-12 * max(1.0, abs(cost[a])):
                lab[i] = best
                counts[a] -= w[i]
                counts[best] += w[i]
                moved += 1
                _, flags_t = place(gw, geom, i)
                for t in range(row_length(indptr, gw, i)):  # (i itself too: it may move again)
                    j = column_at(indptr, indices, gw, geom, i, flags_t, t)
                    if j >= 0 and movable[j]:
                        nxt[j] = True
                        if sweep == 0 and j > i:  # (a full sweep would come to it)
                            active[j] = True
            cur = lab[i]
            floor = cost[cur] - 1e-12 * max(1.0, abs(cost[cur]))
            wants = False
            for c in range(k):
                if c != cur and cost[c] < floor:
                    wants = True
            pending[i] = wants
        moves += moved
        if moved == 0:
            break
        active, nxt = nxt, active
        nxt[:] = False
    if moved:  # the sweeps ran out: the pixels due next are left for the next call
        for i in range(n):
            if active[i]:
                pending[i] = True
    return moves


@jit
def _edge_weight(indptr, indices, data, gw, geom, i, j):  # pragma: no cover
    """The weight ``W_ij`` of the edge between pixels ``i`` and ``j``; 0 if they are not
    neighbours."""
    row_t, flags_t = place(gw, geom, i)
    for t in range(degree(indptr, gw, i)):
        u, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
        if u >= 0 and u == j:
            return -v
    return 0.0


@jit
def _on_boundary(indptr, indices, gw, geom, lab, i, c):  # pragma: no cover
    """Whether pixel ``i`` has a neighbour labelled ``c``."""
    _, flags_t = place(gw, geom, i)
    for t in range(degree(indptr, gw, i)):
        j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
        if j >= 0 and lab[j] == c:
            return True
    return False


@jit
def swap_rounds(potts, lab, movable, areas, max_rounds):  # pragma: no cover
    """Exchanges between two labels that leave both areas where they were: pixel ``i`` goes
    from ``a`` to ``c`` and a pixel ``j`` (not beside ``i``) from ``c`` to ``a``, when the two
    moves together lower the energy. With an area pinned (or at a bound) no single pixel can
    move, but a boundary can still shift this way. Each round pairs, for every two labels that
    meet, the cheapest moves each way on their common boundary, skipping pixels near one that
    already moved this round (their costs are stale); rounds repeat until none helps.
    Only the movable pixels on a boundary at the start, and those beside a pixel that moved
    since, are looked at: no other pixel can be on a boundary. Returns the exchanges made."""
    indptr, indices, data, gw, geom, unary, two_lam = potts
    w, counts, lo, hi, apart = areas
    n, k = unary.shape
    cost = np.empty(k)
    dirty = np.zeros(n, np.bool_)
    listed = np.zeros(n, np.bool_)
    cand = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if movable[i]:
            _, flags_t = place(gw, geom, i)
            for t in range(degree(indptr, gw, i)):
                j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
                if j >= 0 and lab[j] != lab[i]:
                    listed[i] = True
                    cand[m] = i
                    m += 1
                    break
    total = 0
    for _ in range(max_rounds):
        made = 0
        dirty[:] = False
        for a in range(k):
            for c in range(a + 1, k):
                if apart[a, c]:
                    continue
                # candidate moves a -> c and c -> a on the boundary between the two labels
                fwd = []
                bwd = []
                for x in range(m):  # (the lists are sorted below: their order is moot)
                    i = cand[x]
                    li = lab[i]
                    if li != a and li != c:
                        continue
                    other = c if li == a else a
                    if not _on_boundary(indptr, indices, gw, geom, lab, i, other):
                        continue
                    if not apart_ok(indptr, indices, gw, geom, lab, apart, i, other):
                        continue
                    pixel_costs(potts, lab, i, cost)
                    d = cost[other] - cost[li]
                    if li == a:
                        fwd.append((d, i))
                    else:
                        bwd.append((d, i))
                if len(fwd) == 0 or len(bwd) == 0:
                    continue
                fwd.sort()
                bwd.sort()
                p, q = 0, 0
                while p < len(fwd) and q < len(bwd):
                    d1, i = fwd[p]
                    d2, j = bwd[q]
                    if d1 + d2 >= -1e-9 * max(1.0, abs(d1) + abs(d2)):
                        break
                    if dirty[i]:
                        p += 1
                        continue
                    if dirty[j]:
                        q += 1
                        continue
                    if (counts[a] - w[i] + w[j] < lo[a] or counts[a] - w[i] + w[j] > hi[a]
                            or counts[c] + w[i] - w[j] < lo[c] or counts[c] + w[i] - w[j] > hi[c]):
                        # (unequal weights on a coarse level) try the next pixel of the
                        # heavier side
                        if w[i] > w[j]:
                            p += 1
                        else:
                            q += 1
                        continue
                    # d1 + d2 is the exchange's change unless i and j are neighbours: their
                    # edge stays cut, which each move alone counted as mended. Then i's partner
                    # is the next pixel of the list whose exchange with it does lower the
                    # energy (none past where d1 + d2 stops being negative)
                    r = q
                    while r < len(bwd):
                        d2, j = bwd[r]
                        if d1 + d2 >= -1e-9 * max(1.0, abs(d1) + abs(d2)):
                            r = len(bwd)
                            break
                        if not dirty[j] and (lo[a] <= counts[a] - w[i] + w[j] <= hi[a]
                                             and lo[c] <= counts[c] + w[i] - w[j] <= hi[c]):
                            d = d1 + d2 + 2.0 * two_lam * _edge_weight(
                                indptr, indices, data, gw, geom, i, j)
                            if d < -1e-9 * max(1.0, abs(d1) + abs(d2)):
                                break
                        r += 1
                    if r == len(bwd):
                        p += 1
                        continue
                    if r == q:
                        q += 1
                    lab[i] = c
                    lab[j] = a
                    counts[a] += w[j] - w[i]
                    counts[c] += w[i] - w[j]
                    made += 1
                    # (the diagonal entries added nothing: pix is dirty and listed already, and
                    # so is u before its own row)
                    for pix in (i, j):
                        dirty[pix] = True
                        _, flags_t = place(gw, geom, pix)
                        for t in range(degree(indptr, gw, pix)):
                            u = neighbour_at(indptr, indices, gw, geom, pix, flags_t, t)
                            if u < 0:
                                continue
                            dirty[u] = True
                            if movable[u] and not listed[u]:  # may be on a boundary now
                                listed[u] = True
                                cand[m] = u
                                m += 1
                            _, flags_s = place(gw, geom, u)
                            for s in range(degree(indptr, gw, u)):
                                v = neighbour_at(indptr, indices, gw, geom, u, flags_s, s)
                                if v >= 0:
                                    dirty[v] = True
                    p += 1
        total += made
        if made == 0:
            break
    return total


@jit
def repair_apart(potts, lab, movable, areas, max_passes):  # pragma: no cover
    """Relabel movable pixels that touch a label they must not until none does: each takes its
    cheapest label that conflicts with no neighbour (and keeps the areas in bounds, where one
    does). Returns the number of pixels still in conflict (0 when repaired)."""
    indptr, indices, _, gw, geom, unary, _ = potts
    w, counts, lo, hi, apart = areas
    n, k = unary.shape
    cost = np.empty(k)
    left = 0
    for _ in range(max_passes):
        left = 0
        changed = 0
        for i in range(n):
            a = lab[i]
            if apart_ok(indptr, indices, gw, geom, lab, apart, i, a):
                continue
            left += 1
            if not movable[i]:
                continue
            pixel_costs(potts, lab, i, cost)
            best, best_cost, spare = -1, np.inf, -1
            for c in range(k):
                if c == a or not apart_ok(indptr, indices, gw, geom, lab, apart, i, c):
                    continue
                if _area_ok(w, counts, lo, hi, i, a, c):
                    if cost[c] < best_cost:
                        best, best_cost = c, cost[c]
                elif spare < 0 or cost[c] < cost[spare]:
                    spare = c
            if best < 0:
                best = spare
            if best < 0:
                continue
            lab[i] = best
            counts[a] -= w[i]
            counts[best] += w[i]
            changed += 1
        if left == 0 or changed == 0:
            break
    return left


@jit
def _best_move(potts, lab, areas, i, shrink, target, cost):  # pragma: no cover
    """The cheapest feasible move of pixel ``i`` for :func:`repair_areas`: off label ``target``
    to any label with room (``shrink``), or onto ``target`` from a label with area to spare.
    Returns ``(energy change, new label)``, ``(inf, -1)`` if there is none."""
    indptr, indices, _, gw, geom, unary, _ = potts
    w, counts, lo, hi, apart = areas
    k = unary.shape[1]
    a = lab[i]
    pixel_costs(potts, lab, i, cost)
    if shrink:
        if a != target:
            return np.inf, -1
        best_d, best_c = np.inf, -1
        for c in range(k):
            if (c != a and counts[c] + w[i] <= hi[c] and cost[c] - cost[a] < best_d
                    and apart_ok(indptr, indices, gw, geom, lab, apart, i, c)):
                best_d, best_c = cost[c] - cost[a], c
        return best_d, best_c
    if a == target or counts[a] - w[i] < lo[a] or counts[target] + w[i] > hi[target]:
        return np.inf, -1
    if not apart_ok(indptr, indices, gw, geom, lab, apart, i, target):
        return np.inf, -1
    return cost[target] - cost[a], target


@jit
def repair_areas(potts, lab, movable, areas, max_passes):  # pragma: no cover
    """Bring every area within its bounds by single-pixel moves, the cheapest first: a label
    above its upper bound gives pixels to labels with room, one below its lower bound takes
    pixels from labels with area to spare. Moves keep apart pairs apart. Candidates start on
    the label's boundary (all its pixels, or all others, when it has none) and a priority queue
    follows the boundary as it moves. Returns the total amount (in area) still outside the
    bounds (0 when repaired)."""
    indptr, indices, _, gw, geom, unary, _ = potts
    w, counts, lo, hi, _ = areas
    n, k = unary.shape
    cost = np.empty(k)
    for _ in range(max_passes):
        done = True
        for target in range(k):
            for shrink in (True, False):
                if shrink and counts[target] <= hi[target]:
                    continue
                if not shrink and counts[target] >= lo[target]:
                    continue
                done = False
                heap = [(0.0, np.int64(0))]
                heap.pop()
                edge = np.zeros(n, np.bool_)
                for i in range(n):
                    if movable[i] and ((lab[i] == target) == shrink):
                        edge[i] = _on_boundary_other(indptr, indices, gw, geom, lab, i, target,
                                                     shrink)
                if not edge.any():  # one label everywhere: any pixel may start
                    for i in range(n):
                        edge[i] = movable[i] and ((lab[i] == target) == shrink)
                for i in range(n):
                    if edge[i]:
                        d, c = _best_move(potts, lab, areas, i, shrink, target, cost)
                        if c >= 0:
                            heapq.heappush(heap, (d, np.int64(i)))
                while heap and (counts[target] > hi[target] if shrink
                                else counts[target] < lo[target]):
                    d, i = heapq.heappop(heap)
                    now, c = _best_move(potts, lab, areas, i, shrink, target, cost)
                    if c < 0:
                        continue
                    if now > d + 1e-12 * max(1.0, abs(d)):  # stale: push it back
                        heapq.heappush(heap, (now, i))
                        continue
                    a = lab[i]
                    lab[i] = c
                    counts[a] -= w[i]
                    counts[c] += w[i]
                    _, flags_t = place(gw, geom, i)
                    for t in range(degree(indptr, gw, i)):
                        j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
                        if j >= 0 and movable[j] and ((lab[j] == target) == shrink):
                            dj, cj = _best_move(potts, lab, areas, j, shrink, target, cost)
                            if cj >= 0:
                                heapq.heappush(heap, (dj, np.int64(j)))
        if done:
            break
    out = 0.0
    for c in range(k):
        out += max(0.0, counts[c] - hi[c]) + max(0.0, lo[c] - counts[c])
    return out


@jit
def _on_boundary_other(indptr, indices, gw, geom, lab, i, target, shrink):  # pragma: no cover
    """Whether pixel ``i`` lies on the boundary of label ``target``: a pixel of it beside
    another label (``shrink``), or a pixel of another label beside it."""
    _, flags_t = place(gw, geom, i)
    for t in range(degree(indptr, gw, i)):
        j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
        if j >= 0 and ((lab[j] == target) != shrink):
            return True
    return False


@jit
def level_set_seeds(x, lab, movable, t):  # pragma: no cover
    """The movable pixels, in increasing order, where some label other than their own has a
    weight above ``t`` in ``x``: every pixel a run of :func:`fuse_level_set` (or
    :func:`solver.mrf.polish.margin_kernels.fuse_with_margin`) calls on ``x`` with thresholds
    ``>= t`` can start a region from, as long as only those calls change ``lab``: a pixel
    changes only as part of such a region, so it lies in the set already."""
    n, k = x.shape
    out = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if not movable[i]:
            continue
        for c in range(k):
            if c != lab[i] and x[i, c] > t:
                out[m] = i
                m += 1
                break
    return out[:m].copy()


@jit
def fuse_level_set(potts, lab, movable, areas, x, c, t, seeds, comp, queue):  # pragma: no cover
    """Fusion with the level set "label ``c`` wherever ``x[i, c] > t``" under the constraints.

    The movable pixels where that proposal differs from ``lab`` form connected regions (in the
    graph); no edge joins two of them, so each region's energy change is exact and independent
    of the others. A region is taken when it lowers the energy, puts no label ``c`` beside one
    apart from it, and keeps the areas within their bounds as the regions are taken, the best
    first. Regions start only from ``seeds`` (increasing pixel indices that hold every pixel
    where the proposal differs from ``lab``: all pixels, or :func:`level_set_seeds`), so a call
    costs the seeds and the regions, not a pass over the image. ``comp`` (``(n,)`` int64, all
    -1 on entry and left so) and ``queue`` (``(n,)`` int64) are scratch space. Changes ``lab``
    and ``counts`` in place; returns the regions taken."""
    indptr, indices, data, gw, geom, unary, two_lam = potts
    w, counts, lo, hi, apart = areas
    n, k = unary.shape
    starts = [np.int64(0)]
    starts.pop()
    gains = [0.0]
    gains.pop()
    end = 0
    for s in seeds:
        if comp[s] >= 0 or not movable[s] or lab[s] == c or not x[s, c] > t:
            continue
        r = len(starts)
        starts.append(np.int64(end))
        comp[s] = r
        queue[end] = s
        head = end
        end += 1
        gain = 0.0
        bad = False
        while head < end:
            i = queue[head]
            head += 1
            li = lab[i]
            gain += unary[i, c] - unary[i, li]
            row_e, flags_e = place(gw, geom, i)
            for e in range(degree(indptr, gw, i)):
                j, v = link_at(indptr, indices, data, gw, geom, i, row_e, flags_e, e)
                if j < 0:
                    continue
                cut = -two_lam * v
                lj = lab[j]
                if movable[j] and lj != c and x[j, c] > t:  # j lies in this region
                    if comp[j] < 0:
                        comp[j] = r
                        queue[end] = j
                        end += 1
                    if j > i and li != lj:  # an inner edge, counted once: it stops being cut
                        gain -= cut
                else:  # a border edge: j keeps its label
                    if apart[c, lj]:
                        bad = True
                    gain += cut * ((c != lj) - (li != lj))
        gains.append(np.inf if bad else gain)
    starts.append(np.int64(end))
    for m in range(end):
        comp[queue[m]] = -1
    nr = len(gains)
    if nr == 0:
        return 0
    g = np.empty(nr)
    scale = 1.0
    for r in range(nr):
        g[r] = gains[r]
        if np.isfinite(g[r]):
            scale = max(scale, abs(g[r]))
    order = np.argsort(g, kind="mergesort")
    net = np.zeros(k)
    taken = 0
    for q in range(nr):
        r = order[q]
        if not g[r] < -1e-9 * scale:
            break
        net[:] = 0.0
        for m in range(starts[r], starts[r + 1]):
            i = queue[m]
            net[lab[i]] -= w[i]
            net[c] += w[i]
        ok = True
        for b in range(k):
            if counts[b] + net[b] < lo[b] or counts[b] + net[b] > hi[b]:
                ok = False
                break
        if not ok:
            continue
        for b in range(k):
            counts[b] += net[b]
        for m in range(starts[r], starts[r + 1]):
            lab[queue[m]] = c
        taken += 1
    return taken


@jit
def region_sums(potts, lab, comp, w, movable, nc):  # pragma: no cover
    """Per region ``r`` of ``comp`` (1..nc; 0 is outside every region), in one pass over the
    graph: its weight, whether it holds a pixel that may not move, its unary cost for each
    label, and the cut weight of its edges to each outside label with whether it touches
    that label. Returns ``(size, pinned, unary, border, touch)``."""
    indptr, indices, data, gw, geom, unary, two_lam = potts
    n, k = unary.shape
    size = np.zeros(nc + 1)
    pinned = np.zeros(nc + 1, np.bool_)
    usum = np.zeros((nc + 1, k))
    border = np.zeros((nc + 1, k))
    touch = np.zeros((nc + 1, k), np.bool_)
    for i in range(n):
        r = comp[i]
        if r == 0:
            continue
        size[r] += w[i]
        if not movable[i]:
            pinned[r] = True
        for c in range(k):
            usum[r, c] += unary[i, c]
        row_t, flags_t = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):
            j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
            if j >= 0 and comp[j] == 0:
                border[r, lab[j]] -= two_lam * v
                touch[r, lab[j]] = True
    return size, pinned, usum, border, touch
