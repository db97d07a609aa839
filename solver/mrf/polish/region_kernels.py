"""Compiled (numba) kernels for the region moves of the polish: connected components, fusion
moves, whole-region moves and region splits.

The conventions are those of :mod:`solver.mrf.polish.icm_kernels` (the Laplacian
``L = D - W`` as the graph arrays of :mod:`solver.mrf.build.stencil`, 0-based labels, the
Potts energy
``E = 2 lam sum W_ij [l_i != l_j] + sum_i d_{i, l_i}``). Each move's energy change is exact and a
move is taken only when it lowers the energy. Regions of one mask (or one proposal) never touch,
so all of their moves are independent and taken at once.
"""

from __future__ import annotations

import numpy as np

from solver.backend.jit import inline_jit, jit
from solver.mrf.build.stencil import degree, link_at, neighbour_at, place


@jit
def _components(indptr, indices, gw, geom, member, seeds, m, region, order,
                starts):  # pragma: no cover
    """Connected components of the pixels with ``member[i]`` (graph restricted to them), which
    are exactly ``seeds[:m]``; the work is proportional to them, not to the image. Neighbours
    come from the graph arrays (:mod:`solver.mrf.build.stencil`), in the CSR's order.

    ``region`` (n,) must be -1 on entry at members; on exit it holds each member's component.
    ``order`` receives the members grouped by component, ``starts`` the offsets (length
    components + 1). Returns the number of components.
    """
    nc = 0
    top = 0
    starts[0] = 0
    for q0 in range(m):
        s = seeds[q0]
        if region[s] >= 0:
            continue
        region[s] = nc
        order[top] = s
        head = top
        top += 1
        while head < top:
            i = order[head]
            head += 1
            _, flags_t = place(gw, geom, i)
            for t in range(degree(indptr, gw, i)):
                j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
                if j >= 0 and member[j] and region[j] < 0:
                    region[j] = nc
                    order[top] = j
                    top += 1
        nc += 1
        starts[nc] = top
    return nc


@jit
def _mask_components(indptr, indices, gw, geom, mask):  # pragma: no cover
    """Connected components of all the pixels of ``mask``: ``(region, order, starts, count)`` as
    :func:`_components` fills them (``region`` is image-sized, -1 off the mask)."""
    seeds = np.flatnonzero(mask)
    m = seeds.size
    region = np.full(mask.size, -1, np.int64)
    order = np.empty(m, np.int64)
    starts = np.empty(m + 1, np.int64)
    nc = (_components(indptr, indices, gw, geom, mask, seeds, m, region, order, starts)
          if m else 0)
    return region, order, starts, nc


@jit
def _ne(a, b):  # pragma: no cover
    return 1.0 if a != b else 0.0


@jit
def _change(lab, newlab, member, a, c, j):  # pragma: no cover
    """Change in the disagreement of the edge to neighbour ``j`` when a pixel goes from label
    ``a`` to ``c`` with its region (``member``; an edge inside it is seen from both of its ends,
    so each end counts half)."""
    if member[j]:
        return 0.5 * (_ne(c, newlab[j]) - _ne(a, lab[j]))
    return _ne(c, lab[j]) - _ne(a, lab[j])


@jit
def _fuse(potts, lab, idx, m, newlab, member, region, order, starts):  # pragma: no cover
    """Take ``newlab[i]`` on each connected region of ``idx[:m]`` where that lowers the energy.
    The graph as in :func:`_components`.

    ``member`` (False), ``region`` (-1) are ``(n,)`` scratch arrays left as found; ``newlab`` is
    read at ``idx[:m]`` only. Changes ``lab`` in place; returns the number of regions taken.
    """
    indptr, indices, data, gw, geom, unary, two_lam = potts
    if m == 0:
        return 0
    for t in range(m):
        member[idx[t]] = True
    nc = _components(indptr, indices, gw, geom, member, idx, m, region, order, starts)
    delta = np.zeros(nc)
    scale = 1.0
    for r in range(nc):
        dr = 0.0
        for q in range(starts[r], starts[r + 1]):
            i = order[q]
            a, c = lab[i], newlab[i]
            dr += unary[i, c] - unary[i, a]
            row_t, flags_t = place(gw, geom, i)
            for t in range(degree(indptr, gw, i)):
                j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
                if j >= 0:
                    dr -= two_lam * v * _change(lab, newlab, member, a, c, j)
        delta[r] = dr
        scale = max(scale, abs(dr))
    taken = 0
    for r in range(nc):
        if delta[r] < -1e-9 * scale:
            taken += 1
            for q in range(starts[r], starts[r + 1]):
                lab[order[q]] = newlab[order[q]]
    for t in range(m):
        member[idx[t]] = False
        region[idx[t]] = -1
    return taken


