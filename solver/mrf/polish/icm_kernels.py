"""Compiled (numba) kernels for the pixel moves of the polish (ICM, pair moves), on the graph's
Laplacian; the region moves are in :mod:`solver.mrf.polish.region_kernels`.

All kernels take the Laplacian ``L = D - W`` as the five graph arrays of
:mod:`solver.mrf.build.stencil` (``indptr, indices, data, gw, geom``, from
:func:`graph_arrays`: on a grid its weights, else its CSR arrays; the diagonal entry of a row is
skipped) and 0-based labels. With the Potts
energy ``E = 2 lam sum_{edges} W_ij [l_i != l_j] + sum_i d_{i, l_i}``, giving pixel ``i`` label
``c`` costs ``d_ic + 2 lam sum_j W_ij [l_j != c]`` given its neighbours, which is what every move
evaluates.
The energy changes are exact; a move is taken only when it lowers the energy by more than a
relative ``1e-12`` (ICM) or ``1e-9`` (region moves), so rounding cannot make the polish cycle.

The work of each kernel is proportional to the pixels it visits, with no Python per pixel.
"""

from __future__ import annotations

import numba
import numpy as np

from solver.backend.jit import jit, parallel_jit
from solver.mrf.build.stencil import (
    best_label_grid,
    choose_label,
    column_at,
    degree,
    link_at,
    neighbour_at,
    place,
    row_length,
)


def zero_based(labels: np.ndarray) -> np.ndarray:
    """``(n,)`` int32 0-based copy of 1-based labels, as the kernels take them (one pass).

    int32, not int64: a large photo's polish holds several such arrays at its memory peak, and
    the kernels give the same results with either (docs/decisions.md, Memory)."""
    return np.subtract(np.asarray(labels).reshape(-1), 1, dtype=np.int32, casting="unsafe")


