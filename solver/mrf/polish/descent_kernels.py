"""Compiled (numba) kernel of descent fusion: level-set proposals carved by ICM before fusion.

Conventions as in :mod:`solver.mrf.polish.icm_kernels` (the Laplacian's CSR arrays, 0-based
labels, exact energy changes). A level-set proposal "label ``c`` wherever ``x_c > t``" often
joins a region worth taking to pixels where ``c`` costs more, and the fusion of
:func:`solver.mrf.polish.region_kernels.fuse_level_sets` takes a connected region whole or not at
all. Here ICM runs first on a copy of the labels with the proposal applied: the pixels that do
not pay for their label in the proposal fall back, and what is left splits into regions of its
own, each taken if it lowers the energy. The ICM is a work queue over the pixels near the
proposal, so a proposal costs in proportion to its own pixels, not to the image.
"""

from __future__ import annotations

import numpy as np

from solver.backend.jit import jit
from solver.mrf.build.stencil import degree, neighbour_at, place
from solver.mrf.polish.icm_kernels import best_label
from solver.mrf.polish.region_kernels import (
    _fuse,
    _list_proposable,
    _select,
    _unlist,
    fusion_scratch,
    index_dtype,
)


def descent_scratch(n: int, k: int,
                    fusion: tuple[np.ndarray, ...] | None = None) -> tuple[np.ndarray, ...]:
    """Work arrays for :func:`fuse_descents` on ``n`` pixels and ``k`` labels (left as found,
    so one set serves every snapshot); they begin with a :func:`fusion_scratch` set, ``fusion``
    if given (shared with the plain fusions, which leave it as found too)."""
    ix = index_dtype(n)
    return (*(fusion_scratch(n) if fusion is None else fusion), np.empty(n, ix),
            np.zeros(n, np.bool_), np.zeros(n, np.bool_), np.empty(n, ix), np.zeros(k))


@jit
def _queue_around(potts, movable, queue, inq, pixels, m, touched, mark):  # pragma: no cover
    """Queue (from the start of ``queue``, at most once each) the movable pixels of
    ``pixels[:m]`` and their neighbours, pixel by pixel, each before its neighbours in the
    CSR's order (:mod:`solver.mrf.build.stencil`); with ``mark``, also set ``touched``
    at ``pixels[:m]``. Returns the number queued.

    One loop for a whole proposal, with the pushes written out: through a helper per pixel
    (which writes ``inq`` and ``queue``) numba makes the pushes much slower (measured:
    docs/decisions.md, Helpers inside compiled loops)."""
    indptr, indices, _, gw, geom, _, _ = potts
    count = 0
    for q in range(m):
        i = pixels[q]
        if mark:
            touched[i] = True
        if movable[i] and not inq[i]:
            inq[i] = True
            queue[count] = i
            count += 1
        _, flags_t = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):
            j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
            if j >= 0 and movable[j] and not inq[j]:
                inq[j] = True
                queue[count] = j
                count += 1
    return count


@jit
def _descend(potts, lab, movable, queue, inq, count, touched, tlist, nt, agree):  # pragma: no cover
    """ICM over a work queue (a ring over ``queue``, whose first ``count`` entries are queued):
    each queued pixel takes its best label given its neighbours, and a move queues the pixel's
    movable neighbours not already queued (in the CSR's order). Stops when the queue is empty
    (every move lowers the energy, so it does). Pixels that moved are listed in ``tlist`` after
    the ``nt`` already there (``touched`` marks them); returns the new ``nt``."""
    indptr, indices, data, gw, geom, unary, two_lam = potts
    size = queue.size
    head = 0
    while count > 0:
        i = np.int64(queue[head])
        head = (head + 1) % size
        count -= 1
        inq[i] = False
        best = best_label(indptr, indices, data, gw, geom, unary, two_lam, lab, i, agree)
        if best == lab[i]:
            continue
        lab[i] = best
        if not touched[i]:
            touched[i] = True
            tlist[nt] = i
            nt += 1
        # (the pushes written out, as in _queue_around)
        _, flags_t = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):
            j = neighbour_at(indptr, indices, gw, geom, i, flags_t, t)
            if j >= 0 and movable[j] and not inq[j]:
                inq[j] = True
                queue[(head + count) % size] = j
                count += 1
    return nt


