"""Iterated conditional modes with a 4-colouring of the 8-neighbour grid: a fast local polish.

No two pixels of the same colour class ``(row % 2, col % 2)`` are 8-neighbours, so all pixels of
one class can move to their best label at once without interacting; each sweep visits the four
classes in turn, and the energy never increases.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from scipy import ndimage

from .fusion import fuse_level_sets
from .problem import MRFProblem

log = logging.getLogger(__name__)

_EIGHT = np.ones((3, 3), dtype=bool)


def icm(problem: MRFProblem, labels: np.ndarray, max_sweeps: int = 30) -> np.ndarray:
    """Improve a labelling by colour-parallel ICM; hard-constrained pixels never change.

    Only pixels that can move are visited: at the start, pixels on a label boundary or whose own
    data outweighs their whole neighbourhood; afterwards, neighbours of pixels that moved. A
    pixel outside that set keeps its label in any case, so the result is the same as visiting
    every pixel, at a cost proportional to the boundary length instead of the image size.

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    max_sweeps : int
        Limit on full sweeps over the four colour classes.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels with ``problem.energy(result) <= problem.energy(labels)``; no
        single free pixel can lower the energy by changing its label (unless ``max_sweeps`` ran out).
    """
    h, w = problem.shape
    n, k = problem.n, problem.k
    lab = np.asarray(labels).reshape(-1).astype(np.int64) - 1
    L = problem.laplacian
    deg = L.diagonal()
    two_lam = 2.0 * problem.lam
    onehot = np.zeros((n, k))
    onehot[np.arange(n), lab] = 1.0
    # weight to neighbours of another label; with the data margin, who could move at all
    other = (L @ onehot)[np.arange(n), lab]
    margin = problem.unary[np.arange(n), lab] - problem.unary.min(axis=1)
    active = (other > 0) | (margin > two_lam * deg)
    movable = np.asarray(problem.hard).ravel() == 0
    active &= movable
    rows, cols = np.divmod(np.arange(n), w)
    classes = [np.flatnonzero((rows % 2 == a) & (cols % 2 == b)) for a in (0, 1) for b in (0, 1)]
    moved_total = sweep = 0
    for sweep in range(max_sweeps):
        moved = 0
        for cls in classes:
            idx = cls[active[cls]]
            if idx.size == 0:
                continue
            active[idx] = False
            Lsub = L[idx]
            # agree[i, c] = weight of i's neighbours labelled c (the diagonal term cancels)
            agree = deg[idx, None] * onehot[idx] - Lsub @ onehot
            cost = problem.unary[idx] - two_lam * agree   # + 2 lam deg_i, the same for every c
            best = np.argmin(cost, axis=1)
            cur = cost[np.arange(idx.size), lab[idx]]
            change = cost[np.arange(idx.size), best] < cur - 1e-12 * np.maximum(1.0, np.abs(cur))
            if not change.any():
                continue
            go = idx[change]
            onehot[go, lab[go]] = 0.0
            lab[go] = best[change]
            onehot[go, lab[go]] = 1.0
            moved += go.size
            nb = Lsub[np.flatnonzero(change)].indices   # neighbours (and self) of moved pixels
            active[nb[movable[nb]]] = True
        moved_total += moved
        if moved == 0:
            break
    log.debug("ICM: %d moves in %d sweeps", moved_total, sweep + 1)
    return (lab + 1).astype(np.int32).reshape(h, w)


def _move_regions(problem: MRFProblem, lab: np.ndarray, mask: np.ndarray, a: int,
                  hard: np.ndarray) -> int:
    """Move each 8-connected region of ``mask`` (pixels all labelled ``a``) to its best label.

    Regions of one mask are never neighbours, so their moves do not interact and are taken
    together. Moving region ``R`` from ``a`` to ``c`` changes the energy by its unary difference
    plus ``2 lam`` times (the weight of its border with label ``a`` minus that with label ``c``).
    Changes ``lab`` (0-based) in place and returns the number of regions moved.
    """
    k, g = problem.k, problem.graph
    comp, nc = ndimage.label(mask.reshape(problem.shape), structure=_EIGHT)
    if nc == 0:
        return 0
    comp = comp.ravel()
    inside = comp > 0
    idx = comp[inside] - 1
    d = problem.unary[inside]
    gain = np.stack([np.bincount(idx, weights=d[:, c] - d[:, a], minlength=nc)
                     for c in range(k)], axis=1)
    ci, cj = comp[g.i], comp[g.j]
    border = np.zeros(nc * k)
    for src, dst, other in ((ci, cj, g.j), (cj, ci, g.i)):
        sel = (src > 0) & (dst == 0)
        border += np.bincount((src[sel] - 1) * k + lab[other[sel]], weights=g.weights[sel],
                              minlength=nc * k)
    border = border.reshape(nc, k)
    delta = gain + 2.0 * problem.lam * (border[:, a:a + 1] - border)
    delta[:, a] = 0.0
    pinned = np.bincount(idx, weights=(hard[inside] > 0).astype(float), minlength=nc) > 0
    delta[pinned] = 0.0
    best = np.argmin(delta, axis=1)
    take = delta[np.arange(nc), best] < -1e-9 * max(1.0, float(np.abs(delta).max()))
    if not take.any():
        return 0
    target = np.where(take, best, a)
    lab[inside] = target[idx]
    return int(take.sum())


def component_flips(problem: MRFProblem, labels: np.ndarray, max_rounds: int = 10) -> np.ndarray:
    """Relabel whole regions when that lowers the energy; hard pixels never change.

    Two families of regions are tried, label by label: every 8-connected region of label ``a``
    (removes islands, fills holes), and every 8-connected cluster of pixels labelled ``a`` whose
    own data prefers another label ``b`` (fixes small clusters on a boundary that single-pixel
    moves cannot). Each region moves to the label that lowers the energy most, if any (see
    :func:`_move_regions`); ICM follows each round, and rounds repeat until nothing moves.

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    max_rounds : int
        Limit on rounds.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels with energy no higher than the input's.
    """
    h, w = problem.shape
    k = problem.k
    lab = np.asarray(labels).reshape(-1).astype(np.int64) - 1
    hard = np.asarray(problem.hard).ravel()
    prefer = np.argmin(problem.unary, axis=1)
    moved_total = 0
    for _ in range(max_rounds):
        moved = 0
        for a in range(k):
            moved += _move_regions(problem, lab, lab == a, a, hard)
            for b in range(k):
                if b != a:
                    moved += _move_regions(problem, lab, (lab == a) & (prefer == b), a, hard)
        moved_total += moved
        if moved == 0:
            break
        lab = icm(problem, lab + 1).reshape(-1).astype(np.int64) - 1
    log.debug("region moves: %d regions moved", moved_total)
    return (lab + 1).astype(np.int32).reshape(h, w)


def polish_labels(problem: MRFProblem, labels: np.ndarray,
                  snapshots: Sequence[np.ndarray] = (), max_rounds: int = 3) -> np.ndarray:
    """ICM and whole-region moves, then level-set fusion with ADMM's iterates; never raises the energy.

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    snapshots : sequence of numpy.ndarray
        ``(n, K)`` label weights of continuous ADMM iterates, for
        :func:`solver.mrf.fusion.fuse_level_sets`; empty: ICM and region moves only.
    max_rounds : int
        Limit on rounds of fusion, each followed by ICM and region moves.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels.
    """
    lab = component_flips(problem, icm(problem, labels))
    if len(snapshots):
        snapshots = list(snapshots)  # built once for all rounds
    for _ in range(max_rounds if len(snapshots) else 0):
        fused, moved = fuse_level_sets(problem, lab, snapshots)
        if moved == 0:
            break
        lab = component_flips(problem, icm(problem, fused))
    return lab
