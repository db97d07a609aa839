"""The segmentation MRF: grid graph and Laplacian, colour models, unary costs, problem, energy."""

from .colour import (
    GaussianMixtureModel,
    HistogramModel,
    fit_colour_models,
    unary_costs,
)
from .graph import (
    GridGraph,
    build_grid_graph,
    estimate_beta,
    grid_edges,
    image_to_float,
    laplacian,
)
from .problem import DEFAULT_LAMBDA, MAX_LABELS, MRFProblem, build_problem, problem_from_unary

__all__ = [
    "DEFAULT_LAMBDA",
    "MAX_LABELS",
    "GaussianMixtureModel",
    "GridGraph",
    "HistogramModel",
    "MRFProblem",
    "build_grid_graph",
    "build_problem",
    "estimate_beta",
    "fit_colour_models",
    "grid_edges",
    "image_to_float",
    "laplacian",
    "problem_from_unary",
    "unary_costs",
]

from .admm_mrf import (METHODS, MRFADMM, MRFIterationState, MRFResult, auto_backend,  # noqa: E402
                       solve_mrf)
from .icm import icm  # noqa: E402
from .warmup import warm_up  # noqa: E402

__all__ += ["METHODS", "MRFADMM", "MRFIterationState", "MRFResult", "auto_backend", "icm", "solve_mrf",
            "warm_up"]
