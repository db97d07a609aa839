"""``solve_mrf``: one entry point for ADMM and the yardsticks on a segmentation MRF."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from solver.admm.params import ADMMParams, check_callable, check_seed
from solver.admm.records import CONVERGED
from solver.backend import get_backend
from solver.mrf.build.constraints import LevelConstraints
from solver.mrf.build.problem import MRFProblem
from solver.mrf.options import DEFAULT_OPTIONS, SolveOptions
from solver.mrf.solve.coarse_to_fine import slow_schedule, solve_coarse_to_fine
from solver.mrf.solve.reduction import MRFADMM
from solver.mrf.result import MRFResult
from solver.mrf.solve.state import CallbackChannel, MRFIterationState
from solver.names import METHODS
from solver.reference import alpha_expansion, lp_relaxation, mincut
from solver.reference.gco import gco_expansion
from solver.reference.lagrangian import lagrangian_swap
from solver.reference.lp import lp_with_area
from solver.reference.nested import nested_mincut, nesting_roles
from solver.reference.parametric import parametric_mincut

log = logging.getLogger(__name__)

#: CG iterations per x-update for K > 2 unless ``pcg_maxiter`` is given (the generic default is
#: 7): the inexact x-update of the early, soft iterations leaves K = 3/4 no worse and a little
#: faster; K = 2 keeps 7 (see docs/decisions.md, "Inner solves").
MULTI_PCG_MAXITER = 3


#: Pixels from which ``backend="auto"`` takes a usable GPU, for K = 2 and for K > 2: the sizes
#: from which a GPU solve is faster than the CPU's (measured: docs/performance.md, GPU).
AUTO_GPU_PIXELS = {2: 250_000, "multi": 5_000}


def auto_backend(n: int, k: int) -> str:
    """The backend ``backend="auto"`` runs a problem of ``n`` pixels and ``k`` labels on.

    Parameters
    ----------
    n, k : int
        Pixels and labels.

    Returns
    -------
    str
        ``"cpu"`` for a problem too small for a GPU to be faster (:data:`AUTO_GPU_PIXELS`),
        else :func:`solver.backend.get_backend`'s ``"auto"`` choice (the GPU when one is usable;
        it logs why not).
    """
    least = AUTO_GPU_PIXELS[2 if k == 2 else "multi"]
    if n < least:
        log.info("backend 'auto': the CPU (%d pixels, K = %d: a GPU pays from %d)", n, k, least)
        return "cpu"
    return get_backend("auto").name


def solve_mrf(problem: MRFProblem, method: str = "admm", *, backend: str = "cpu",
              seed: int | None = None, x0: np.ndarray | None = None,
              callback: Callable[[MRFIterationState], bool | None] | None = None,
              polish: bool | None = None, coarse_to_fine: bool | None = None,
              options: SolveOptions = DEFAULT_OPTIONS, admm: ADMMParams | None = None,
              **params: Any) -> MRFResult:
    """Minimise the MRF energy with ADMM or one of the yardsticks.

    Parameters
    ----------
    problem : MRFProblem
    method : {"admm", "mincut", "expansion", "lp", "gco"}
        ``mincut`` needs K = 2 (global optimum); ``expansion`` is α-expansion; ``lp`` the
        box-relaxed QP, rounded; ``gco`` gco-v3's α-expansion (:mod:`solver.reference.gco`,
        where the optional ``gco-wrapper`` is installed; no constraints).
    backend : {"cpu", "gpu", "auto"}
        For ADMM only; ``"auto"`` is :func:`auto_backend`'s choice.
    seed : int, optional
        Random start of ADMM (None: 1/2 everywhere): an integer >= 0 (``int`` or a numpy
        integer; ``bool`` and floats such as ``1.0`` are refused).
    x0 : numpy.ndarray, optional
        ADMM warm start, ``(H, W, K)`` or ``(n, K)`` label weights (e.g. a previous
        ``result.x_continuous``).
    callback : callable, optional
        ``callback(state)`` with an :class:`MRFIterationState`: each ADMM iteration
        (``state.phase == "admm"``), and within the polish (every polish: a coarse level's
        too) as each stage starts and between the rounds of its relaxations
        (``"polish:<stage>"``, :data:`solver.mrf.polish.stages.STAGES`). Return True to stop,
        the one way to: after that iteration (no polish follows) or at the polish's next poll,
        with the labels polished so far and status ``"cancelled"``. The other methods have no
        iterations and do not call it.
    polish : bool, optional
        Shorthand for ``options.polish.enabled`` (None: as the options say). Finish ADMM's best
        labelling with :func:`solver.mrf.polish.polish_labels`: colour-parallel
        ICM and pair moves, closing and box fusion, whole-region moves, region splits (K > 2)
        and level-set fusion with ADMM's early iterates, none of which raises the energy;
        ``result.energy_admm`` keeps ADMM's own energy.
    coarse_to_fine : bool, optional
        Solve a halved pyramid coarse to fine, leaving only a band around the boundaries free
        at the finer levels (:func:`solver.mrf.solve.coarse_to_fine.solve_coarse_to_fine`).
        Default: on when the image has more than ``options.coarse_to_fine.whole_max`` pixels.
        With ``x0`` it goes straight to the finest level, the warm start's rounding standing
        in for the coarser answer (only a band round its boundaries is solved again).
    options : SolveOptions
        The switches of early fixing, coarse to fine and the polish (:mod:`solver.mrf.options`).
    admm : ADMMParams, optional
        ADMM's parameters (None: the defaults). Its fields left None are chosen for the problem
        (:func:`admm_params_for`): with ``rho_growth`` and ``rho0`` both None, a problem solved
        whole with at most ``whole_max`` pixels (and the coarsest level) uses the slower
        :func:`solver.mrf.solve.coarse_to_fine.slow_schedule`; with ``pcg_maxiter`` None, K > 2
        uses :data:`MULTI_PCG_MAXITER`.
    **params
        :class:`solver.ADMMParams` fields, replacing those of ``admm`` (a shorthand:
        ``solve_mrf(p, max_iter=50)``).

    Returns
    -------
    MRFResult

    Raises
    ------
    ValueError
        In one line naming the argument, before any iteration (for every method): an unknown
        ``method``, a ``seed`` that is not None or an integer >= 0, a ``callback`` that is not
        None or callable, ADMM parameters that are wrong (or given to a yardstick).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")
    # (checked for every method, although only ADMM uses them: a wrong one is wrong anywhere)
    seed = check_seed(seed)
    check_callable(callback, "callback")
    if polish is not None:
        options = options.with_polish(polish)
    if method == "admm":
        # (edge ends a yardstick asked the graph for: ADMM never reads them; docs/decisions.md,
        # Memory)
        forget = getattr(problem.graph, "forget_ends", None)
        if forget is not None:
            forget()
        if backend == "auto":
            backend = auto_backend(problem.n, problem.k)
        admm_params = ADMMParams.from_kwargs(**params) if admm is None else (
            admm.validated() if not params
            else ADMMParams.from_kwargs(**{**admm.given(), **params}))
        # a whole (small) problem gets the slower default schedule; see slow_schedule
        slow = admm_params.rho_growth is None and admm_params.rho0 is None
        admm_params = admm_params_for(admm_params, problem.k)
        polish = options.polish.enabled
        whole_max = options.coarse_to_fine.whole_max
        if coarse_to_fine is None:
            coarse_to_fine = problem.n > whole_max
        hooks: dict[str, Any] = {}
        if callback is not None:
            channel = CallbackChannel(callback)
            hooks = dict(callback=channel.iteration, on_stage=channel.stage,
                         stop=channel.stopped)
        if coarse_to_fine:
            return solve_coarse_to_fine(problem, backend, admm_params, seed=seed, x0=x0,
                                        polish=polish, options=options, slow_coarsest=slow,
                                        **hooks)
        if slow and problem.n <= whole_max:
            admm_params = slow_schedule(admm_params, problem.k, options.coarse_to_fine)
        return MRFADMM(problem, backend, admm_params, options=options).run(
            x0=x0, seed=seed, polish=polish, **hooks)
    given = {**({} if admm is None else admm.given()), **params}
    if given or coarse_to_fine:
        given = {**given, **({"coarse_to_fine": coarse_to_fine} if coarse_to_fine else {})}
        raise ValueError(f"ADMM parameters given to method {method!r}: {', '.join(given)}")
    if problem.constraints is not None:
        return _constrained_yardstick(problem, method)
    t0 = time.perf_counter()
    if method == "mincut":
        if problem.k != 2:
            raise ValueError(f"min-cut needs K = 2 (got K = {problem.k}); use 'expansion'")
        labels = mincut(problem)
    elif method == "expansion":
        labels = alpha_expansion(problem)
    elif method == "gco":
        try:
            labels = gco_expansion(problem)
        except ImportError as exc:  # (an optional peer: one line saying what to install)
            raise ValueError(str(exc)) from None
    else:
        labels = lp_relaxation(problem)[0]
    elapsed = time.perf_counter() - t0
    labels = np.asarray(labels, dtype=np.int32).reshape(problem.shape)
    return MRFResult(labels, problem.energy(labels), method, "cpu", 0, elapsed, CONVERGED)


