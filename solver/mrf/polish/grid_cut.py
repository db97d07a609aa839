"""Binary s-t min-cut on a pixel grid with PyMaxflow's grid calls (shared by the yardsticks
and the polish's swap repair, :mod:`solver.mrf.polish.swap`).

Convention: a node on the source side takes binary value 0, on the sink side value 1.  A node
with value 1 pays its ``cost1`` (its source->node edge is cut), with value 0 its ``cost0``; a
directed edge ``p -> q`` of capacity ``c`` is paid when ``p`` is 0 and ``q`` is 1.
"""

from __future__ import annotations

import logging

import maxflow
import numpy as np

from solver.mrf.build.graph import NEIGHBOUR_OFFSETS, GridGraph

logger = logging.getLogger(__name__)


def direction_masks(graph: GridGraph) -> list[tuple[tuple[int, int], np.ndarray]]:
    """For each forward neighbour offset, a boolean mask selecting the graph's edges along it."""
    w = graph.shape[1]
    dr = graph.j // w - graph.i // w
    dc = graph.j % w - graph.i % w
    return [(off, (dr == off[0]) & (dc == off[1])) for off in NEIGHBOUR_OFFSETS]


def _structure(offset: tuple[int, int]) -> np.ndarray:
    """3x3 PyMaxflow structure with a single edge towards ``offset``."""
    s = np.zeros((3, 3))
    s[1 + offset[0], 1 + offset[1]] = 1.0
    return s


def binary_grid_cut(
    graph: GridGraph,
    cost0: np.ndarray,
    cost1: np.ndarray,
    cap_forward: np.ndarray,
    cap_backward: np.ndarray | None = None,
    force0: np.ndarray | None = None,
    force1: np.ndarray | None = None,
) -> np.ndarray:
    """Minimise ``sum_p cost_{x_p}(p) + sum_e cap_e [x_i = 0, x_j = 1] (+ backward)`` exactly.

    Parameters
    ----------
    graph : GridGraph
        Grid graph whose edge list ``(i, j)`` indexes ``cap_forward``/``cap_backward``.
    cost0, cost1 : numpy.ndarray
        ``(n,)`` costs of value 0 and 1 (any sign; shifted internally).
    cap_forward : numpy.ndarray
        ``(e,)`` non-negative capacities of edges ``i -> j``.
    cap_backward : numpy.ndarray, optional
        ``(e,)`` capacities of edges ``j -> i``; None means symmetric (equal to forward).
    force0, force1 : numpy.ndarray, optional
        ``(n,)`` bool masks of nodes that must take value 0 / 1.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` bool, True where the optimal value is 1.
    """
    h, w = graph.shape
    lo = np.minimum(cost0, cost1)
    c0 = np.asarray(cost0, dtype=np.float64) - lo
    c1 = np.asarray(cost1, dtype=np.float64) - lo
    total = float(c0.sum() + c1.sum() + cap_forward.sum())
    if cap_backward is not None:
        total += float(cap_backward.sum())
    big = 2.0 * total + 1.0
    if force0 is not None:
        c1 = np.where(force0, big, c1)
    if force1 is not None:
        c0 = np.where(force1, big, c0)
    g = maxflow.Graph[float]()
    nodes = g.add_grid_nodes((h, w))
    for off, mask in direction_masks(graph):
        if not mask.any():
            continue
        src = graph.i[mask]
        fwd = np.zeros(h * w)
        fwd[src] = cap_forward[mask]
        struct = _structure(off)
        if cap_backward is None:
            g.add_grid_edges(nodes, weights=fwd.reshape(h, w), structure=struct, symmetric=True)
            continue
        g.add_grid_edges(nodes, weights=fwd.reshape(h, w), structure=struct, symmetric=False)
        bwd = np.zeros(h * w)
        bwd[graph.j[mask]] = cap_backward[mask]
        back = _structure((-off[0], -off[1]))
        g.add_grid_edges(nodes, weights=bwd.reshape(h, w), structure=back, symmetric=False)
    g.add_grid_tedges(nodes, c1.reshape(h, w), c0.reshape(h, w))
    flow = g.maxflow()
    logger.debug("binary_grid_cut: %d nodes, max flow %.6g", h * w, flow)
    return np.asarray(g.get_grid_segments(nodes)).ravel()
