"""The paper's "LP" baseline: the simplex/box relaxation of the MRF, solved, then rounded."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable

import numpy as np

from solver.admm.projections import project_simplex_rows as _project_simplex_rows
from solver.admm.sums import BoxWithSums, round_k2_sums
from solver.backend import CPU

if TYPE_CHECKING:
    from solver.mrf.build.problem import MRFProblem
    from solver.mrf.result import MRFResult

__all__ = ["lp_relaxation", "lp_with_area", "project_simplex_rows"]

logger = logging.getLogger(__name__)


def project_simplex_rows(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of an ``(n, K)`` array onto the probability simplex.

    Thin numpy wrapper of :func:`solver.admm.projections.project_simplex_rows` (which ADMM also
    uses).
    """
    return _project_simplex_rows(v, np)


def _fista(
    grad: Callable[[np.ndarray], np.ndarray],
    project: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    lipschitz: float,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, int]:
    """Accelerated projected gradient with adaptive restart; stops when max |dx| < tol."""
    step = 1.0 / max(lipschitz, 1e-12)
    x = project(x0)
    y, t = x.copy(), 1.0
    for it in range(1, max_iter + 1):
        x_new = project(y - step * grad(y))
        dx = x_new - x
        if np.max(np.abs(dx)) < tol:
            return x_new, it
        if np.vdot(y - x_new, dx) > 0:  # momentum points uphill: restart
            t = 1.0
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        y = x_new + ((t - 1.0) / t_new) * dx
        x, t = x_new, t_new
    return x, max_iter


def lp_relaxation(
    problem: "MRFProblem", *, max_iter: int = 2000, tol: float = 1e-4
) -> tuple[np.ndarray, np.ndarray]:
    """Solve the relaxed problem over the simplex (box for K = 2) and round it.

    Minimises ``lam * x^T (I_K kron L) x + d^T x`` over ``x >= 0`` with ``sum_k x_ik = 1`` by
    FISTA with a vectorised simplex projection (for K = 2 over ``t = x_1`` in ``[0, 1]^n``,
    using ``x^T (I kron L) x = 2 t^T L t``), hard pixels held at their labels, then rounds by
    argmax.  The step is ``1 / Lipschitz`` with the Gershgorin bound ``lambda_max(L) <= 2
    max degree``.

    Parameters
    ----------
    problem : MRFProblem
        The problem.
    max_iter : int, default 2000
        Maximum number of gradient iterations.
    tol : float, default 1e-4
        Stop when no entry of x changes by more than this in one iteration.

    Returns
    -------
    labels : numpy.ndarray
        ``(H, W)`` int32 rounded labels in 1..K.
    x : numpy.ndarray
        ``(n, K)`` float64 relaxed solution (pixel-major).
    """
    t0 = time.perf_counter()
    lap, lam, d, hard = problem.laplacian, problem.lam, problem.unary, problem.hard
    fixed = hard > 0
    lmax = 2.0 * float(lap.diagonal().max(initial=0.0))
    if problem.k == 2:
        lin = d[:, 0] - d[:, 1]
        target = (hard == 1).astype(np.float64)

        def project(t: np.ndarray) -> np.ndarray:
            return np.where(fixed, target, np.clip(t, 0.0, 1.0))

        t_opt, iters = _fista(lambda t: 4.0 * lam * (lap @ t) + lin, project,
                              (lin < 0).astype(np.float64), 4.0 * lam * lmax, max_iter, tol)
        x = np.column_stack([t_opt, 1.0 - t_opt])
    else:
        onehot = np.eye(problem.k)[np.maximum(hard, 1) - 1]

        def project(v: np.ndarray) -> np.ndarray:
            return np.where(fixed[:, None], onehot, project_simplex_rows(v))

        x0 = np.eye(problem.k)[d.argmin(axis=1)]
        x, iters = _fista(lambda v: 2.0 * lam * (lap @ v) + d, project, x0,
                          2.0 * lam * lmax, max_iter, tol)
    labels = np.where(fixed, hard, x.argmax(axis=1) + 1).astype(np.int32)
    logger.debug("lp_relaxation: %d pixels, K=%d, %d iterations in %.3f s", problem.n,
                 problem.k, iters, time.perf_counter() - t0)
    return labels.reshape(problem.shape), x


def lp_with_area(problem: "MRFProblem", *, max_iter: int = 5000, tol: float = 1e-6) -> "MRFResult":
    """The K = 2 relaxation with area bounds: label 1's weights ``t`` in the box with its
    weighted sum bounded (:class:`solver.admm.sums.BoxWithSums`), solved by FISTA, then
    rounded to the pixels of largest weight that fit the bounds.

    The relaxation's minimum is a lower bound on the constrained optimum (the quadratic form is
    convex and equals the energy at binary points); FISTA reaches it to ``tol``.

    Returns
    -------
    MRFResult
        ``bound`` is the relaxed objective at FISTA's last iterate.
    """
    from solver.reference.parametric import answer, area_bounds_k2  # noqa: PLC0415

    t0 = time.perf_counter()
    lap, lam, d, hard = problem.laplacian, problem.lam, problem.unary, problem.hard
    c = problem.constraints
    if problem.k != 2 or c is None or c.has_apart:
        raise ValueError("the relaxation with area bounds takes K = 2 without apart pairs")
    lo, hi = area_bounds_k2(problem)
    w = c.pixel_weights(problem.n)
    free = hard == 0
    fixed1 = float(w[hard == 1].sum())
    box = BoxWithSums(1, w[free], [lo - fixed1], [hi - fixed1])
    target = (hard == 1).astype(np.float64)
    lmax = 2.0 * float(lap.diagonal().max(initial=0.0))
    lin = d[:, 0] - d[:, 1]

    def project(t: np.ndarray) -> np.ndarray:
        out = target.copy()
        out[free] = box.project(np.ascontiguousarray(t[free]), CPU)
        return out

    t_opt, iters = _fista(lambda t: 4.0 * lam * (lap @ t) + lin, project,
                          (lin < 0).astype(np.float64), 4.0 * lam * lmax, max_iter, tol)
    relaxed = 2.0 * lam * float(t_opt @ (lap @ t_opt)) + float(lin @ t_opt) + float(d[:, 1].sum())
    x = target.copy()
    x[free] = round_k2_sums(t_opt[free], w[free], lo - fixed1, hi - fixed1)
    labels = np.where(x > 0.5, 1, 2).astype(np.int32)
    energy = problem.energy(labels)
    logger.debug("lp_with_area: %d iterations, relaxed %.6g, rounded %.6g", iters, relaxed,
                 energy)
    return answer(problem, labels, energy, relaxed, "lp", "relaxation with area bounds", t0)
