"""Exact coarsening of a grid MRF and the band of undecided pixels around a labelling's boundaries.

Coarsening by ``f x f`` blocks is the restriction of the energy to block-constant labellings:
with ``P`` the ``n x n_c`` block-indicator matrix, ``x = P x_c`` gives
``lam x'(I⊗L)x + d'x = lam x_c'(I⊗P'LP)x_c + (P'd)'x_c``, and ``P'LP`` is again the Laplacian of an
8-neighbour grid (of blocks) whose edge weights are the summed fine weights across block borders.
So a coarse labelling, copied back to the pixels, has exactly the coarse energy, which makes the
coarse level a faithful (smaller) picture of the fine problem for a coarse-to-fine start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..admm import ADMMParams
from ..threads import threaded
from .fusion import fuse
from .graph import GridGraph, laplacian
from .grid_kernels import _is_grid_edge_list, coarsen_edges
from .icm import icm, settle_regions
from .morphology import square_morphology
from .problem import MRFProblem
from .pyramid_kernels import coarsen_grid_edges

log = logging.getLogger(__name__)


def block_index(shape: tuple[int, int], factor: int) -> tuple[np.ndarray, tuple[int, int]]:
    """Coarse block of every pixel (flat, pixel-major) and the coarse grid's shape.

    Parameters
    ----------
    shape : tuple of int
        Fine grid ``(H, W)``.
    factor : int
        Block side (>= 2); edge blocks may be smaller.

    Returns
    -------
    block : numpy.ndarray
        ``(H * W,)`` int64 coarse index of each pixel.
    coarse_shape : tuple of int
        ``(ceil(H / f), ceil(W / f))``.
    """
    h, w = shape
    hc, wc = -(-h // factor), -(-w // factor)
    rows = np.arange(h) // factor
    cols = np.arange(w) // factor
    return (rows[:, None] * wc + cols[None, :]).ravel(), (hc, wc)


def coarsen(problem: MRFProblem, factor: int = 2) -> tuple[MRFProblem, np.ndarray]:
    """The MRF restricted to labellings constant on ``factor x factor`` blocks.

    Parameters
    ----------
    problem : MRFProblem
    factor : int
        Block side.

    Returns
    -------
    coarse : MRFProblem
        Problem on the block grid; ``coarse.energy(c) == problem.energy(c[block])``.
        A block is hard-constrained when its fine hard pixels all name one label.
    block : numpy.ndarray
        ``(n,)`` coarse index of every fine pixel.
    """
    if factor < 2:
        raise ValueError(f"coarsening factor must be >= 2, got {factor}")
    block, cshape = block_index(problem.shape, factor)
    nc, k = cshape[0] * cshape[1], problem.k
    unary = np.stack([np.bincount(block, weights=problem.unary[:, c], minlength=nc)
                      for c in range(k)], axis=1)
    g = problem.graph
    h, w = (int(s) for s in problem.shape)
    gi, gj = np.asarray(g.i, np.int32), np.asarray(g.j, np.int32)
    gw = np.asarray(g.weights, np.float64)
    if factor == 2 and _is_grid_edge_list(gi, gj, h, w):
        # (a photo's own graph: the same arrays, summed block row by block row on threads)
        lo, hi, weights = threaded(coarsen_grid_edges, gw, h, w)
        bad = 0
    else:
        lo, hi, weights, bad = coarsen_edges(gi, gj, gw, (h, w), factor)
    if bad:
        raise ValueError(f"{bad} edges of the graph are not 8-neighbour pixel pairs")
    graph = GridGraph(shape=cshape, i=lo, j=hi, weights=weights, beta=g.beta)
    hard = np.asarray(problem.hard).ravel()
    counts = np.bincount(block * (k + 1) + hard, minlength=nc * (k + 1)).reshape(nc, k + 1)
    named = counts[:, 1:] > 0
    one = named.sum(axis=1) == 1
    hard_c = np.where(one, np.argmax(named, axis=1) + 1, 0).astype(np.int32)
    coarse = MRFProblem(shape=cshape, k=k, lam=problem.lam, unary=unary, graph=graph,
                        laplacian=laplacian(graph), hard=hard_c, beta=problem.beta,
                        colour_model=problem.colour_model, models=problem.models)
    return coarse, block


def undecided_band(problem: MRFProblem, labels: np.ndarray, radius: int = 2) -> np.ndarray:
    """Pixels a coarse-to-fine step should leave free: near a label boundary or disputed by the data.

    A pixel is undecided when, within ``radius`` pixels (chessboard distance), there is a label
    boundary of ``labels`` or a pixel whose cheapest unary label differs from ``labels`` (thin
    structures the coarse level could not represent).

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` labels in 1..K (e.g. a coarse answer copied to the pixels).
    radius : int

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` bool mask.
    """
    lab = np.asarray(labels).reshape(problem.shape)
    seed = np.zeros(problem.shape, dtype=bool)
    seed[:, 1:] |= lab[:, 1:] != lab[:, :-1]
    seed[:, :-1] |= lab[:, 1:] != lab[:, :-1]
    seed[1:, :] |= lab[1:, :] != lab[:-1, :]
    seed[:-1, :] |= lab[1:, :] != lab[:-1, :]
    seed |= (np.argmin(problem.unary, axis=1) + 1).reshape(problem.shape) != lab
    if radius > 0:
        seed = square_morphology(seed, radius, "dilation")
    return seed


def fix_outside(problem: MRFProblem, labels: np.ndarray, free: np.ndarray) -> MRFProblem:
    """The same MRF with every pixel outside ``free`` fixed to its label (user hard pixels kept).

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` labels in 1..K.
    free : numpy.ndarray
        ``(H, W)`` bool mask of the pixels left to the solver.

    Returns
    -------
    MRFProblem
        A problem whose energy function is unchanged; only ``hard`` differs.
    """
    hard = np.asarray(problem.hard).ravel()
    lab = np.asarray(labels).ravel().astype(np.int32)
    new = np.where(hard > 0, hard, np.where(np.asarray(free).ravel(), 0, lab)).astype(np.int32)
    return replace(problem, hard=new)


def pyramid(problem: MRFProblem, coarsest: int) -> tuple[list[MRFProblem], list[np.ndarray]]:
    """Halve the problem until it has at most ``coarsest`` pixels.

    Returns
    -------
    levels : list of MRFProblem
        ``levels[0]`` is ``problem``, each next one its 2 x 2 coarsening.
    blocks : list of numpy.ndarray
        ``blocks[i]`` maps the pixels of ``levels[i]`` to those of ``levels[i + 1]``.
    """
    levels, blocks = [problem], []
    while levels[-1].n > coarsest and min(levels[-1].shape) >= 4:
        coarse, block = coarsen(levels[-1], 2)
        levels.append(coarse)
        blocks.append(block)
    return levels, blocks


#: Coarsen until a level has at most this many pixels; smaller problems are solved directly.
COARSEST = 8000
#: Images with at most this many pixels are solved whole (with the slow schedule), larger ones
#: coarse to fine.
WHOLE_MAX = 4 * COARSEST
#: Penalty growth for a problem solved whole when it is this small: slower annealing costs little
#: there and avoids the bad early commitments that 1.03 makes on strongly regularised small grids.
SMALL_GROWTH = 1.01
#: Starting penalty (times the problem scale) of that slow schedule for K > 2 (K = 2 keeps the
#: default): the one-hot relaxation needs longer to settle before the penalty takes over
#: (cameraman K = 4 at n = 1e3: +18.6% above alpha-expansion with the default start, 0% with this).
SMALL_RHO0_MULTI = 0.1


def slow_schedule(params: ADMMParams | None, k: int) -> ADMMParams:
    """``params`` with the slow annealing used for small problems and the coarsest level.

    Parameters
    ----------
    params : ADMMParams, optional
        Base parameters (defaults when None).
    k : int
        Number of labels.

    Returns
    -------
    ADMMParams
        ``rho_growth = SMALL_GROWTH``, and ``rho0 = SMALL_RHO0_MULTI`` when ``k > 2``.
    """
    params = params or ADMMParams()
    rho0 = SMALL_RHO0_MULTI if k > 2 else params.rho0
    return replace(params, rho_growth=SMALL_GROWTH, rho0=rho0)


#: Half-width of the band of free pixels around boundaries at each finer level.
BAND_RADIUS = 2
#: Pixels that a coarser level's polish relabelled, grown by this many pixels, are also left free
#: at the next level: ADMM never weighed those moves, which are taken given the rest of the
#: labelling and can lock in a wrong block that a thin band cannot undo (cameraman K = 2 at
#: n = 5e5: 0.41% above min-cut without, 0.13% with; 4: 0.13%, 16: 0.13%). None: no revisit.
REVISIT_RADIUS: int | None = 8
#: After a band level's polish, fuse its labels with the level's warm start (the coarser answer
#: copied and settled by ICM): each connected region where they differ is taken if it lowers
#: the energy. The band's ADMM starts from a small penalty, so its first iterates are the
#: smooth relaxation, which can take a right coarse decision back (the 512x512 demo's face:
#: 0.87 in level 1's warm start, 0.04 after 20 band iterations, though every level's own min-cut
#: labels it foreground; there the warm start's region also holds 400 wrong pixels, and is
#: kept out). Held-out K = 2 mean gap 0.112% -> 0.096% (2.5e5: 0.258% -> 0.171%), the
#: 14-problem set unchanged, no problem worse; 11 ms of a 5e5 solve (session 20).
WARM_FUSION = True


def _fuse_warm_start(level: MRFProblem, labels: np.ndarray, up: np.ndarray) -> np.ndarray:
    """``labels`` fused with the warm start ``up`` region by region (:data:`WARM_FUSION`), then
    settled by region moves if anything was taken; the energy never rises."""
    fused, moved = fuse(level, np.asarray(labels).ravel(), np.asarray(up).ravel())
    if not moved:
        return labels
    # ``labels`` is settled (an ICM fixed point too): ICM and region moves look around the change
    fused = icm(level, fused, since=labels)
    return settle_regions(level, fused, icm_optimal=True, since=labels)[0]


def _pixel_maps(blocks: list[np.ndarray]) -> list[np.ndarray | None]:
    """``maps[i]``: the level-``i`` pixel of every image pixel (None for level 0, the identity)."""
    maps: list[np.ndarray | None] = [None]
    for block in blocks:
        maps.append(block if maps[-1] is None else block[maps[-1]])
    return maps


def solve_coarse_to_fine(problem: MRFProblem, backend: Any = "cpu", params: Any = None, *,
                         seed: int | None = None, callback: Callable[[Any], Any] | None = None,
                         polish: bool = True, coarsest: int | None = None,
                         radius: int | None = None, slow_coarsest: bool = True) -> Any:
    """ℓ2-box ADMM from coarse to fine: whole problem at the coarsest level, then bands.

    The coarsest level (exact block restriction, at most ``coarsest`` pixels) is solved from
    ``seed``'s start. At each finer level the answer is copied to the pixels and polished, pixels
    away from its boundaries and agreeing with the data are fixed (early fixing), and ADMM solves
    the band that is left, warm-started from the copied answer. Pixels the coarser level's polish
    relabelled stay free too (:data:`REVISIT_RADIUS`). Every level ends with the polish (ICM,
    region moves, level-set fusion) on the whole level, so a fixed pixel can still move, and a
    band level then with fusion with its warm start (:data:`WARM_FUSION`).

    Parameters
    ----------
    problem : MRFProblem
    backend, params
        As for :class:`solver.mrf.MRFADMM`.
    seed : int, optional
        Random start at the coarsest level (None: the centre of the feasible set).
    callback : callable, optional
        Receives an :class:`solver.mrf.MRFIterationState` per iteration, in full-image terms, with
        iterations numbered across levels; return True to stop.
    polish : bool
        Polish the full-resolution answer (coarser levels are always polished).
    coarsest, radius : int, optional
        See :data:`COARSEST` and :func:`undecided_band` (default :data:`COARSEST` and
        :data:`BAND_RADIUS`, read at call time).
    slow_coarsest : bool
        Solve the coarsest level with :func:`slow_schedule`.

    Returns
    -------
    MRFResult
        ``iterations`` and ``history`` span all levels; ``time_s`` is the whole wall time.
    """
    from .admm_mrf import MRFADMM, MRFResult  # noqa: PLC0415 - admm_mrf imports this module
    from .icm import polish_labels  # noqa: PLC0415 - looked up per call: tests replace it

    t0 = time.perf_counter()
    coarsest = COARSEST if coarsest is None else coarsest
    radius = BAND_RADIUS if radius is None else radius
    levels, blocks = pyramid(problem, coarsest)
    # levels, blocks and maps are dropped once the loop has passed them: at the last level's
    # polish, a large photo's memory peak, none is left (3 MP: 2.2 -> 1.6 GB peak with the
    # polish's int32 work arrays and graph ends)
    # (the maps are for the callback's full-image view; a solve stopped at a coarse level, which
    # only a callback can ask for, makes its one map from the blocks left: 12 MP, 0.57 s and
    # 8 bytes a pixel per level spared without a callback)
    maps = _pixel_maps(blocks) if callback is not None else [None] * len(levels)
    history: list = []
    labels = revisit = None
    res = solver = None
    energy_admm = None
    for li in range(len(levels) - 1, -1, -1):
        level = levels[li]
        x0 = up = None
        sub = level
        if labels is not None:
            levels[li + 1] = maps[li + 1] = None
            up = icm(level, labels.ravel()[blocks[li]])
            band = undecided_band(level, up, radius)
            if REVISIT_RADIUS is not None and revisit is not None and revisit.any():
                grown = revisit[blocks[li]].reshape(level.shape)
                if REVISIT_RADIUS > 0:
                    grown = square_morphology(grown, REVISIT_RADIUS, "dilation")
                band |= grown
            blocks[li] = revisit = grown = None
            sub = fix_outside(level, up, band)
            x0 = np.eye(level.k)[up.ravel() - 1]
            band = None
        lp = params
        if labels is None and slow_coarsest:
            lp = slow_schedule(params, level.k)
        solver = MRFADMM(sub, backend, lp)
        view = {"pixel_map": None if li == 0 else maps[li], "shape": problem.shape,
                "offset": len(history), "level": li,
                "max_iter_total": solver.params.max_iter * len(levels)}
        res = solver.run(x0=x0, seed=seed if labels is None else None, callback=callback,
                         polish=False, view=view)
        history += [replace(r, iteration=r.iteration + view["offset"]) for r in res.history]
        x0 = view = None
        labels = res.labels
        stopped = res.admm is not None and res.admm.status == "stopped"
        if li == 0:
            energy_admm = res.energy  # (run without polish: the energy of ADMM's labels)
        if stopped:
            break
        if li > 0 or polish:
            unpolished = np.asarray(labels).ravel()
            # outside the band ADMM's labels are the warm start, an ICM fixed point
            labels = polish_labels(level, labels, solver.snapshot_weights(), split=li == 0,
                                   since=up)
            if WARM_FUSION and up is not None:
                labels = _fuse_warm_start(level, labels, up)
            revisit = unpolished != np.asarray(labels).ravel() if li > 0 else None
        if log.isEnabledFor(logging.INFO):  # (the energy costs a pass over the image)
            log.info("coarse-to-fine level %d (%d pixels, %d free): energy %.6g after %d "
                     "iterations", li, level.n, solver.free.size, level.energy(labels),
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
    converged = bool(res.converged) and li == 0
    return MRFResult(fine, problem.energy(fine), "admm", solver.backend.name, len(history),
                     time.perf_counter() - t0, converged, history, x_cont, res.admm,
                     energy_admm if energy_admm is not None else problem.energy(fine))
