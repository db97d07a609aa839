"""The layered TV relaxation of a nesting: three labels, one pair of them apart.

The constrained polish keeps a pair apart with moves of one label at a time (region, margin
and TV-relaxed expansion moves), and a joint change (a wedge of the inner label given to the
ring, a ring-and-core island) is out of their reach: on the bundled cameraman's nesting they
stopped 0.4-0.8% above the optimum. With labels ``a``, ``m``, ``b`` and ``a``, ``b`` apart the
problem is two nested binary layers (:mod:`solver.mrf.polish.layered_kernels`), and the TV
relaxation of the layers with their order rows is tight: once converged, both layers cut at any
level give a feasible minimiser. A few hundred steps from the polish's labelling outline the
joint change; its level sets are proposed whole and, as the other relaxations' (the area one of
:func:`solver.mrf.polish.constrained._tv_proposals`), the polish runs again from the best of
them and keeps the better end. Measured in docs/decisions.md, "Layered relaxation of a nesting".
"""

from __future__ import annotations

import logging

import numpy as np

from solver.backend.threads import threaded
from solver.mrf.build.problem import MRFProblem
from solver.mrf.options import PolishOptions
from solver.mrf.polish import layered_kernels
from solver.mrf.polish.fusion import Snapshot
from solver.mrf.polish.tv import grid_terms, start_value

log = logging.getLogger(__name__)


def nesting_labels(problem: MRFProblem) -> tuple[int, int, int] | None:
    """``(a, m, b)``, 0-based, of a problem with three labels, one apart pair ``a < b`` and no
    area bound (``m`` the label between them); None for any other problem.

    Parameters
    ----------
    problem : MRFProblem

    Returns
    -------
    tuple of int or None
    """
    c = problem.constraints
    if problem.k != 3 or c is None or c.has_area or not c.has_apart:
        return None
    pairs = np.argwhere(np.triu(np.asarray(c.apart), k=1))
    if len(pairs) != 1:
        return None
    a, b = (int(v) for v in pairs[0])
    return a, 3 - a - b, b


def layered_relaxation(problem: MRFProblem, lab: np.ndarray, labels: tuple[int, int, int],
                       iterations: int, step: float, tol: float = 1e-3, gap: float = 0.0
                       ) -> tuple[np.ndarray, np.ndarray, int, float] | None:
    """Steps on the layered TV relaxation from ``lab``.

    Parameters
    ----------
    problem : MRFProblem
        A nesting (:func:`nesting_labels`) on an 8-neighbour grid (a grid view,
        :mod:`solver.mrf.build.stencil`).
    lab : numpy.ndarray
        ``(n,)`` 0-based labels to start from (hard pixels keep theirs).
    labels : tuple of int
        ``(a, m, b)`` of :func:`nesting_labels`.
    iterations : int
        Most steps.
    step : float
        The primal step scale relative to the largest pairwise weight ``2 lam``.
    tol : float
        Stop once 25 steps move no value by more than this.
    gap : float
        Stop once ``lab`` (feasible) is proved within this fraction of its energy's magnitude
        of the relaxation's minimum: the duality gap of the start, checked every 25 steps.

    Returns
    -------
    u1, u2 : numpy.ndarray
        ``(n,)`` float32 layers in [0, 1]: ``u1`` the weight of "not ``a``", ``u2`` of ``b``.
    steps : int
        Steps run.
    start_gap : float
        The last duality gap of ``lab`` found, as a fraction of its energy's magnitude (inf
        before the first check).
    None
        When the problem has no grid view.
    """
    # a pixel's column holds its edges in both layers and its order rows (its own, and one per
    # neighbour): 2 deg + 1 entries, each of magnitude 1
    terms = grid_terms(problem, step, row=1.0, layers=2)
    if terms is None:
        return None
    cost, offsets, tau, gamma = terms
    a, m, b = labels
    u = problem.unary
    g1 = (u[:, m] - u[:, a]).astype(np.float32)
    g2 = (u[:, b] - u[:, m]).astype(np.float32)
    u1 = (lab != a).astype(np.float32)
    u2 = (lab == b).astype(np.float32)
    free = problem.movable
    # the start's value in the layered form (its energy less the constant sum of d_a), from the
    # same float32 terms as the kernel's dual value, so that the two compare
    start = start_value(cost, offsets, g1, u1) + start_value(cost, offsets, g2, u2)
    scale = max(1.0, abs(problem.energy(lab + 1)))
    grid = layered_kernels.LayeredGrid(cost, offsets, g1, g2, free, tau)
    steps, left = threaded(layered_kernels.layered_iterate, grid, u1, u2,
                           np.float32(0.5 / gamma), int(iterations), float(tol), start,
                           float(gap) * scale)
    return u1, u2, int(steps), float(left) / scale


