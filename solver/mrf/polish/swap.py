"""αβ-swap moves that price apart pairs: the repair of last resort, and the Lagrangian
yardstick's move.

Single-pixel moves cannot undo every conflict between apart labels. With two pairs apart on
four labels, (1, 3) and (2, 4), a 2 × 2 block of an 8-neighbour grid holds at most two labels,
so a loop of pixels around a point where all four labels meet in turn 1, 2, 3, 4 winds once
round the cycle 1 – 2 – 3 – 4 – 1, and in a feasible labelling every loop winds zero times:
the junction can only go by changing labels all along a path from it to the image's edge (or
to a junction of the other sense), or by a whole region giving way. An αβ-swap (Boykov et al.)
lets every pixel of two labels take either, exactly, by one min-cut; with a large finite
penalty on each neighbouring pair of apart labels, a few sweeps of swaps over every pair of
labels reach a labelling without conflicts from one that has a few, and stay close to its
energy otherwise (each swap is the best move of its kind for the priced energy).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from solver.mrf.build.graph import GridGraph, edge_ends
from solver.mrf.polish.grid_cut import binary_grid_cut

if TYPE_CHECKING:
    from solver.mrf.build.problem import MRFProblem

log = logging.getLogger(__name__)

#: Sweeps over every pair of labels the repair may take.
REPAIR_SWEEPS = 4


def apart_penalty(problem: MRFProblem) -> np.ndarray:
    """``(K, K)``: the price of one neighbouring pair of apart labels, ten times more than any
    pixel's unaries and edges can differ by (so a swap takes a conflict only where it must),
    and 0 for the other pairs."""
    d = problem.unary
    spread = float(np.max(d.max(axis=1) - d.min(axis=1))) if d.size else 1.0
    big = 10.0 * (spread + 16.0 * problem.lam * float(np.max(problem.graph.weights, initial=1.0)))
    return np.where(problem.constraints.apart, big, 0.0)


def swap_move(problem: MRFProblem, unary: np.ndarray, labels: np.ndarray, a: int, b: int,
              penalty: np.ndarray) -> np.ndarray:
    """The best labelling reachable by letting the pixels labelled ``a`` or ``b`` swap between
    the two.

    Parameters
    ----------
    problem : MRFProblem
        On a :class:`~solver.mrf.build.graph.GridGraph` of 8-neighbour edges; its hard pixels
        keep their labels.
    unary : numpy.ndarray
        ``(n, K)`` unaries (the problem's, or priced by area multipliers).
    labels : numpy.ndarray
        ``(n,)`` 0-based labels.
    a, b : int
        The two labels (0-based).
    penalty : numpy.ndarray
        ``(K, K)`` price of each neighbouring pair of labels, on top of ``2 lam W [l_i != l_j]``
        (:func:`apart_penalty`).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` new 0-based labels (``labels`` is not changed).
    """
    g = problem.graph
    gi, gj = edge_ends(g)
    cap = 2.0 * problem.lam * g.weights
    li, lj = labels[gi], labels[gj]
    part = (labels == a) | (labels == b)
    pi, pj = part[gi], part[gj]
    n = problem.n
    cost0 = unary[:, a].astype(np.float64)  # value 0: label a, value 1: label b
    cost1 = unary[:, b].astype(np.float64)
    # an edge to a pixel that keeps its label becomes a unary of the pixel that may swap
    for here, lthere, ok in ((gi, lj, pi & ~pj), (gj, li, pj & ~pi)):
        sel = np.flatnonzero(ok)
        other = lthere[sel]
        for value, cost in ((a, cost0), (b, cost1)):
            pay = cap[sel] * (other != value) + penalty[value, other]
            cost += np.bincount(here[sel], weights=pay, minlength=n)
    inner = np.where(pi & pj, cap + penalty[a, b], 0.0)
    hard = np.asarray(problem.hard).ravel()
    force0 = ~part | (hard == a + 1)
    force1 = part & (hard == b + 1)
    one = binary_grid_cut(g, cost0, cost1, inner, force0=force0, force1=force1)
    out = labels.copy()
    out[part] = np.where(one[part], b, a)
    return out


def conflicts(problem: MRFProblem, labels: np.ndarray) -> int:
    """The number of edges between pixels of apart labels in 0-based ``labels``."""
    gi, gj = edge_ends(problem.graph)
    return int(np.count_nonzero(problem.constraints.apart[labels[gi], labels[gj]]))


def swap_repair(problem: MRFProblem, lab: np.ndarray) -> int:
    """Remove the conflicts between apart labels from 0-based ``lab`` (in place) by sweeps of
    priced αβ-swaps over every pair of labels (see the module docstring), at most
    :data:`REPAIR_SWEEPS`, stopping at the first labelling without one.

    Parameters
    ----------
    problem : MRFProblem
        With apart pairs; a graph other than a :class:`~solver.mrf.build.graph.GridGraph` is
        left to the single-pixel repair (nothing changes).
    lab : numpy.ndarray
        ``(n,)`` 0-based labels, changed in place.

    Returns
    -------
    int
        The edges still in conflict (0 when repaired).
    """
    left = conflicts(problem, lab)
    if left == 0 or not isinstance(problem.graph, GridGraph):
        return left
    penalty = apart_penalty(problem)
    labels = lab.astype(np.int64)
    k = problem.k
    before = left
    for sweep in range(REPAIR_SWEEPS):
        for a in range(k):
            for b in range(a + 1, k):
                labels = swap_move(problem, problem.unary, labels, a, b, penalty)
        left = conflicts(problem, labels)
        log.debug("swap repair: sweep %d, %d edges in conflict", sweep + 1, left)
        if left == 0:
            break
    lab[:] = labels
    log.info("swap repair: %d edges in conflict, %d after", before, left)
    return left