def admm_params_for(params: ADMMParams, k: int) -> ADMMParams:
    """``params`` with the fields left None chosen for a problem of ``k`` labels: ``pcg_maxiter``
    :data:`MULTI_PCG_MAXITER` for K > 2, the rest :data:`solver.admm.params.FALLBACKS` (a small
    problem's slow schedule replaces the penalties later, see :func:`solve_mrf`)."""
    return params.resolved(**({"pcg_maxiter": MULTI_PCG_MAXITER} if k > 2 else {}))


def yardstick_for(problem: MRFProblem) -> str:
    """The yardstick method of a problem: ``"mincut"`` for K = 2 and for a K = 3 nesting with
    constraints the layered cut solves exactly, else ``"expansion"``."""
    return yardstick_method(problem.k, problem.constraints)


def yardstick_method(k: int, level: LevelConstraints | None) -> str:
    """:func:`yardstick_for` from the number of labels and the constraints in solver form."""
    if level is not None and level.has_apart:
        return "mincut" if nesting_roles(level) is not None else "expansion"
    return "mincut" if k == 2 else "expansion"


#: What each yardstick takes under constraints, for the error a user sees otherwise.
CONSTRAINED_YARDSTICKS = (
    "mincut takes K = 2 with area bounds, or K = 3 with one apart pair and no area bound; "
    "expansion (best effort) and admm take any constraints; lp takes K = 2 with area bounds")


