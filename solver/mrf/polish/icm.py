"""Pixel moves: colour-parallel iterated conditional modes, and pair moves.

Every move is exact and taken only when it lowers the energy. The moves run as compiled kernels
(:mod:`solver.mrf.polish.icm_kernels`) on the graph arrays of :mod:`solver.mrf.build.stencil`.
"""

from __future__ import annotations

import logging

import numpy as np

from solver.backend.threads import threaded
from solver.mrf.build.problem import MRFProblem
from solver.mrf.build.stencil import Potts, graph_arrays, potts_of
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish.moves import documented

log = logging.getLogger(__name__)


@documented
def icm(problem: MRFProblem, labels: np.ndarray, max_sweeps: int = 30,
        since: np.ndarray | None = None) -> np.ndarray:
    """Improve a labelling by colour-parallel ICM; hard-constrained pixels never change.

    No two pixels of the same colour class ``(row % 2, col % 2)`` are 8-neighbours, so all pixels
    of one class move to their best label at once without interacting; each sweep visits the
    four classes in turn. After the first sweep only neighbours of pixels that moved are
    evaluated again (:func:`solver.mrf.polish.icm_kernels.icm_sweeps`).

    Parameters
    ----------
    %(problem_labels)s
    max_sweeps : int
        Limit on full sweeps over the four colour classes.
    since : numpy.ndarray, optional
        A labelling that ICM cannot improve and from which ``labels`` was made (by some other
        move): only the pixels that changed and their neighbours can move, so only they are
        evaluated at first. The result is the same as without ``since``, for less work.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels with ``problem.energy(result) <= problem.energy(labels)``; no
        single free pixel can lower the energy by changing its label (unless ``max_sweeps``
        ran out).
    """
    lab = kernels.zero_based(labels)
    icm_into(problem, lab, max_sweeps, None if since is None else kernels.zero_based(since))
    return kernels.one_based(lab, problem.shape)


def icm_into(problem: MRFProblem, lab: np.ndarray, max_sweeps: int = 30,
             since: np.ndarray | None = None) -> None:
    """:func:`icm` on ``(n,)`` int64 0-based labels, changed in place (``since`` 0-based too):
    the region moves' rounds, which work on such labels, skip four conversions of the image."""
    movable = problem.movable
    graph = graph_arrays(problem)
    if since is None:
        active = movable.copy()
    else:
        active = kernels.around_changes(*graph[:2], *graph[3:], lab, since, movable)
    moves = threaded(kernels.icm_sweeps, Potts(*graph, problem.unary, 2.0 * problem.lam), lab,
                     movable, active, problem.shape[1], max_sweeps, kernels.ICM_CHUNK)
    log.debug("ICM: %d moves", moves)


@documented
def pair_moves(problem: MRFProblem, labels: np.ndarray, max_sweeps: int = 10, *,
               icm_optimal: bool = False) -> np.ndarray:
    """Move two neighbouring pixels of one label together, then ICM again if any moved.

    A sliver two pixels wide can cost less in the other label while each of its pixels alone
    would raise the energy, so ICM keeps it; only pairs with a pixel on a label boundary are
    tried (:func:`solver.mrf.polish.icm_kernels.pair_moves`). Hard pixels never change.

    Parameters
    ----------
    %(problem_labels)s
    max_sweeps : int
        Limit on sweeps over the pixels.
    icm_optimal : bool
        ``labels`` is an ICM result, so the ICM afterwards need only look around the moves.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels with energy no higher than the input's.
    """
    lab = kernels.zero_based(labels)
    pair_moves_into(problem, lab, max_sweeps, lab.copy() if icm_optimal else None)
    return kernels.one_based(lab, problem.shape)


def pair_moves_into(problem: MRFProblem, lab: np.ndarray, max_sweeps: int = 10,
                    before: np.ndarray | None = None) -> int:
    """:func:`pair_moves` on ``(n,)`` int64 0-based labels, changed in place; ``before``, if
    given, holds a copy of them that is an ICM fixed point (it is read, not kept). Returns the
    number of pairs moved."""
    movable = problem.movable
    moved = kernels.pair_moves(potts_of(problem), lab, movable, max_sweeps)
    log.debug("pair moves: %d", moved)
    if moved:
        icm_into(problem, lab, since=before)
    return moved