def layered_level_set(u1: np.ndarray, u2: np.ndarray, labels: tuple[int, int, int],
                      t: float) -> np.ndarray:
    """Both layers cut at ``t``: ``b`` where both exceed it, ``m`` where only ``u1`` does, else
    ``a`` (0-based, int64).

    Parameters
    ----------
    u1, u2 : numpy.ndarray
        The layers (:func:`layered_relaxation`).
    labels : tuple of int
        ``(a, m, b)``.
    t : float
        The level.

    Returns
    -------
    numpy.ndarray
    """
    a, m, b = labels
    outer = u1 > t
    return np.where(outer & (u2 > t), b, np.where(outer, m, a)).astype(np.int64)


def layered_proposals(problem: MRFProblem, lab: np.ndarray, options: PolishOptions
                      ) -> list[tuple[Snapshot, np.ndarray | None]]:
    """A nesting's layered relaxation from 0-based ``lab`` as ``[(snapshot, start)]`` for the
    constrained polish: the layers' label weights (``1 - u1``, ``u1 - u2``, ``u2``) as a
    snapshot, and the best feasible level set of ``options.tv.thresholds`` where it is below
    ``lab``'s energy (None otherwise). Empty where it does not apply: not a nesting
    (:func:`nesting_labels`), ``options.constrained.layered_iterations`` 0, an image above
    ``options.constrained.tv_max_pixels``, no grid view; and where the relaxation's duality
    gap proves ``lab`` within ``options.constrained.relaxation_gap`` of the optimum.

    Parameters
    ----------
    problem : MRFProblem
    lab : numpy.ndarray
        ``(n,)`` 0-based feasible labels.
    options : PolishOptions

    Returns
    -------
    list of (Snapshot, numpy.ndarray or None)
    """
    labels = nesting_labels(problem)
    if (labels is None or options.constrained.layered_iterations <= 0
            or (options.constrained.tv_max_pixels is not None
                and problem.n > options.constrained.tv_max_pixels)):
        return []
    relaxed = layered_relaxation(problem, lab, labels, options.constrained.layered_iterations,
                                 options.tv.step, gap=options.constrained.relaxation_gap)
    if relaxed is None:
        return []
    u1, u2, steps, start_gap = relaxed
    if start_gap <= options.constrained.relaxation_gap:
        log.debug("layered relaxation: the start is within %.2g of the optimum after %d steps",
                  start_gap, steps)
        return []
    best, best_e = None, problem.energy(lab + 1)
    for t in options.tv.thresholds:
        cand = layered_level_set(u1, u2, labels, t)
        e = problem.energy(cand + 1)
        if e < best_e - 1e-9 * abs(best_e) and problem.feasible(cand + 1):
            best, best_e = cand, e
    log.debug("layered relaxation: %d steps, best level set %s", steps,
              "none below the start" if best is None else f"{best_e:.9g}")
    weights = np.empty((problem.n, 3), dtype=np.float32)
    a, m, b = labels
    weights[:, a] = 1.0 - u1
    weights[:, m] = np.maximum(u1 - u2, 0.0)
    weights[:, b] = u2
    return [(Snapshot.from_dense(weights), best)]
