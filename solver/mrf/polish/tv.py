"""TV-relaxation proposals for a K = 2 polish.

With weak data (a rectangle, a few short strokes) ℓ2-box ADMM can settle on a labelling that
differs from the optimum in a whole region, one that no level set of its own iterates outlines
(its relaxation is quadratic in the pairwise term, so flat data leaves it undecided). For two
labels the TV (ℓ1) form of the same energy has a tight relaxation; a few hundred linearized-ADMM
steps on it (:func:`solver.mrf.polish.tv_kernels.tv_iterate`), started from the polish's
labelling, outline such regions, and their level sets are fused like ADMM's own
(:func:`solver.mrf.polish.fusion.fuse_level_sets_into`): each region is taken only if it lowers
the energy. Tuned and measured in docs/decisions.md, "TV proposals for two labels".
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from solver.mrf.build.problem import MRFProblem
from solver.mrf.polish import tv_kernels
from solver.mrf.polish.fusion import Snapshot, Workspace, fuse_level_sets_into

log = logging.getLogger(__name__)


def tv_relaxation(problem: MRFProblem, lab: np.ndarray, iterations: int, step: float,
                  tol: float = 1e-3) -> tuple[np.ndarray, int]:
    """Approximate minimiser of the TV relaxation of a K = 2 energy, started from ``lab``.

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem.
    lab : numpy.ndarray
        ``(n,)`` 0-based labels to start from (hard pixels keep theirs).
    iterations : int
        Most primal-dual steps.
    step : float
        The primal step scale relative to the largest pairwise weight ``2 lam``.
    tol : float
        Stop once 25 steps move no pixel's value by more than this.

    Returns
    -------
    s : numpy.ndarray
        ``(n,)`` float64 weight of label 2 per pixel, in [0, 1].
    steps : int
        Steps run.
    """
    if problem.k != 2:
        raise ValueError(f"the TV relaxation is for two labels, not K = {problem.k}")
    upper = sp.triu(problem.laplacian, k=1, format="coo")  # each edge once, i < j
    ei = upper.row.astype(np.int64)
    ej = upper.col.astype(np.int64)
    c = -2.0 * float(problem.lam) * upper.data.astype(np.float64)
    u = np.ascontiguousarray(problem.unary[:, 1] - problem.unary[:, 0], dtype=np.float64)
    free = np.asarray(problem.hard).ravel() == 0
    s = np.asarray(lab, dtype=np.float64).copy()
    p = np.zeros(c.size)
    gamma = step / max(2.0 * float(problem.lam), 1e-300)
    steps = tv_kernels.tv_iterate(ei, ej, c, u, free, s, p, gamma, int(iterations), float(tol))
    return s, int(steps)


def fuse_tv_into(problem: MRFProblem, lab: np.ndarray, iterations: int, step: float,
                 thresholds: tuple[float, ...], workspace: Workspace | None = None) -> int:
    """Fuse the level sets of :func:`tv_relaxation` (from ``lab``) into ``lab`` in place.

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem.
    lab : numpy.ndarray
        ``(n,)`` 0-based labels, changed in place; the energy never rises.
    iterations, step : int, float
        As :func:`tv_relaxation`.
    thresholds : tuple of float
        Levels ``t`` whose sets ``{s > t}`` are proposed.
    workspace : Workspace, optional
        The polish's shared work arrays.

    Returns
    -------
    int
        Regions taken.
    """
    s, steps = tv_relaxation(problem, lab, iterations, step)
    weights = np.empty((s.size, 2), dtype=np.float32)
    weights[:, 1] = s
    weights[:, 0] = 1.0 - s
    moved = fuse_level_sets_into(problem, lab, [Snapshot.from_dense(weights)], thresholds,
                                 max_pixels=None, workspace=workspace)
    log.debug("TV proposals: %d steps, %d regions taken", steps, moved)
    return moved
