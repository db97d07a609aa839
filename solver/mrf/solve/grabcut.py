"""GrabCut-style re-estimation: refit the colour models to a labelling, solve again, repeat.

:func:`refit_models` is one refit; :func:`reestimate` drives rounds of solve and refit with
any solver (the pipeline's ADMM, warm-started from one round to the next);
:func:`refine_colour_models` is the same with the yardstick as the solver.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solver.mrf.build.colour import fit_colour_models, unary_costs
from solver.mrf.build.graph import image_to_float
from solver.mrf.build.problem import MRFProblem, replace_problem
from solver.reference import alpha_expansion, mincut

log = logging.getLogger(__name__)


def refit_models(problem: MRFProblem, colours: np.ndarray, labels: np.ndarray, *,
                 seed: int = 0) -> MRFProblem | None:
    """``problem`` with every label's colour model refitted to its pixels in ``labels``, the
    user's seed pixels (:attr:`MRFProblem.seeds`) kept at their labels, as GrabCut does.

    Parameters
    ----------
    problem : MRFProblem
        A problem from :func:`solver.mrf.build_problem` (it records its seeds).
    colours : numpy.ndarray
        The image as :func:`solver.mrf.build.graph.image_to_float` gives it.
    labels : numpy.ndarray
        A labelling of the problem, values 1..K (any shape with ``problem.n`` entries).
    seed : int
        Seed of the fits.

    Returns
    -------
    MRFProblem or None
        The refitted problem (graph, hard pixels and constraints unchanged); None where the
        labelling leaves some label without a pixel (nothing to fit it on).
    """
    if problem.seeds is None:
        raise ValueError("the problem records no seeds: build it with build_problem")
    k = problem.k
    seeds = np.asarray(problem.seeds).ravel()
    lab = np.where(seeds > 0, seeds, np.asarray(labels).ravel()).reshape(problem.shape)
    counts = np.bincount(lab.ravel(), minlength=k + 1)
    if np.any(counts[1:] == 0):
        return None
    models = fit_colour_models(colours, lab, k, model=problem.colour_model, seed=seed)
    return replace_problem(problem, unary=unary_costs(colours, models), models=tuple(models))


@dataclass
class Reestimation:
    """What :func:`reestimate` did.

    Attributes
    ----------
    problem : MRFProblem
        The problem with the last refitted models: the one to solve for the answer.
    result : object or None
        The last solve's result (on the models before the last refit), a warm start for the
        final solve; None when no round ran.
    rounds : int
        Refits made.
    changed : list of float
        For each solve after the first, the fraction of pixels whose label it changed.
    results : list
        Every round's result, in order.
    """

    problem: MRFProblem
    result: object | None
    rounds: int
    changed: list[float]
    results: list


def reestimate(problem: MRFProblem, image: np.ndarray,
               solve: Callable[[MRFProblem, object | None], object], rounds: int, *,
               tol: float = 0.0, seed: int = 0) -> Reestimation:
    """GrabCut's iteration with any solver: solve, refit the colour models to the answer
    (:func:`refit_models`), and again, up to ``rounds`` refits. The caller solves the returned
    problem for the answer, warm-started from the returned result.

    Parameters
    ----------
    problem : MRFProblem
    image : numpy.ndarray
        The image ``problem`` was built from.
    solve : callable
        ``solve(problem, previous) -> result`` with ``result.labels``; ``previous`` is the last
        round's result (None the first time), a warm start.
    rounds : int
        Most refits (0: nothing is solved).
    tol : float
        Refit no more once a solve changes at most this fraction of the pixels (the models
        have settled).
    seed : int
        The seed ``problem`` was built with; refit ``r`` fits with ``seed + r``.

    Returns
    -------
    Reestimation
        A solve whose result has status ``"cancelled"`` ends the rounds (its solver's callback
        asked to stop).
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}")
    colours = image_to_float(image) if rounds else None
    result, done, changed, results = None, 0, [], []
    while done < rounds:
        new = solve(problem, result)
        results.append(new)
        if result is not None:
            changed.append(float(np.mean(np.asarray(new.labels).ravel()
                                         != np.asarray(result.labels).ravel())))
        result = new
        if getattr(new, "status", "") == "cancelled" or (changed and changed[-1] <= tol):
            break
        refitted = refit_models(problem, colours, new.labels, seed=seed + done + 1)
        if refitted is None:
            log.info("re-estimation round %d: a label vanished; keeping the models", done + 1)
            break
        problem, done = refitted, done + 1
        log.debug("re-estimation round %d refitted%s", done,
                  f" ({100 * changed[-1]:.3f}% of the pixels changed)" if changed else "")
    return Reestimation(problem, result, done, changed, results)


def refine_colour_models(problem: MRFProblem, image: np.ndarray, rounds: int = 1, *,
                         seed: int = 0) -> MRFProblem:
    """Refit the colour models to the yardstick's labelling of ``problem``, ``rounds`` times.

    Each round labels the image optimally (min-cut for K = 2, α-expansion otherwise), keeps the
    user's seed pixels (:attr:`MRFProblem.seeds`) at their labels, and fits every label's model
    to its pixels, as GrabCut does. A round that would leave a label with no pixel stops the
    refinement with the models of the round before.

    Parameters
    ----------
    problem : MRFProblem
        A problem from :func:`solver.mrf.build_problem` (it records its seeds).
    image : numpy.ndarray
        The image it was built from.
    rounds : int
        Rounds of re-estimation (0: ``problem`` unchanged).
    seed : int
        The seed ``problem`` was built with; round ``r`` fits with ``seed + r``.

    Returns
    -------
    MRFProblem
        ``problem`` with refitted models and unaries (graph, hard constraints unchanged).
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}")
    if rounds and problem.seeds is None:
        raise ValueError("the problem records no seeds: build it with build_problem")
    colours = image_to_float(image)
    for r in range(int(rounds)):
        labels = mincut(problem) if problem.k == 2 else alpha_expansion(problem)
        refitted = refit_models(problem, colours, labels, seed=seed + r + 1)
        if refitted is None:
            log.info("grabcut round %d: a label vanished; keeping the previous models", r + 1)
            break
        problem = refitted
    return problem
