"""A best-effort yardstick for any area bounds and apart pairs: Lagrangian αβ-swap.

Area bounds are priced by Lagrange multipliers (added to each label's unary, moved by a step
towards the bounds that doubles while an area stays on the same side of them and halves when it
crosses, a sign subgradient with an adaptive step), apart pairs by a large finite
penalty on every neighbouring pair that carries them; each round minimises that energy by
αβ-swap moves (Boykov et al.), which need no metric, only ``V(a, a) = 0``, so the penalty may be
as large as it likes. The best labelling that meets every constraint over all rounds is the
answer; if none does, the last one is repaired by the constrained polish's cheapest
single-pixel moves (:func:`solver.mrf.polish.constrained.repair`), and marked infeasible should
even that fail. Nothing here proves a bound: the method is labelled best-effort in reports and
plots.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import numpy as np

from solver.mrf.polish.constrained import repair
from solver.mrf.polish.swap import apart_penalty, swap_move
from solver.reference.parametric import answer

if TYPE_CHECKING:
    from solver.mrf.build.problem import MRFProblem
    from solver.mrf.result import MRFResult

log = logging.getLogger(__name__)

#: Rounds of multiplier updates, and αβ-swap sweeps in each.
ROUNDS = 30
SWEEPS = 4


def lagrangian_swap(problem: MRFProblem) -> MRFResult:
    """The best feasible labelling Lagrangian αβ-swap finds (see the module docstring).

    Parameters
    ----------
    problem : MRFProblem
        Any K, with constraints.

    Returns
    -------
    MRFResult
        ``bound`` is None (none is proven), ``optimal`` False; ``feasible`` False when no
        round met every constraint (the labels are then the last round's).
    """
    t0 = time.perf_counter()
    c = problem.constraints
    if c is None:
        raise ValueError("the Lagrangian yardstick needs constraints")
    k = problem.k
    w = c.pixel_weights(problem.n)
    d = problem.unary
    spread = float(np.max(d.max(axis=1) - d.min(axis=1))) if d.size else 1.0
    penalty = apart_penalty(problem)
    mu = np.zeros(k)
    hard = np.asarray(problem.hard).ravel()
    labels = np.where(hard > 0, hard - 1, np.argmin(d, axis=1)).astype(np.int64)
    best: tuple[float, np.ndarray | None] = (np.inf, None)
    step = np.full(k, 0.1 * max(spread, 1e-9) / max(1.0, float(w.max())))
    last = np.zeros(k)
    for _ in range(ROUNDS):
        unary = d + w[:, None] * mu[None, :]
        for _ in range(SWEEPS):
            before = labels.copy()
            for a in range(k):
                for b in range(a + 1, k):
                    labels = swap_move(problem, unary, labels, a, b, penalty)
            if np.array_equal(before, labels):
                break
        lab1 = labels + 1
        if problem.feasible(lab1):
            e = problem.energy(lab1)
            if e < best[0]:
                best = (e, lab1.copy())
        areas = c.areas(lab1)
        over = np.where(c.area_given, np.maximum(areas - c.hi, 0) - np.maximum(c.lo - areas, 0),
                        0.0)
        if not over.any() and best[1] is not None:
            break
        sign = np.sign(over)
        step = np.where(sign == 0, step, np.where(sign == last, 2.0 * step, 0.5 * step))
        mu += step * sign
        last = np.where(sign == 0, last, sign)
    if best[1] is None:
        fixed = repair(problem, labels + 1).ravel()
        best = (problem.energy(fixed), fixed)
    feasible = problem.feasible(best[1])
    log.info("Lagrangian swap: energy %.6g (feasible: %s) in %.3f s", best[0], feasible,
             time.perf_counter() - t0)
    return answer(problem, best[1], best[0], None, "expansion",
                  "Lagrangian αβ-swap (best effort)", t0)