def constrained_variant(method: str, k: int, level: LevelConstraints) -> str:
    """The name of the algorithm ``method`` runs on a problem with these constraints.

    Raises
    ------
    ValueError
        One line saying which solvers can, where ``method`` cannot take them.
    """
    area_only = not level.has_apart
    if method == "admm":
        return "ADMM"
    if method == "mincut" and k == 2 and area_only:
        return "parametric min-cut"
    if method == "mincut" and nesting_roles(level) is not None:
        return "layered min-cut"
    if method == "expansion":
        return "Lagrangian αβ-swap (best effort)"
    if method == "lp" and k == 2 and area_only:
        return "LP relaxation with area bounds"
    raise ValueError(f"solver {method} cannot take these constraints: {CONSTRAINED_YARDSTICKS}")


def _constrained_yardstick(problem: MRFProblem, method: str) -> MRFResult:
    """A yardstick of a problem with area bounds or apart pairs (see
    :data:`CONSTRAINED_YARDSTICKS`); ValueError naming which solver can, where it cannot."""
    variant = constrained_variant(method, problem.k, problem.constraints)
    ref = {"parametric min-cut": parametric_mincut, "layered min-cut": nested_mincut,
           "Lagrangian αβ-swap (best effort)": lagrangian_swap,
           "LP relaxation with area bounds": lp_with_area}[variant](problem)
    return replace(ref, method=method, detail=variant)