@jit
def fuse_candidate(potts, lab, idx, new, scratch):  # pragma: no cover
    """Take label ``new[t]`` at pixel ``idx[t]`` on each connected region of ``idx`` where that
    lowers the energy (regions never touch, so each one's change is exact and independent).

    Changes ``lab`` in place; returns the number of regions taken. ``scratch`` comes from
    :func:`fusion_scratch` and is left as found, so many calls share one set of work arrays.
    """
    _, newlab, member, region, order, starts, _, _, _ = scratch
    for t in range(idx.size):
        newlab[idx[t]] = new[t]
    return _fuse(potts, lab, idx, idx.size, newlab, member, region, order, starts)


@jit
def dense_snapshot(pixels, weights, fixed):  # pragma: no cover
    """The ``(n, K)`` float32 label weights of a sparse snapshot: its rows at ``pixels``, a 1 at
    each fixed pixel's label (``fixed``, 1-based; 0 = free), 0 elsewhere."""
    n, k = fixed.size, weights.shape[1]
    out = np.zeros((n, k), np.float32)
    for i in range(n):
        if fixed[i] > 0:
            out[i, fixed[i] - 1] = 1.0
    for q in range(pixels.size):
        for c in range(k):
            out[pixels[q], c] = weights[q, c]
    return out


@jit
def _weight(weights, row, fixed, i, c):  # pragma: no cover
    """Weight of label ``c`` at pixel ``i`` in a sparse snapshot (see :func:`fuse_level_sets`)."""
    q = row[i]
    if q >= 0:
        return weights[q, c]
    return 1.0 if fixed[i] - 1 == c else 0.0


@jit
def fixed_disagreement(lab, movable, fixed):  # pragma: no cover
    """The movable pixels that a sparse snapshot's solver fixed (``fixed > 0``, 1-based) to a
    label other than ``lab``'s (0-based), in index order: the pixels outside the snapshot that
    its level sets can relabel. One pass over the image; :func:`fuse_level_sets` and
    :func:`solver.mrf.polish.descent_kernels.fuse_descents` take the list, so the snapshots of one
    fusion that share a ``fixed`` array share it while the labels do not change."""
    found = np.empty(lab.size, np.int64)
    m = 0
    for i in range(lab.size):
        if fixed[i] > 0 and movable[i] and fixed[i] - 1 != lab[i]:
            found[m] = i
            m += 1
    return found[:m].copy()


@jit
def _list_proposable(lab, movable, pixels, weights, fixed, extra, low, span, listed,
                     row):  # pragma: no cover
    """List in ``span`` (marked in ``listed``) the movable pixels some level set of a sparse
    snapshot can relabel: a weight above ``low`` for another label, or fixed to another label
    (those among ``extra``, which must hold every such pixel: :func:`fixed_disagreement`).
    Sets ``row`` to each snapshot pixel's row of ``weights``; returns the count."""
    ns = 0
    for q in range(pixels.size):
        i = pixels[q]
        row[i] = q
        if movable[i]:
            for c in range(weights.shape[1]):
                if c != lab[i] and weights[q, c] > low:
                    span[ns] = i
                    listed[i] = True
                    ns += 1
                    break
    for q in range(extra.size):
        i = extra[q]
        if fixed[i] > 0 and movable[i] and fixed[i] - 1 != lab[i] and not listed[i]:
            span[ns] = i
            listed[i] = True
            ns += 1
    return ns


@jit
def _select(lab, span, ns, weights, row, fixed, c, t, idx, newlab):  # pragma: no cover
    """The proposal "label ``c`` where the weight of ``c`` exceeds ``t``" on the listed pixels:
    writes its pixels to ``idx`` and ``c`` to ``newlab`` there; returns their number."""
    m = 0
    for q in range(ns):
        i = span[q]
        if lab[i] != c and _weight(weights, row, fixed, i, c) > t:
            idx[m] = i
            newlab[i] = c
            m += 1
    return m


@jit
def _unlist(span, ns, listed, pixels, row):  # pragma: no cover
    """Undo :func:`_list_proposable` (and any pixels listed since) in the work arrays."""
    for q in range(ns):
        listed[span[q]] = False
    for q in range(pixels.size):
        row[pixels[q]] = -1