@jit
def fuse_descents(potts, lab, movable, pixels, weights, fixed, extra, thresholds, max_size,
                  scratch):  # pragma: no cover
    """Fuse ``lab`` with every level-set proposal of one snapshot after ICM has carved it.

    For each threshold ``t`` and label ``c``: the proposal (``c`` on the listed pixels whose
    weight for ``c`` exceeds ``t``) is applied to a copy of ``lab``, ICM runs on the copy around
    it, and each connected region where the copy then differs from ``lab`` is taken if that
    lowers the energy. After a region is taken, ICM runs on ``lab`` around it, so ``lab`` stays
    an ICM fixed point if it was one. Proposals of more than ``max_size`` pixels are skipped.
    The snapshot is sparse (with ``extra``) as in
    :func:`solver.mrf.polish.region_kernels.fuse_level_sets`. Changes ``lab`` in place; returns
    the number of regions taken. The copy (``scratch[1]``) must equal ``lab`` on entry, and does
    again on return, so the snapshots of one fusion share one copy instead of each making its
    own (a pass over two ``(n,)`` arrays).
    """
    idx, work, member, region, order, starts, span, listed, row, queue, inq, touched, tlist, \
        agree = scratch
    k = weights.shape[1]
    ns = _list_proposable(lab, movable, pixels, weights, fixed, extra, thresholds.min(), span,
                          listed, row)
    taken = 0
    # Level sets of one label are nested, so a proposal with as many pixels as that label's last
    # one is the same set; if nothing was taken since, the labels are the same too and the
    # outcome is known (nothing taken): skip it. Exact, and it makes fine threshold grids cheap.
    last_size = np.full(k, -1)
    last_taken = np.zeros(k, np.int64)
    for t in thresholds:
        for c in range(k):
            nt = _select(lab, span, ns, weights, row, fixed, c, t, tlist, work)
            if nt == 0 or nt > max_size or (nt == last_size[c] and taken == last_taken[c]):
                for q in range(nt):
                    work[tlist[q]] = lab[tlist[q]]
                continue
            last_size[c], last_taken[c] = nt, taken
            count = _queue_around(potts, movable, queue, inq, tlist, nt, touched, np.bool_(True))
            nt = _descend(potts, work, movable, queue, inq, count, touched, tlist, nt, agree)
            m = np.int64(0)
            for q in range(nt):
                i = tlist[q]
                if work[i] != lab[i]:
                    idx[m] = i
                    m += 1
            got = _fuse(potts, lab, idx, m, work, member, region, order, starts)
            # the pixels now carrying the copy's label are the regions taken
            m2 = np.int64(0)
            for q in range(m):
                i = idx[q]
                if lab[i] == work[i]:
                    idx[m2] = i
                    m2 += 1
            for q in range(nt):
                i = tlist[q]
                work[i] = lab[i]
                touched[i] = False
            if got == 0:
                continue
            last_size[c] = -1
            taken += got
            count = _queue_around(potts, movable, queue, inq, idx, m2, touched, np.bool_(False))
            nt = _descend(potts, lab, movable, queue, inq, count, touched, tlist, np.int64(0),
                          agree)
            for q in range(nt):
                touched[tlist[q]] = False
            for q in range(m2 + nt):  # mirror into the copy; changed pixels join the list
                i = idx[q] if q < m2 else tlist[q - m2]
                work[i] = lab[i]
                if not listed[i]:
                    span[ns] = i
                    listed[i] = True
                    ns += 1
    _unlist(span, ns, listed, pixels, row)
    return taken
