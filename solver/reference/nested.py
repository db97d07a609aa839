"""Nested regions with a margin, exactly: the layered min-cut of Delong & Boykov (ICCV 2009).

K = 3 with labels ``outer`` and ``inner`` apart (they never touch), the third label ``middle``
lying between them. Two binary layers describe a labelling: ``x_p = [p is middle or inner]`` and
``y_p = [p is inner]``, with ``y_p <= x_q`` for ``p`` and each of its 8 neighbours ``q`` (an
inner pixel, and every pixel around it, lie inside the object: inner never touches outer). The
unaries split as ``d_outer + (d_middle - d_outer) x + (d_inner - d_middle) y``, and a Potts
pair costs ``w [x_p != x_q] + w [y_p != y_q]``, which equals the Potts cost ``w [l_p != l_q]`` on
every pair the constraint allows (outer beside inner would cost ``2 w``, but is forbidden). Every
term is submodular, so one max-flow over the ``2 n`` nodes gives the global optimum of the
constrained problem.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import maxflow
import numpy as np

from solver.mrf.polish.grid_cut import direction_masks
from solver.reference.parametric import answer

if TYPE_CHECKING:
    from solver.mrf.build.constraints import LevelConstraints
    from solver.mrf.build.problem import MRFProblem
    from solver.mrf.result import MRFResult

log = logging.getLogger(__name__)


def nesting_labels(problem: MRFProblem) -> tuple[int, int, int] | None:
    """``(outer, middle, inner)`` (1-based) when the problem's constraints are one nesting: K = 3,
    one apart pair and no area bound (the pair's order is immaterial); None otherwise."""
    return nesting_roles(problem.constraints) if problem.k == 3 else None


def nesting_roles(level: LevelConstraints | None) -> tuple[int, int, int] | None:
    """:func:`nesting_labels` of constraints in solver form (None: none)."""
    if level is None or level.k != 3 or level.has_area:
        return None
    c = level
    pairs = [(a, b) for a in range(3) for b in range(a + 1, 3) if c.apart[a, b]]
    if len(pairs) != 1:
        return None
    a, b = pairs[0]
    return a + 1, 3 - a - b + 1, b + 1


def nested_mincut(problem: MRFProblem) -> MRFResult:
    """The optimal labelling of a nesting problem (see the module docstring).

    Parameters
    ----------
    problem : MRFProblem
        K = 3 whose only constraint is one apart pair.

    Returns
    -------
    MRFResult
        Optimal labels; ``bound`` is their energy.
    """
    t0 = time.perf_counter()
    roles = nesting_labels(problem)
    if roles is None:
        raise ValueError("the layered min-cut takes K = 3 with one apart pair and no area bound")
    outer, middle, inner = roles
    h, w = problem.shape
    d = problem.unary
    cost_x = d[:, middle - 1] - d[:, outer - 1]   # x = 1: middle or inner rather than outer
    cost_y = d[:, inner - 1] - d[:, middle - 1]   # y = 1: inner rather than middle
    caps = 2.0 * problem.lam * problem.graph.weights
    big = 2.0 * (np.abs(cost_x).sum() + np.abs(cost_y).sum() + 2.0 * caps.sum()) + 1.0
    hard = np.asarray(problem.hard).ravel()
    # terminal capacities: source cap paid at value 1, sink cap at value 0 (non-negative)
    src = np.stack([np.maximum(cost_x, 0.0), np.maximum(cost_y, 0.0)])
    snk = np.stack([np.maximum(-cost_x, 0.0), np.maximum(-cost_y, 0.0)])
    for label, xv, yv in ((outer, 0, 0), (middle, 1, 0), (inner, 1, 1)):
        fixed = hard == label
        for layer, value in ((0, xv), (1, yv)):
            (snk if value else src)[layer][fixed] = big  # forbid the other value
    g = maxflow.Graph[float]()
    nodes = g.add_grid_nodes((2, h, w))
    for (dr, dc), mask in direction_masks(problem.graph):
        if not mask.any():
            continue
        fwd = np.zeros(h * w)
        fwd[problem.graph.i[mask]] = caps[mask]
        struct = np.zeros((3, 3, 3))
        struct[1, 1 + dr, 1 + dc] = 1.0
        g.add_grid_edges(nodes, weights=np.stack([fwd, fwd]).reshape(2, h, w), structure=struct,
                         symmetric=True)
    # x_q -> y_p for p = q and its 8 neighbours: cut (infinitely) when x_q = 0 and y_p = 1
    struct = np.zeros((3, 3, 3))
    struct[2] = 1.0
    weights = np.zeros((2, h, w))
    weights[0] = big
    g.add_grid_edges(nodes, weights=weights, structure=struct, symmetric=False)
    g.add_grid_tedges(nodes, src.reshape(2, h, w), snk.reshape(2, h, w))
    g.maxflow()
    seg = np.asarray(g.get_grid_segments(nodes)).reshape(2, -1)
    labels = np.full(h * w, outer, np.int32)
    labels[seg[0]] = middle
    labels[seg[0] & seg[1]] = inner
    energy = problem.energy(labels)
    log.info("layered min-cut: energy %.6g in %.3f s", energy, time.perf_counter() - t0)
    return answer(problem, labels, energy, energy, "mincut", "layered min-cut (nesting)", t0)
