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
from solver.mrf.polish.stencil import grid_stencil

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
    u = problem.unary[:, 1] - problem.unary[:, 0]
    free = np.asarray(problem.hard).ravel() == 0
    two_lam = 2.0 * float(problem.lam)
    gamma = step / max(two_lam, 1e-300)
    stencil, offsets = grid_stencil(problem)
    if stencil.shape[0] == problem.n:
        # float32, and each forward edge's cost (0: none) by direction: half the stencil's
        # entries, a quarter of its bytes
        edge = stencil[:, 4:] <= 0.0
        cost = np.ascontiguousarray(
            np.where(edge, -two_lam * stencil[:, 4:], 0.0).astype(np.float32).T)
        deg = np.count_nonzero(stencil <= 0.0, axis=1)
        tau = (gamma / np.maximum(deg, 1)).astype(np.float32)
        s32 = np.asarray(lab, dtype=np.float32).copy()
        steps, sparse = tv_kernels.tv_iterate_grid(cost, offsets, u.astype(np.float32), free,
                                                   tau, s32, np.float32(0.5 / gamma),
                                                   int(iterations), float(tol),
                                                   tv_kernels.SPARSE_BELOW)
        log.debug("TV relaxation: %d steps, %d of them sparse", steps, sparse)
        s = s32.astype(np.float64)
    else:  # (no grid: the Laplacian's upper triangle, each edge once)
        s = np.asarray(lab, dtype=np.float64).copy()
        upper = sp.triu(problem.laplacian, k=1, format="coo")
        c = -two_lam * upper.data.astype(np.float64)
        steps = tv_kernels.tv_iterate(upper.row.astype(np.int64), upper.col.astype(np.int64),
                                      c, np.ascontiguousarray(u, dtype=np.float64), free, s,
                                      np.zeros(c.size), gamma, int(iterations), float(tol))
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


def fuse_tv(problem: MRFProblem, labels: np.ndarray, iterations: int, step: float,
            thresholds: tuple[float, ...]) -> tuple[np.ndarray, int]:
    """:func:`fuse_tv_into` on 1-based labels, returning new ones.

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem.
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..2.
    iterations, step, thresholds
        As :func:`fuse_tv_into`.

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int32 labels in 1..2, energy no higher than the input's.
    moved : int
        Regions taken.
    """
    lab = np.subtract(np.asarray(labels).reshape(-1), 1, dtype=np.int32, casting="unsafe")
    moved = fuse_tv_into(problem, lab, iterations, step, thresholds)
    return lab + 1, moved


def tv_relaxation_area(problem: MRFProblem, lab: np.ndarray, area: tuple[float, float],
                       weights: np.ndarray, iterations: int, step: float) -> np.ndarray:
    """:func:`tv_relaxation` with the area of label 2, ``sum weights_i s_i``, kept within
    ``area`` (a K = 2 problem with area bounds; an 8-neighbour grid).

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem on a grid with a stencil (:mod:`solver.mrf.polish.stencil`).
    lab : numpy.ndarray
        ``(n,)`` 0-based labels to start from.
    area : tuple of float
        Least and most area of label 2 (in the units of ``weights``).
    weights : numpy.ndarray
        ``(n,)`` area of each pixel.
    iterations, step : int, float
        As :func:`tv_relaxation`.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 weight of label 2 per pixel, in [0, 1].
    """
    if problem.k != 2:
        raise ValueError(f"the TV relaxation is for two labels, not K = {problem.k}")
    stencil, offsets = grid_stencil(problem)
    if stencil.shape[0] != problem.n:
        raise ValueError("the TV relaxation with an area bound needs an 8-neighbour grid")
    u = (problem.unary[:, 1] - problem.unary[:, 0]).astype(np.float32)
    free = np.asarray(problem.hard).ravel() == 0
    two_lam = 2.0 * float(problem.lam)
    gamma = step / max(two_lam, 1e-300)
    w = np.asarray(weights, dtype=np.float32)
    cost = np.ascontiguousarray(
        np.where(stencil[:, 4:] <= 0.0, -two_lam * stencil[:, 4:], 0.0).astype(np.float32).T)
    deg = np.count_nonzero(stencil <= 0.0, axis=1)
    tau = (gamma / (deg + w)).astype(np.float32)
    s32 = np.asarray(lab, dtype=np.float32).copy()
    _, nu = tv_kernels.tv_iterate_grid_area(cost, offsets, u, free, tau, s32,
                                            np.float32(0.5 / gamma), w, float(area[0]),
                                            float(area[1]), 1.0 / (gamma * float(w.sum())),
                                            int(iterations))
    log.debug("TV relaxation under an area bound: multiplier %.4g", nu)
    return s32.astype(np.float64)