@jit
def fuse_level_sets(potts, lab, movable, pixels, weights, fixed, extra, thresholds, max_size,
                    scratch):  # pragma: no cover
    """Fuse ``lab`` with the proposals "label ``c`` wherever its weight exceeds ``t``", for every
    threshold ``t`` and label ``c`` in turn, on the ``movable`` pixels. Changes ``lab`` in place;
    returns the number of regions taken. ``scratch`` comes from :func:`fusion_scratch` and is left
    as found (so one serves many calls).

    The snapshot is sparse: ``weights[q]`` are the label weights of pixel ``pixels[q]``; any other
    pixel has weight 1 on its label ``fixed[i]`` (1-based; the solver had fixed it); ``extra``
    holds those of them fixed to another label than ``lab``'s (:func:`fixed_disagreement`). Only
    pixels where some other label's weight exceeds the lowest threshold can be proposed; they
    are listed once, and pixels a taken region relabels join the list, so each proposal scans
    the list instead of the image.
    """
    k = weights.shape[1]
    idx, newlab, member, region, order, starts, span, listed, row = scratch
    ns = _list_proposable(lab, movable, pixels, weights, fixed, extra, thresholds.min(), span,
                          listed, row)
    taken = 0
    for t in thresholds:
        for c in range(k):
            m = _select(lab, span, ns, weights, row, fixed, c, t, idx, newlab)
            if m > max_size:
                continue
            before = taken
            taken += _fuse(potts, lab, idx, m, newlab, member, region, order, starts)
            if taken > before:  # relabelled pixels may now differ from other proposals
                for q in range(m):
                    i = idx[q]
                    if not listed[i] and lab[i] == c:
                        span[ns] = i
                        listed[i] = True
                        ns += 1
    _unlist(span, ns, listed, pixels, row)
    return taken


def index_dtype(n: int) -> type:
    """int32 for the work arrays of ``n`` pixels when it holds every index and count (half the
    memory of int64: a 24 MP photo's polish holds about fifteen such arrays), else int64."""
    return np.int32 if n < 2**31 - 1 else np.int64


def fusion_scratch(n: int) -> tuple[np.ndarray, ...]:
    """Work arrays for :func:`fuse_level_sets` on ``n`` pixels."""
    ix = index_dtype(n)
    return (np.empty(n, ix), np.zeros(n, ix), np.zeros(n, np.bool_),
            np.full(n, -1, ix), np.empty(n, ix), np.empty(n + 1, ix),
            np.empty(n, ix), np.zeros(n, np.bool_), np.full(n, -1, ix))


def region_scratch(n: int) -> tuple[np.ndarray, ...]:
    """Work arrays for :func:`move_regions` on ``n`` pixels (left as found by each call)."""
    ix = index_dtype(n)
    return (np.full(n, -1, ix), np.empty(n, ix), np.empty(n + 1, ix), np.empty(n, ix))


@inline_jit
def _member(lab, a, prefer, i):  # pragma: no cover
    """Pixel ``i`` is in the mask of the region moves: labelled ``a`` and, unless ``prefer`` is
    empty, ``prefer[i]`` (tested where needed instead of made as an image-sized mask: at 24 MP
    the mask and its pixel list were a pass each a call, docs/decisions.md, GPU)."""
    return lab[i] == a and (prefer.size == 0 or prefer[i])


