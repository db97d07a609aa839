"""GrabCut-style re-estimation: refit the colour models to the optimal labelling, and repeat."""

from __future__ import annotations

import logging

import numpy as np

from solver.mrf.build.colour import fit_colour_models, unary_costs
from solver.mrf.build.graph import image_to_float
from solver.mrf.build.problem import MRFProblem, replace_problem
from solver.reference import alpha_expansion, mincut

log = logging.getLogger(__name__)


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
    k = problem.k
    for r in range(int(rounds)):
        labels = (mincut(problem) if k == 2 else alpha_expansion(problem)).ravel()
        seeds = np.asarray(problem.seeds).ravel()
        labels = np.where(seeds > 0, seeds, labels).reshape(problem.shape)
        counts = np.bincount(labels.ravel(), minlength=k + 1)
        if np.any(counts[1:] == 0):
            log.info("grabcut round %d: a label vanished; keeping the previous models", r + 1)
            break
        models = fit_colour_models(colours, labels, k, model=problem.colour_model,
                                   seed=seed + r + 1)
        problem = replace_problem(problem, unary=unary_costs(colours, models), models=tuple(models))
        log.debug("grabcut round %d: label counts %s", r + 1, counts[1:].tolist())
    return problem
