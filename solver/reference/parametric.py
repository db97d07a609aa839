"""K = 2 with area bounds: Lagrangian (parametric) min-cut, the yardstick with a lower bound.

Adding ``mu`` to every pixel's label-1 cost and cutting gives the minimiser of
``E(x) + mu * area_1(x)``; its label-1 area falls as ``mu`` grows. So a search over ``mu`` finds
labellings on either side of the bounds ``[L, U]`` on label 1's area, and each cut gives a lower
bound on the constrained optimum (weak duality):

    g(mu) = min_x E(x) + mu (area_1(x) - U)   for mu >= 0   (area_1 > U at mu = 0)
    g(mu) = min_x E(x) + mu (area_1(x) - L)   for mu <= 0   (area_1 < L at mu = 0)

When the plain min-cut already lies within the bounds it is the constrained optimum. Otherwise the
best feasible labelling the search meets is reported; the area can jump over ``[L, U]`` between
two values of ``mu`` (several pixels change at once), so every cut met outside the bounds is also
brought within them by the cheapest single-pixel moves and settled by feasible ICM
(:func:`solver.mrf.polish.constrained.settle_feasible`), and the best of all these is kept: feasible,
but optimal only when its energy meets the bound.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import numpy as np

from solver.admm.records import CONVERGED
from solver.mrf.polish.constrained import settle_feasible
from solver.mrf.result import MRFResult
from solver.mrf.polish.grid_cut import binary_grid_cut

if TYPE_CHECKING:
    from solver.mrf.build.problem import MRFProblem

log = logging.getLogger(__name__)

#: Cuts a search may take (each is one max-flow over the image).
MAX_CUTS = 40


def answer(problem: MRFProblem, labels: np.ndarray, energy: float, bound: float | None,
           method: str, detail: str, t0: float) -> MRFResult:
    """A constrained yardstick's answer, as every solve gives one (:class:`MRFResult`).

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        The labels found, any shape of ``problem.n`` values in 1..K.
    energy : float
        Their energy.
    bound : float or None
        A lower bound on the constrained optimum, where the method proves one (the result is
        ``optimal`` when the energy meets it).
    method, detail : str
        The :func:`solver.mrf.solve_mrf` method it stands for, and what it ran.
    t0 : float
        ``time.perf_counter()`` at the start.

    Returns
    -------
    MRFResult
        Its ``constraints`` say whether each holds (``feasible``).
    """
    elapsed = time.perf_counter() - t0
    labels = np.asarray(labels, dtype=np.int32).reshape(problem.shape)
    return MRFResult(labels, float(energy), method, "cpu", 0, elapsed, CONVERGED,
                     constraints=problem.constraint_report(labels),
                     bound=None if bound is None else float(bound), detail=detail)


def area_bounds_k2(problem: MRFProblem) -> tuple[float, float]:
    """``(L, U)``: the bounds on label 1's area that a K = 2 problem's constraints imply."""
    c = problem.constraints
    n = float(problem.n if c.weights is None else np.sum(c.weights))
    return max(c.lo[0], n - c.hi[1]), min(c.hi[0], n - c.lo[1])


def _cut(problem: MRFProblem, mu: float) -> np.ndarray:
    """Labels (1/2, flat) minimising ``E + mu * area_1``."""
    w = problem.constraints.pixel_weights(problem.n)
    caps = 2.0 * problem.lam * problem.graph.weights
    sink = binary_grid_cut(problem.graph, problem.unary[:, 0] + mu * w, problem.unary[:, 1],
                           caps, force0=problem.hard == 1, force1=problem.hard == 2)
    return np.where(sink, 2, 1).astype(np.int32)


def parametric_mincut(problem: MRFProblem) -> MRFResult:
    """The best labelling of a K = 2 problem within its area bounds that a search over the
    Lagrange multiplier finds, and the Lagrangian lower bound (see the module docstring).

    Parameters
    ----------
    problem : MRFProblem
        ``k == 2``, with area bounds and no apart pairs.

    Returns
    -------
    MRFResult
    """
    t0 = time.perf_counter()
    c = problem.constraints
    if problem.k != 2 or c is None or c.has_apart:
        raise ValueError("the parametric min-cut takes K = 2 with area bounds only")
    lo, hi = area_bounds_k2(problem)
    w = c.pixel_weights(problem.n)

    def area(lab: np.ndarray) -> float:
        return float(w[lab == 1].sum())

    best: tuple[float, np.ndarray | None] = (np.inf, None)
    bound = -np.inf
    cuts = 0
    outside: dict[float, np.ndarray] = {}  # area -> the cheapest cut of that area beyond a bound

    def visit(mu: float) -> float:
        nonlocal best, bound, cuts
        lab = _cut(problem, mu)
        cuts += 1
        e, a = problem.energy(lab), area(lab)
        target = hi if mu >= 0 else lo
        bound = max(bound, e + mu * (a - target))
        if lo - 1e-9 <= a <= hi + 1e-9:
            if e < best[0]:
                best = (e, lab)
        elif a not in outside or e < problem.energy(outside[a]):
            outside[a] = lab
        return a

    a0 = visit(0.0)
    if lo - 1e-9 <= a0 <= hi + 1e-9:
        return answer(problem, best[1], best[0], best[0], "mincut", "parametric min-cut", t0)
    sign = 1.0 if a0 > hi else -1.0  # grow mu to shrink label 1, or below zero to grow it
    inside = (lambda a: a <= hi) if sign > 0 else (lambda a: a >= lo)
    near, far = 0.0, sign
    while not inside(visit(far)) and cuts < MAX_CUTS:
        near, far = far, 2.0 * far
    while cuts < MAX_CUTS and abs(far - near) > 1e-9 * max(1.0, abs(far)):
        mid = 0.5 * (near + far)
        if inside(visit(mid)):
            far = mid
        else:
            near = mid
    # (no feasible cut met: best is inf, and inf - bound <= 1e-9 * inf would read as optimal)
    optimal = best[1] is not None and abs(best[0] - bound) <= 1e-9 * max(1.0, abs(best[0]))
    if not optimal:
        # the area jumped over the bounds between two cuts (several pixels change at once):
        # each cut just outside, brought within the bounds by the cheapest single-pixel moves
        # and settled by feasible ICM, may beat the feasible cuts met
        for lab in outside.values():
            fixed = settle_feasible(problem, lab).ravel()
            e = problem.energy(fixed)
            if problem.feasible(fixed.reshape(problem.shape)) and e < best[0]:
                best = (e, fixed)
    if best[1] is None:  # (the moves ran out: only on contrived hard constraints)
        lab = settle_feasible(problem, outside[min(outside, key=lambda a: min(abs(a - lo),
                                                                            abs(a - hi)))])
        return answer(problem, lab, problem.energy(lab), bound, "mincut", "parametric min-cut",
                      t0)
    log.info("parametric min-cut: %d cuts, energy %.6g, bound %.6g", cuts, best[0], bound)
    return answer(problem, best[1], best[0], bound, "mincut", "parametric min-cut", t0)