@jit
def _capped_components(potts, lab, a, prefer, seeds, cap, region, order, starts,
                       big):  # pragma: no cover
    """Connected components of the mask (:func:`_member`: pixels labelled ``a``, where
    ``prefer`` if not empty) that hold a pixel of ``seeds`` (every pixel when ``seeds`` is
    empty; seeds off the mask are passed over) and at most ``cap`` pixels, as
    :func:`_components` fills ``region``, ``order``, ``starts``.

    A search that passes ``cap`` pixels, or meets a pixel of a component already found too big,
    stops; its pixels are marked -2 in ``region`` and listed in ``big``, so the work on a big
    component is at most ``cap`` pixels plus one step per seed in it. Neighbours as in
    :func:`_components`. Returns ``(components, big pixels)``.
    """
    indptr, indices, _, gw, geom, _, _ = potts
    nc, top, nbig = 0, 0, 0
    starts[0] = 0
    every = seeds.size == 0
    for q0 in range(lab.size if every else seeds.size):
        s = q0 if every else seeds[q0]
        if region[s] != -1 or not _member(lab, a, prefer, s):
            continue
        head = top
        region[s] = nc
        order[top] = s
        top += 1
        too_big = False
        while head < top and not too_big:
            i = order[head]
            head += 1
            # (each step written out: through a helper that writes ``region`` and ``order``,
            # numba makes the search several times slower)
            _, flags_t = place(gw, geom, i)
            for t in range(degree(indptr, gw, i)):
                j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
                if j >= 0 and _member(lab, a, prefer, j):
                    if region[j] == -2:
                        too_big = True
                    elif region[j] == -1:
                        region[j] = nc
                        order[top] = j
                        top += 1
            if top - starts[nc] > cap:
                too_big = True
        if too_big:
            for q in range(starts[nc], top):
                region[order[q]] = -2
                big[nbig] = order[q]
                nbig += 1
            top = starts[nc]
        else:
            nc += 1
            starts[nc] = top
    return nc, nbig


@jit
def move_regions(potts, lab, a, prefer, hard, seeds, cap, scratch):  # pragma: no cover
    """Move each connected region of the pixels labelled ``a`` (only those where ``prefer`` is
    True, unless it is empty) that holds a pixel of ``seeds`` (any pixel, when ``seeds`` is
    empty) and at most ``cap`` pixels to its best label.

    Moving region ``R`` from ``a`` to ``c`` changes the energy by its unary difference plus
    ``2 lam`` times (its border weight to label ``a`` minus that to label ``c``). Regions holding a
    hard pixel stay. Changes ``lab`` in place; returns the number of regions moved. ``scratch``
    comes from :func:`region_scratch` and is left as found. The graph as in
    :func:`_components`.
    """
    indptr, indices, data, gw, geom, unary, two_lam = potts
    n, k = unary.shape
    region, order, starts, big = scratch
    nc, nbig = _capped_components(potts, lab, a, prefer, seeds, cap, region, order, starts, big)
    moved = 0
    if nc > 0:
        delta = np.zeros((nc, k))
        pinned = np.zeros(nc, np.bool_)
        scale = np.ones(nc)
        border = np.zeros(k)
        for r in range(nc):
            border[:] = 0.0
            for q in range(starts[r], starts[r + 1]):
                i = order[q]
                if hard[i] > 0:
                    pinned[r] = True
                for c in range(k):
                    delta[r, c] += unary[i, c] - unary[i, a]
                row_t, flags_t = place(gw, geom, i)
                for t in range(degree(indptr, gw, i)):
                    j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
                    if j >= 0 and not _member(lab, a, prefer, j):
                        border[lab[j]] -= v
            for c in range(k):
                delta[r, c] += two_lam * (border[a] - border[c])
                scale[r] = max(scale[r], abs(delta[r, c]))
        for r in range(nc):
            if pinned[r]:
                continue
            best = a
            for c in range(k):
                if delta[r, c] < delta[r, best]:
                    best = c
            # (each region's own tolerance: a move's decision must not depend on which other
            # regions were evaluated with it)
            if best != a and delta[r, best] < -1e-9 * scale[r]:
                moved += 1
                for q in range(starts[r], starts[r + 1]):
                    lab[order[q]] = best
    for q in range(starts[nc]):
        region[order[q]] = -1
    for q in range(nbig):
        region[big[q]] = -1
    return moved


@jit
def _split_icm(potts, lab, part, b, c, prop, sweeps):  # pragma: no cover
    """ICM restricted to labels ``{b, c}`` on region ``r`` (pixels ``order[s0:s1]``; ``part =
    (region, r, order, s0, s1)``, ``region`` each pixel's component), from each pixel's cheaper
    label by its data; pixels outside the region keep ``lab``."""
    region, r, order, s0, s1 = part
    indptr, indices, data, gw, geom, unary, two_lam = potts
    for q in range(s0, s1):
        i = order[q]
        prop[i] = b if unary[i, b] <= unary[i, c] else c
    for _ in range(sweeps):
        changed = 0
        for q in range(s0, s1):
            i = order[q]
            cost_b = unary[i, b]
            cost_c = unary[i, c]
            row_t, flags_t = place(gw, geom, i)
            for t in range(degree(indptr, gw, i)):
                j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
                if j < 0:
                    continue
                lj = prop[j] if region[j] == r else lab[j]
                if lj != b:
                    cost_b -= two_lam * v
                if lj != c:
                    cost_c -= two_lam * v
            new = b if cost_b <= cost_c else c
            if new != prop[i]:
                prop[i] = new
                changed += 1
        if changed == 0:
            break


