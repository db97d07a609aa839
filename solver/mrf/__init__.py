"""Segmentation as a K-label Potts MRF on the 8-neighbour pixel grid, solved by ℓ2-box ADMM.

Three stages, each a sub-package: :mod:`solver.mrf.build` (graph, colour models, the
:class:`MRFProblem`), :mod:`solver.mrf.solve` (the reduction to a BQP, early fixing, coarse to
fine, ``solve_mrf``) and :mod:`solver.mrf.polish` (exact moves after ADMM). Their switches are in
:mod:`solver.mrf.options`.

The names below load on first use (a module of one stage imports no other stage through this
package).
"""

from __future__ import annotations

from solver.lazy import lazy_names

_WHERE = {
    "AreaBound": "solver.mrf.build.constraints",
    "Constraints": "solver.mrf.build.constraints",
    "ConstraintReport": "solver.mrf.build.constraints",
    "with_constraints": "solver.mrf.build.problem",
    "CONSTRAINED_YARDSTICKS": "solver.mrf.solve.dispatch",
    "yardstick_for": "solver.mrf.solve.dispatch",
    "yardstick_method": "solver.mrf.solve.dispatch",
    "constrained_variant": "solver.mrf.solve.dispatch",
    "AUTO_GPU_PIXELS": "solver.mrf.solve.dispatch",
    "COLOUR_MODELS": "solver.mrf.build.colour",
    "CoarseToFineOptions": "solver.mrf.options",
    "DEFAULT_LAMBDA": "solver.mrf.options",
    "EarlyFixingOptions": "solver.mrf.options",
    "GaussianMixtureModel": "solver.mrf.build.colour",
    "GridGraph": "solver.mrf.build.graph",
    "HistogramModel": "solver.mrf.build.colour",
    "MAX_LABELS": "solver.mrf.build.problem",
    "METHODS": "solver.mrf.solve.dispatch",
    "MRFADMM": "solver.mrf.solve.reduction",
    "MRFIterationState": "solver.mrf.solve.state",
    "MRFProblem": "solver.mrf.build.problem",
    "MRFResult": "solver.mrf.result",
    "PolishOptions": "solver.mrf.options",
    "FusionOptions": "solver.mrf.options",
    "TVOptions": "solver.mrf.options",
    "ConstrainedOptions": "solver.mrf.options",
    "LocalOptions": "solver.mrf.options",
    "SolveOptions": "solver.mrf.options",
    "auto_backend": "solver.mrf.solve.dispatch",
    "build_grid_graph": "solver.mrf.build.graph",
    "build_problem": "solver.mrf.build.problem",
    "estimate_beta": "solver.mrf.build.graph",
    "fit_colour_models": "solver.mrf.build.colour",
    "grid_edges": "solver.mrf.build.graph",
    "icm": "solver.mrf.polish",
    "image_to_float": "solver.mrf.build.graph",
    "laplacian": "solver.mrf.build.graph",
    "polish_labels": "solver.mrf.polish",
    "problem_from_unary": "solver.mrf.build.problem",
    "refine_colour_models": "solver.mrf.solve.grabcut",
    "prepare": "solver.mrf.solve.segment",
    "segment": "solver.mrf.solve.segment",
    "Prepared": "solver.mrf.solve.segment",
    "ModelOptions": "solver.mrf.options",
    "DEFAULT_MODEL": "solver.mrf.options",
    "ONE_SHOT_MODEL": "solver.mrf.options",
    "reestimate": "solver.mrf.solve.grabcut",
    "refit_models": "solver.mrf.solve.grabcut",
    "Reestimation": "solver.mrf.solve.grabcut",
    "solve_mrf": "solver.mrf.solve.dispatch",
    "unary_costs": "solver.mrf.build.colour",
    "warm_up": "solver.mrf.solve.warmup",
}

__all__, __getattr__, __dir__ = lazy_names(__name__, _WHERE)
