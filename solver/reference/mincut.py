"""Exact K = 2 segmentation by s-t min-cut (PyMaxflow): the yardstick for ADMM."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import numpy as np

from solver.mrf.polish.grid_cut import binary_grid_cut

if TYPE_CHECKING:
    from solver.mrf.build.problem import MRFProblem

__all__ = ["mincut"]

logger = logging.getLogger(__name__)


def mincut(problem: "MRFProblem") -> np.ndarray:
    """Globally optimal labelling of a two-label problem.

    Label 1 is the source side, label 2 the sink side.  Each neighbour pair carries an edge
    of capacity ``2 * lam * W_ij`` both ways, unaries are terminal capacities (shifted to be
    non-negative) and hard constraints get a capacity larger than any finite cut, so the cut
    value equals ``problem.energy`` up to a constant and hard constraints hold exactly.

    Parameters
    ----------
    problem : MRFProblem
        Problem with ``k == 2``.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels in {1, 2}.

    Raises
    ------
    ValueError
        If ``problem.k != 2``.
    """
    if problem.k != 2:
        raise ValueError(f"mincut needs k = 2, got k = {problem.k}; use alpha_expansion")
    t0 = time.perf_counter()
    caps = 2.0 * problem.lam * problem.graph.weights
    sink = binary_grid_cut(
        problem.graph, problem.unary[:, 0], problem.unary[:, 1], caps,
        force0=problem.hard == 1, force1=problem.hard == 2,
    )
    labels = np.where(sink, 2, 1).astype(np.int32).reshape(problem.shape)
    logger.debug("mincut: %d pixels in %.3f s", problem.n, time.perf_counter() - t0)
    return labels
