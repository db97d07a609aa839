"""ℓ2-box ADMM from coarse to fine: the whole problem at the coarsest pyramid level, then bands.

The pyramid (:mod:`solver.mrf.solve.pyramid`) restricts the energy exactly to block-constant
labellings; each finer level starts from the coarser answer and leaves only a band around its
boundaries free.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from solver.admm.params import ADMMParams
from solver.admm.records import CANCELLED
from solver.mrf.build.problem import MRFProblem
from solver.mrf.options import DEFAULT_OPTIONS, CoarseToFineOptions, PolishOptions, SolveOptions
from solver.mrf.polish import pipeline
from solver.mrf.polish.fusion import fuse
from solver.mrf.polish.constrained import settle_feasible
from solver.mrf.polish.icm import icm
from solver.mrf.polish.morphology import square_morphology
from solver.mrf.polish.regions import settle_regions
from solver.mrf.polish.stages import StageReport
from solver.mrf.solve.pyramid import fix_outside, pyramid, undecided_band
from solver.mrf.solve.reduction import MRFADMM, label_weights
from solver.mrf.result import MRFResult

log = logging.getLogger(__name__)

_DEFAULT = CoarseToFineOptions()


def slow_schedule(params: ADMMParams | None, k: int,
                  options: CoarseToFineOptions = _DEFAULT) -> ADMMParams:
    """``params`` with the slow annealing used for small problems and the coarsest level.

    Parameters
    ----------
    params : ADMMParams, optional
        Base parameters (defaults when None).
    k : int
        Number of labels.
    options : CoarseToFineOptions
        ``small_growth`` and ``small_rho0_multi``.

    Returns
    -------
    ADMMParams
        ``rho_growth = options.small_growth``, and ``rho0 = options.small_rho0_multi`` when
        ``k > 2``.
    """
    params = params or ADMMParams()
    rho0 = options.small_rho0_multi if k > 2 else params.rho0
    return replace(params, rho_growth=options.small_growth, rho0=rho0)


def _fuse_warm_start(level: MRFProblem, labels: np.ndarray, up: np.ndarray,
                     options: PolishOptions) -> np.ndarray:
    """``labels`` fused with the warm start ``up`` region by region
    (:attr:`CoarseToFineOptions.warm_fusion`), then settled by region moves if anything was
    taken; the energy never rises."""
    fused, moved = fuse(level, np.asarray(labels).ravel(), np.asarray(up).ravel())
    if not moved:
        return labels
    # ``labels`` is settled (an ICM fixed point too): ICM and region moves look around the change
    fused = icm(level, fused, since=labels)
    return settle_regions(level, fused, icm_optimal=True, since=labels, options=options)[0]


def _pixel_maps(blocks: list[np.ndarray]) -> list[np.ndarray | None]:
    """``maps[i]``: the level-``i`` pixel of every image pixel (None for level 0, the identity)."""
    maps: list[np.ndarray | None] = [None]
    for block in blocks:
        maps.append(block if maps[-1] is None else block[maps[-1]])
    return maps


def solve_coarse_to_fine(problem: MRFProblem, backend: Any = "cpu", params: Any = None, *,
                         seed: int | None = None, x0: np.ndarray | None = None,
                         callback: Callable[[Any], Any] | None = None,
                         polish: bool = True, options: SolveOptions = DEFAULT_OPTIONS,
                         slow_coarsest: bool = True,
                         stop: Callable[[], bool] | None = None,
                         on_stage: Callable[[str], None] | None = None) -> MRFResult:
    """ℓ2-box ADMM from coarse to fine: whole problem at the coarsest level, then bands.

    The coarsest level (exact block restriction, at most ``options.coarse_to_fine.coarsest``
    pixels) is solved from ``seed``'s start. At each finer level the answer is copied to the
    pixels and polished, pixels away from its boundaries and agreeing with the data are fixed
    (early fixing), and ADMM solves the band that is left, warm-started from the copied answer.
    Pixels the coarser level's polish relabelled stay free too (``revisit_radius``). Every level
    ends with the polish (ICM, region moves, level-set fusion) on the whole level, so a fixed
    pixel can still move, and a band level then with fusion with its warm start
    (``warm_fusion``).

    Parameters
    ----------
    problem : MRFProblem
    backend, params
        As for :class:`solver.mrf.solve.reduction.MRFADMM`.
    seed : int, optional
        Random start at the coarsest level (None: the centre of the feasible set).
    x0 : numpy.ndarray, optional
        Warm start, ``(n, K)`` or ``(H, W, K)`` label weights of this problem (e.g. a previous
        ``result.x_continuous``). The solve then goes straight to the finest level: the warm
        start's rounding takes the place of a coarser level's answer (settled by ICM, a band
        left free around its boundaries, the rest fixed) and ADMM in the band starts from
        ``x0``; the level ends as every band level does, with the polish and the fusion with
        that settled start, so the answer is never worse than the warm start's rounding.
    callback : callable, optional
        Receives an :class:`solver.mrf.solve.state.MRFIterationState` per iteration, in
        full-image terms, with iterations numbered across levels; return True to stop.
    polish : bool
        Polish the full-resolution answer (coarser levels are always polished).
    options : SolveOptions
        The pyramid and band (``options.coarse_to_fine``), early fixing and the polish.
    slow_coarsest : bool
        Solve the coarsest level with :func:`slow_schedule`.
    stop : callable, optional
        Polled by each level's polish between its TV relaxations' rounds
        (:func:`solver.mrf.polish.pipeline.polish_labels`), where ``callback`` is not called:
        once it returns True the solve ends with the labels polished so far, status
        ``"cancelled"``.
    on_stage : callable, optional
        Called with the name of each polish stage as it starts, every level's
        (:func:`solver.mrf.polish.pipeline.polish_labels`).

    Returns
    -------
    MRFResult
        ``iterations`` and ``history`` span all levels; ``time_s`` is the whole wall time.
    """

    t0 = time.perf_counter()
    c2f = options.coarse_to_fine
    warm = None
    if x0 is None:
        levels, blocks = pyramid(problem, c2f.coarsest)
    else:  # a warm start stands in for the coarser levels' answer
        x0 = label_weights(x0, problem.n, problem.k)
        hard = np.asarray(problem.hard).ravel()
        warm = np.where(hard > 0, hard, np.argmax(x0, axis=1) + 1).astype(np.int32)
        levels, blocks = [problem], []
    # levels, blocks and maps are dropped once the loop has passed them: at the last level's
    # polish, a large photo's memory peak, none is left (measured: docs/decisions.md, Memory)
    # (the maps are for the callback's full-image view; a solve stopped at a coarse level, which
    # only a callback can ask for, makes its one map from the blocks left, so a solve without a
    # callback spares the maps' time and 8 bytes a pixel per level)
    maps = _pixel_maps(blocks) if callback is not None else [None] * len(levels)
    history: list = []
    labels = revisit = None
    res = solver = None
    energy_admm = None
    stages: list = []  # (the final polish's StageReports)
    for li in range(len(levels) - 1, -1, -1):
        level = levels[li]
        start = up = None
        sub = level
        coarsest = labels is None and warm is None
        if not coarsest:
            if warm is None:
                levels[li + 1] = maps[li + 1] = None
                below = labels.ravel()[blocks[li]]
            else:
                below, warm = warm, None
            up = (icm(level, below) if level.constraints is None
                  else settle_feasible(level, below))
            below = None
            band = undecided_band(level, up, c2f.band_radius)
            if c2f.revisit_radius is not None and revisit is not None and revisit.any():
                grown = revisit[blocks[li]].reshape(level.shape)
                if c2f.revisit_radius > 0:
                    grown = square_morphology(grown, c2f.revisit_radius, "dilation")
                band |= grown
            if li < len(blocks):
                blocks[li] = None
            revisit = grown = None
            sub = fix_outside(level, up, band)
            # (a warm start x0 as given; else ADMM starts from up's one-hot weights, made by
            # run's start_labels on the free pixels only, not as an (n, K) array)
            start = x0
            band = x0 = None
        lp = params
        if coarsest and slow_coarsest:
            lp = slow_schedule(params, level.k, c2f)
        solver = MRFADMM(sub, backend, lp, options=options)
        view = {"pixel_map": None if li == 0 else maps[li], "shape": problem.shape,
                "offset": len(history), "level": li,
                "max_iter_total": solver.params.max_iter * len(levels)}
        res = solver.run(x0=start, seed=seed if coarsest else None, callback=callback,
                         polish=False, view=view,
                         start_labels=up if start is None and not coarsest else None)
        history += [r.renumbered(view["offset"]) for r in res.history]
        start = view = None
        free_count, device = solver.free.size, solver.backend
        labels = res.labels
        stopped = res.status == CANCELLED
        if li == 0:
            energy_admm = res.energy  # (run without polish: the energy of ADMM's labels)
        if stopped:
            break
        # the solver's system and the band problem are dropped before the polish, the peak of a
        # large photo's memory: only its snapshots, free count and backend are needed after
        # (docs/decisions.md, Memory)
        snapshots = solver.snapshot_weights() if li > 0 or polish else []
        solver = sub = None
        if li > 0 or polish:
            unpolished = np.asarray(labels).ravel()
            # outside the band ADMM's labels are the warm start, an ICM fixed point
            final = li == 0  # (the final polish is reported stage by stage)
            labels = pipeline.polish_labels(level, labels, snapshots,
                                            split=final, since=up, options=options.polish,
                                            backend=device, stop=stop,
                                            cells=2 if final and len(levels) > 1 else None,
                                            report=stages if final else None,
                                            energy=energy_admm if final else None,
                                            on_stage=on_stage)
            snapshots = None
            if stop is not None and stop():  # (a cancel during the polish)
                res = replace(res, status=CANCELLED)
                break
            if c2f.warm_fusion and up is not None and level.constraints is None:
                t_fuse = time.perf_counter()
                if on_stage is not None:
                    on_stage("warm-fusion")
                fused = _fuse_warm_start(level, labels, up, options.polish)
                if final:
                    gain = 0.0
                    if fused is not labels:
                        polished = energy_admm - sum(r.gain for r in stages)
                        gain = polished - level.energy(fused)
                    stages.append(StageReport("warm-fusion", time.perf_counter() - t_fuse,
                                              gain))
                labels = fused
            revisit = unpolished != np.asarray(labels).ravel() if li > 0 else None
        if log.isEnabledFor(logging.INFO):  # (the energy costs a pass over the image)
            log.info("coarse-to-fine level %d (%d pixels, %d free): energy %.6g after %d "
                     "iterations", li, level.n, free_count, level.energy(labels),
                     res.iterations)
    fine = np.asarray(labels).ravel().astype(np.int32)
    if li > 0 and maps[li] is None:
        maps[li] = _pixel_maps(blocks[:li])[-1]
    if li > 0:
        fine = fine[maps[li]]
    hard = np.asarray(problem.hard).ravel()
    fine[hard > 0] = hard[hard > 0]  # a stop at a coarse level: blocks with mixed hard pixels
    fine = fine.reshape(problem.shape)
    x_cont = res.x_continuous
    if x_cont is not None and li > 0:
        x_cont = x_cont[maps[li]]
    # (the last level's status; a cancel at a coarser level is a cancel of the whole solve)
    return MRFResult(fine, problem.energy(fine), "admm", device.name, len(history),
                     time.perf_counter() - t0, res.status, history, x_cont, res.admm,
                     energy_admm if energy_admm is not None else problem.energy(fine),
                     problem.constraint_report(fine), stages=tuple(stages))