@jit
def _split_delta(potts, lab, part, a, prop):  # pragma: no cover
    """Exact energy change of relabelling region ``r`` (all ``a`` now) to ``prop``."""
    region, r, order, s0, s1 = part
    indptr, indices, data, gw, geom, unary, two_lam = potts
    delta = 0.0
    for q in range(s0, s1):
        i = order[q]
        delta += unary[i, prop[i]] - unary[i, a]
        row_t, flags_t = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):
            j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
            if j < 0:
                continue
            w = -v
            if region[j] == r:
                if prop[i] != prop[j]:
                    delta += 0.5 * two_lam * w  # an inner edge is seen from both ends
            else:
                delta += two_lam * w * ((1.0 if prop[i] != lab[j] else 0.0)
                                        - (1.0 if a != lab[j] else 0.0))
    return delta


@jit
def _split_bound(potts, part, a, near):  # pragma: no cover
    """A lower bound on the energy change of any relabelling of region ``r`` (all ``a`` now)
    with labels in ``near``: each pixel's cheapest such label by its data, every border edge
    uncut and every inner edge of negative weight cut (the terms of :func:`_split_delta` at
    their least). At least 0: no split of the region lowers the energy."""
    region, r, order, s0, s1 = part
    indptr, indices, data, gw, geom, unary, two_lam = potts
    k = unary.shape[1]
    bound = 0.0
    for q in range(s0, s1):
        i = order[q]
        low = np.inf
        for b in range(k):
            if near[b] and b != a and unary[i, b] < low:
                low = unary[i, b]
        bound += low - unary[i, a]
        row_t, flags_t = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):
            j, v = link_at(indptr, indices, data, gw, geom, i, row_t, flags_t, t)
            if j < 0:
                continue
            w = -v
            if region[j] == r:
                if w < 0.0:
                    bound += 0.5 * two_lam * w
            else:
                bound -= two_lam * abs(w)
    return bound


@jit
def split_regions(potts, lab, mask, a, hard, min_size, sweeps):  # pragma: no cover
    """Re-split each connected region of ``mask`` (pixels all labelled ``a``) between two other
    labels.

    For every pair of labels other than ``a`` found around the region, the region is relabelled
    by ICM restricted to that pair (from each pixel's cheaper label by its data, the rest of the
    image fixed); the best such labelling is taken if it lowers the energy (exact).
    Regions of one mask never touch, so their moves are independent. Regions smaller than
    ``min_size`` or holding a hard pixel stay. Changes ``lab`` in place; returns the regions moved.
    """
    indptr, indices, _, gw, geom, unary, _ = potts
    n, k = unary.shape
    region, order, starts, nc = _mask_components(indptr, indices, gw, geom, mask)
    if nc == 0:
        return 0
    prop = np.empty(n, np.int64)
    best = np.empty(n, np.int64)
    near = np.zeros(k, np.bool_)
    moved = 0
    for r in range(nc):
        s0, s1 = starts[r], starts[r + 1]
        part = (region, r, order, s0, s1)  # (the region, as the split helpers take it)
        if s1 - s0 < min_size:
            continue
        pinned = False
        near[:] = False
        for q in range(s0, s1):
            i = order[q]
            if hard[i] > 0:
                pinned = True
            _, flags_t = place(gw, geom, i)
            for t in range(degree(indptr, gw, i)):
                j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
                if j >= 0 and region[j] != r:
                    near[lab[j]] = True
        if pinned or _split_bound(potts, part, a, near) >= 0.0:
            continue  # (with the bound at least 0 no split is taken: skipping it is exact)
        best_delta = 0.0
        found = False
        for b in range(k):
            if b == a or not near[b]:
                continue
            for c in range(b + 1, k):
                if c == a or not near[c]:
                    continue
                _split_icm(potts, lab, part, b, c, prop, sweeps)
                delta = _split_delta(potts, lab, part, a, prop)
                if delta < best_delta - 1e-9 * max(1.0, abs(delta)):
                    best_delta = delta
                    found = True
                    for q in range(s0, s1):
                        best[order[q]] = prop[order[q]]
        if found:
            moved += 1
            for q in range(s0, s1):
                lab[order[q]] = best[order[q]]
    return moved
