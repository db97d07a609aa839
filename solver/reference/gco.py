"""α-expansion by gco-v3 (Boykov, Veksler and Kolmogorov's C++ library, through the
``gco-wrapper`` package): the peer a user could pick instead of ADMM for K > 2.

gco-v3 is the implementation the seed paper's experiments compared with. It takes integer
energies, so the unaries (shifted per pixel to be non-negative: a constant per pixel changes no
argmin) and the edge weights ``2 lam W_ij`` are scaled to integers with :data:`SCALE` as the
largest term; hard pixels get :data:`HARD_COST` on every other label. The labels it returns are
scored with :meth:`MRFProblem.energy`, the exact energy, like every other method's.

``gco-wrapper`` is an optional dependency (``pip install 'segapp[peers]'``). Its package sets
``numpy.int``, ``numpy.float`` and ``numpy.bool`` on import where numpy has removed them;
:func:`load_gco` takes those names back off once the package is loaded, so nothing else in the
process sees them.
"""

from __future__ import annotations

import importlib
import logging
import time
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from solver.mrf.build.graph import edge_ends

if TYPE_CHECKING:
    from solver.mrf.build.problem import MRFProblem

__all__ = ["gco_available", "gco_expansion", "load_gco"]

logger = logging.getLogger(__name__)

#: The largest unary or pairwise term after scaling to integers: the terms' rounding is then
#: at most 0.5 / SCALE of the largest, and an energy of many terms stays far from int64's end.
SCALE = 1_000_000
#: A hard pixel's integer cost on every label but its own: gco-v3's largest term (its
#: ``GCO_MAX_ENERGYTERM``; a larger one aborts the process). It is more than a pixel's unary
#: and its 8 edges can save (``9 SCALE``), so no move, of one pixel or of many, takes a hard
#: pixel off its label.
HARD_COST = 10_000_000

_ALIASES = ("int", "float", "bool")


def load_gco() -> ModuleType:
    """Import ``gco`` (the ``gco-wrapper`` package), leaving numpy's namespace as it was.

    Returns
    -------
    module
        The ``gco`` package.

    Raises
    ------
    ImportError
        One line naming the package to install, where it is missing.
    """
    absent = [name for name in _ALIASES if not hasattr(np, name)]
    try:
        module = importlib.import_module("gco")
    except ImportError as exc:
        raise ImportError("method gco needs the gco-wrapper package: "
                          "pip install 'segapp[peers]'") from exc
    finally:
        for name in absent:
            if name in np.__dict__:
                delattr(np, name)
    return module


def gco_available() -> bool:
    """Whether :func:`gco_expansion` can run here (``gco-wrapper`` installed and loadable)."""
    try:
        load_gco()
    except (ImportError, OSError):
        return False
    return True


def gco_expansion(problem: "MRFProblem", max_sweeps: int = -1) -> np.ndarray:
    """α-expansion of a K-label Potts problem by gco-v3.

    Parameters
    ----------
    problem : MRFProblem
        The problem, any K >= 2, without area bounds or apart pairs.
    max_sweeps : int
        Sweeps over the labels; -1 (gco's default) runs until a sweep lowers the energy no more.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels in 1..K; hard pixels keep their labels.

    Raises
    ------
    ImportError
        Where ``gco-wrapper`` is not installed.
    ValueError
        For a problem with constraints (gco-v3 takes none).
    """
    if problem.constraints is not None:
        raise ValueError("method gco takes no area bounds or apart pairs; use admm or expansion")
    gco = load_gco()
    t0 = time.perf_counter()
    n, k = problem.n, problem.k
    unary = problem.unary - problem.unary.min(axis=1, keepdims=True)
    gi, gj = edge_ends(problem.graph)
    w = 2.0 * float(problem.lam) * np.asarray(problem.graph.weights, dtype=np.float64)
    top = max(float(unary.max(initial=0.0)), float(w.max(initial=0.0)), 1e-300)
    data = np.rint(unary * (SCALE / top)).astype(np.intc)
    hard = np.asarray(problem.hard).ravel()
    fixed = np.flatnonzero(hard > 0)
    data[fixed] = HARD_COST
    data[fixed, hard[fixed] - 1] = 0
    keep = w > 0
    lo, hi = np.minimum(gi, gj)[keep], np.maximum(gi, gj)[keep]
    graph = gco.GCO()
    graph.create_general_graph(n, k)
    try:
        graph.set_data_cost(data)
        graph.set_all_neighbors(lo, hi, np.rint(w[keep] * (SCALE / top)))
        graph.set_smooth_cost((1 - np.eye(k)).astype(np.intc))
        graph.expansion(max_sweeps)
        labels = graph.get_labels().astype(np.int32) + 1
    finally:
        graph.destroy_graph()
    logger.debug("gco expansion: %d pixels, K=%d in %.3f s", n, k, time.perf_counter() - t0)
    return labels.reshape(problem.shape)
