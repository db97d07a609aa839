"""Level-set fusion: ADMM's own continuous iterates propose regions, each taken if it lowers the energy.

The early iterates of ℓ2-box ADMM are close to the continuous (quadratic) relaxation. Their level
sets ``{x_c > t}`` outline regions that rounding and the later, strongly penalised iterations can
get wrong as a whole (a thin part, a corner cut off), which no single-pixel move can repair. For
a proposal ``C`` (the current labels with label ``c`` wherever ``x_c > t``), every 8-connected
component of ``{labels != C}`` is a move of its own: components never touch, so the energy change
of each is exact and independent of the others, and all the moves that lower the energy are taken
at once (a fusion move restricted to whole components).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .problem import MRFProblem

log = logging.getLogger(__name__)

#: ADMM iterations (counted from 1 within each run) whose continuous iterate is kept as a source of
#: proposals: dense at first, where the iterate is still close to the relaxation, then sparser.
SNAPSHOT_ITERATIONS = frozenset((1, 2, 3, 5, 8, 12, 17, 25, 35, 50, 70, 100, 140, 200))
#: Level-set thresholds used on every snapshot.
THRESHOLDS = (0.2, 0.5, 0.8)


def _fuse_at(problem: MRFProblem, lab: np.ndarray, idx: np.ndarray, new: np.ndarray,
             pos: np.ndarray) -> int:
    """Fusion with a candidate that differs from ``lab`` exactly at ``idx`` (free pixels), where it
    is ``new``; changes ``lab`` in place and returns the number of regions taken. ``pos`` is an
    ``(n,)`` int64 scratch array of -1, left as it was found.

    Work is proportional to ``idx.size``: the regions are the connected components of the graph
    restricted to ``idx``, found from the same rows of the Laplacian that give the energy change.
    """
    m = idx.size
    if m == 0:
        return 0
    rows_of = problem.laplacian[idx]
    row = np.repeat(np.arange(m), np.diff(rows_of.indptr))
    j, w = rows_of.indices, -rows_of.data
    off = j != idx[row]
    row, j, w = row[off], j[off], w[off]
    pos[idx] = np.arange(m)
    pj = pos[j]
    pos[idx] = -1
    inside = pj >= 0  # a neighbour that also changes is in the same region
    adjacency = sp.csr_matrix((np.ones(int(inside.sum()), dtype=np.int8), (row[inside], pj[inside])),
                              shape=(m, m))
    nc, region = csgraph.connected_components(adjacency, directed=False)
    a_idx = lab[idx]
    delta = np.bincount(region, weights=problem.unary[idx, new - 1] - problem.unary[idx, a_idx - 1],
                        minlength=nc)
    c_j = np.where(inside, new[np.maximum(pj, 0)], lab[j])
    change = w * ((new[row] != c_j).astype(np.float64) - (a_idx[row] != lab[j]))
    change[inside] *= 0.5  # an edge inside a region is seen from both of its ends
    delta += 2.0 * problem.lam * np.bincount(region[row], weights=change, minlength=nc)
    take = delta < -1e-9 * max(1.0, float(np.abs(delta).max()))
    if not take.any():
        return 0
    sel = take[region]
    lab[idx[sel]] = new[sel]
    return int(take.sum())


def fuse(problem: MRFProblem, labels: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, int]:
    """Take ``candidate`` on each 8-connected region where it differs, if that lowers the energy.

    Parameters
    ----------
    problem : MRFProblem
    labels, candidate : numpy.ndarray
        ``(n,)`` integer labels in 1..K. Hard-constrained pixels never change.

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int64 labels (a new array), energy no higher than the input's.
    moved : int
        Number of regions taken.
    """
    lab = np.array(labels, dtype=np.int64).ravel()
    c = np.asarray(candidate, dtype=np.int64).ravel()
    idx = np.flatnonzero((lab != c) & (np.asarray(problem.hard).ravel() == 0))
    moved = _fuse_at(problem, lab, idx, c[idx], np.full(lab.size, -1, dtype=np.int64))
    return lab, moved


def fuse_level_sets(problem: MRFProblem, labels: np.ndarray, snapshots: Iterable[np.ndarray],
                    thresholds: Iterable[float] = THRESHOLDS) -> tuple[np.ndarray, int]:
    """Fuse ``labels`` with every level-set proposal of every snapshot, in turn.

    The proposal for label ``c`` and threshold ``t`` is ``labels`` with ``c`` wherever ``x_c > t``.

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    snapshots : iterable of numpy.ndarray
        ``(n, K)`` label weights of continuous iterates.
    thresholds : iterable of float

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int64 labels, energy no higher than the input's.
    moved : int
        Number of regions taken.
    """
    lab = np.array(labels, dtype=np.int64).ravel()
    free = np.asarray(problem.hard).ravel() == 0
    thresholds = tuple(thresholds)
    pos = np.full(lab.size, -1, dtype=np.int64)
    moved = 0
    for weights in snapshots:
        # only pixels whose weights are not already the one-hot of their label can differ
        own = weights[np.arange(problem.n), lab - 1]
        span = np.flatnonzero(free & (own < 1.0 - 1e-6))
        ws = weights[span]
        for t in thresholds:
            for c in range(weights.shape[1]):
                at = span[(ws[:, c] > t) & (lab[span] != c + 1)]
                moved += _fuse_at(problem, lab, at, np.full(at.size, c + 1, dtype=np.int64), pos)
    log.debug("level-set fusion: %d regions taken", moved)
    return lab, moved