def one_based(lab: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``shape`` int32 1-based labels from 0-based ones (one pass)."""
    return np.add(lab, 1, dtype=np.int32).reshape(shape)


@jit
def around_changes(indptr, indices, gw, geom, lab, before, movable):  # pragma: no cover
    """Movable pixels whose label differs between ``lab`` and ``before``, and their neighbours:
    the only pixels whose best single-pixel move can differ between the two labellings."""
    out = np.zeros(lab.size, np.bool_)
    for i in range(lab.size):
        if lab[i] != before[i]:
            out[i] = movable[i]
            _, flags_t = place(gw, geom, i)
            for t in range(degree(indptr, gw, i)):
                j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
                if j >= 0 and movable[j]:
                    out[j] = True
    return out


@jit
def neighbour_weights(indptr, indices, data, gw, geom, lab, i, agree):  # pragma: no cover
    """The weight of pixel ``i``'s edges (returned) and, in ``agree[c]`` (``(K,)``, written),
    the weight of those to neighbours labelled ``c``: with them, label ``c`` costs
    ``unary[i, c] + two_lam * (total - agree[c])``."""
    total = 0.0
    for c in range(agree.size):
        agree[c] = 0.0
    row_t, flags_t = place(gw, geom, i)
    for t in range(degree(indptr, gw, i)):
        j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
        if j >= 0:
            total -= v
            agree[lab[j]] -= v
    return total


@jit
def best_label(indptr, indices, data, gw, geom, unary, two_lam, lab, i, agree):  # pragma: no cover
    """Pixel ``i``'s cheapest label given its neighbours' labels, keeping its own unless another
    is cheaper by more than a relative ``1e-12``. ``agree`` is ``(K,)`` scratch."""
    if gw.shape[0]:
        return best_label_grid(gw, geom, unary, two_lam, lab, i, agree)
    total = neighbour_weights(indptr, indices, data, gw, geom, lab, i, agree)
    return choose_label(unary, two_lam, i, lab[i], total, agree)


#: Pixels a thread of :func:`icm_sweeps` evaluates at a time (one scratch row per such block).
ICM_CHUNK = 4096
#: Chunks a colour class's list needs before :func:`icm_sweeps` evaluates it on the threads:
#: each parallel pass wakes them (and, on OpenMP, leaves them spinning a while), which on a
#: loaded machine costs more than a short list's evaluations.
ICM_PARALLEL_CHUNKS = 16


@jit
def _evaluate(potts, lab, todo, choice, start, stop):  # pragma: no cover
    """``choice[q]``: the best label of pixel ``todo[q]`` for ``q`` in ``start:stop``."""
    indptr, indices, data, gw, geom, unary, two_lam = potts
    agree = np.zeros(unary.shape[1])
    for q in range(start, stop):
        choice[q] = best_label(indptr, indices, data, gw, geom, unary, two_lam, lab, todo[q],
                               agree)


@parallel_jit
def icm_sweeps(potts, lab, movable, active, width, max_sweeps, chunk):  # pragma: no cover
    """Colour-parallel ICM on a grid: sweeps over the four classes ``(row % 2, col % 2)``.

    No two pixels of one class are 8-neighbours, so visiting a class in any order is the same as
    moving all its pixels at once. Only active pixels are evaluated: those of ``active`` at first
    (changed in place), then the neighbours of pixels that moved. Each class keeps a list of its
    active pixels, so a sweep costs in proportion to them, not to the image (in the late,
    sparse sweeps a scan over every pixel would cost as much as the evaluations). A class's
    pixels are evaluated on numba's threads, ``chunk`` at a time, where they make at least
    :data:`ICM_PARALLEL_CHUNKS` chunks (they read only other classes' labels, which do not
    change meanwhile); the moves and the lists are then made in one pass, so the result does
    not depend on the threads. The neighbours come from the graph arrays
    (:mod:`solver.mrf.build.stencil`). Changes ``lab`` in place; returns the moves. Call it
    through :func:`solver.backend.threads.threaded`. ``potts`` is a
    :class:`solver.mrf.build.stencil.Potts`.
    """
    indptr, indices, _, gw, geom, unary, _ = potts
    n = unary.shape[0]
    height = n // width
    # class c's list lives in todo[first[c]:first[c] + count[c]] (at most its pixels, each once)
    first = np.zeros(5, np.int64)
    for c in range(4):
        first[c + 1] = first[c] + ((height - (c >> 1) + 1) // 2) * ((width - (c & 1) + 1) // 2)
    todo = np.empty(n, np.int64)
    choice = np.empty(n, np.int8)  # a listed pixel's best label, at its place in todo (K <= 127)
    count = np.zeros(4, np.int64)
    for c in range(4):
        for row in range(c >> 1, height, 2):
            for col in range(c & 1, width, 2):
                i = row * width + col
                if active[i]:
                    todo[first[c] + count[c]] = i
                    count[c] += 1
    moves = 0
    for _ in range(max_sweeps):
        moved = 0
        for c in range(4):
            lo, m = first[c], count[c]
            count[c] = 0  # (a move queues other classes only: no pixel of c meets another)
            blocks = (m + chunk - 1) // chunk
            if blocks >= ICM_PARALLEL_CHUNKS:
                for b in numba.prange(blocks):
                    _evaluate(potts, lab, todo, choice, lo + b * chunk,
                              lo + min(m, (b + 1) * chunk))
            else:  # (a short list: waking the threads costs more than they save)
                _evaluate(potts, lab, todo, choice, lo, lo + m)
            for q in range(lo, lo + m):
                i = todo[q]
                active[i] = False
                if choice[q] == lab[i]:
                    continue
                lab[i] = choice[q]
                moved += 1
                # queue each movable neighbour not queued yet on its class's list (written out
                # here: through a helper per neighbour, numba makes such loops several times
                # slower)
                _, flags_t = place(gw, geom, i)
                for t in range(degree(indptr, gw, i)):
                    j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
                    if j >= 0 and movable[j] and not active[j]:
                        active[j] = True
                        cj = ((j // width) & 1) * 2 + ((j % width) & 1)
                        todo[first[cj] + count[cj]] = j
                        count[cj] += 1
        moves += moved
        if moved == 0:
            break
    return moves


@jit
def _count_other(indptr, indices, gw, geom, lab, i):  # pragma: no cover
    """How many of pixel ``i``'s neighbours have another label (> 0: ``i`` is on a boundary)."""
    count = 0
    _, flags_t = place(gw, geom, i)
    for t in range(degree(indptr, gw, i)):
        j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
        if j >= 0 and lab[j] != lab[i]:
            count += 1
    return count


@jit
def _add_border_costs(indptr, indices, data, gw, geom, two_lam, lab, i, skip,
                      cost):  # pragma: no cover
    """Add to ``cost[c]`` what pixel ``i``'s edges (but the one to ``skip``) cost if it takes
    label ``c``, given its neighbours' current labels."""
    row_t, flags_t = place(gw, geom, i)
    for t in range(degree(indptr, gw, i)):
        m, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
        if m >= 0 and m != skip:
            for c in range(cost.size):
                if lab[m] != c:
                    cost[c] -= two_lam * v


@jit
def _mark_two_steps(indptr, indices, gw, geom, movable, i, mark):  # pragma: no cover
    """Mark the movable pixels within two steps of ``i`` (``i`` and its neighbours too): the
    pairs whose price a move of ``i`` changes (a pair's price reads the neighbours of both its
    pixels)."""
    _, flags_t = place(gw, geom, i)
    for t in range(row_length(indptr, gw, i)):
        m = column_at(indptr, indices, gw, geom, i, flags_t, t)
        if m < 0:
            continue
        _, flags_u = place(gw, geom, m)
        for u in range(row_length(indptr, gw, m)):
            q = column_at(indptr, indices, gw, geom, m, flags_u, u)
            if q >= 0 and movable[q]:
                mark[q] = True


@jit
def pair_moves(potts, lab, movable, max_sweeps):  # pragma: no cover
    """Move two neighbouring pixels of one label together to another label when that lowers the
    energy (a move single-pixel ICM cannot make when each pixel alone would raise it).

    Only pairs with a pixel on a label boundary are tried. The edge between the two keeps its
    state; every other edge of either pixel is priced exactly against its neighbour's current
    label. The first sweep visits every movable pixel near a boundary, later ones only those
    within two steps of a pair that moved. Sweeps until nothing moves or ``max_sweeps``; changes
    ``lab`` in place and returns the number of pairs moved.

    Each pixel's count of neighbours with another label is kept up to date, so "on a boundary"
    is one read; a pixel with no boundary within one step is in no pair worth trying and is not
    visited (the same pairs as testing every pixel, in the same order). ``potts`` is a
    :class:`solver.mrf.build.stencil.Potts`.
    """
    indptr, indices, data, gw, geom, unary, two_lam = potts
    n, k = unary.shape
    cost = np.zeros(k)
    other = np.empty(n, np.int32)
    for i in range(n):
        other[i] = _count_other(indptr, indices, gw, geom, lab, i)
    active = np.zeros(n, np.bool_)
    for i in range(n):
        if other[i] > 0:
            _, flags_t = place(gw, geom, i)
            for t in range(row_length(indptr, gw, i)):  # (i itself too)
                j = column_at(indptr, indices, gw, geom, i, flags_t, t)
                if j >= 0 and movable[j]:
                    active[j] = True
    marked = np.zeros(n, np.bool_)
    moves = 0
    for sweep in range(max_sweeps):
        moved = 0
        for i in range(n):
            if not active[i]:
                continue
            a = lab[i]
            edge_i = other[i] > 0
            _, flags_q = place(gw, geom, i)
            for q in range(degree(indptr, gw, i)):
                j = neighbour_at(indptr, indices, gw, geom, i, flags_q, q)
                if j <= i or lab[j] != a or not movable[j]:
                    continue
                if not edge_i and other[j] == 0:
                    continue  # pairs away from every boundary are left to the region moves
                for c in range(k):
                    cost[c] = unary[i, c] + unary[j, c]
                _add_border_costs(indptr, indices, data, gw, geom, two_lam, lab, i, j, cost)
                _add_border_costs(indptr, indices, data, gw, geom, two_lam, lab, j, i, cost)
                best = a
                for c in range(k):
                    if cost[c] < cost[best]:
                        best = c
                if best != a and cost[best] < cost[a] - 1e-12 * max(1.0, abs(cost[a])):
                    lab[i] = best
                    lab[j] = best
                    moved += 1
                    for end in (i, j):  # (each end and its neighbours)
                        _, flags_t = place(gw, geom, end)
                        for t in range(row_length(indptr, gw, end)):
                            m = column_at(indptr, indices, gw, geom, end, flags_t, t)
                            if m >= 0:
                                other[m] = _count_other(indptr, indices, gw, geom, lab, m)
                    if sweep == 0:
                        # pixels within two steps may now be near a boundary: the first sweep
                        # visits them too (when still ahead), as a test of every pixel would
                        _mark_two_steps(indptr, indices, gw, geom, movable, i, active)
                        _mark_two_steps(indptr, indices, gw, geom, movable, j, active)
                    _mark_two_steps(indptr, indices, gw, geom, movable, i, marked)
                    _mark_two_steps(indptr, indices, gw, geom, movable, j, marked)
                    break
        moves += moved
        if moved == 0:
            break
        active, marked = marked, active
        marked[:] = False
    return moves

