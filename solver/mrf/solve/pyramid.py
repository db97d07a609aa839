"""Exact coarsening of a grid MRF, and the band of undecided pixels around a labelling's boundaries.

Coarsening by ``f x f`` blocks is the restriction of the energy to block-constant labellings:
with ``P`` the ``n x n_c`` block-indicator matrix, ``x = P x_c`` gives
``lam x'(I⊗L)x + d'x = lam x_c'(I⊗P'LP)x_c + (P'd)'x_c``, and ``P'LP`` is again the Laplacian of an
8-neighbour grid (of blocks) whose edge weights are the summed fine weights across block borders.
So a coarse labelling, copied back to the pixels, has exactly the coarse energy, which makes the
coarse level a faithful (smaller) picture of the fine problem for a coarse-to-fine start.
"""

from __future__ import annotations

import numpy as np

from solver.backend.threads import threaded
from solver.mrf.build.graph import GridGraph, edge_ends, own_grid
from solver.mrf.build.grid_kernels import _is_grid_edge_list, coarsen_edges
from solver.mrf.build.problem import MRFProblem, replace_problem
from solver.mrf.build.pyramid_kernels import coarsen_cells, coarsen_grid_edges
from solver.mrf.polish.morphology import square_morphology


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
    k = problem.k
    g = problem.graph
    h, w = (int(s) for s in problem.shape)
    unary, hard_c = threaded(coarsen_cells, np.ascontiguousarray(problem.unary),
                             np.ascontiguousarray(np.asarray(problem.hard).ravel()), h, w, factor)
    gw = np.asarray(g.weights, np.float64)
    grid = own_grid(g)
    gi = gj = None
    if not grid:
        gi, gj = (np.asarray(e, np.int32) for e in edge_ends(g))
    if factor == 2 and (grid or _is_grid_edge_list(gi, gj, h, w)):
        # (a photo's own graph: the same arrays, summed block row by block row on threads)
        lo, hi, weights = threaded(coarsen_grid_edges, gw, h, w)
        bad = 0
    else:
        if gi is None:
            gi, gj = edge_ends(g)
        lo, hi, weights, bad = coarsen_edges(gi, gj, gw, (h, w), factor)
    if bad:
        raise ValueError(f"{bad} edges of the graph are not 8-neighbour pixel pairs")
    graph = GridGraph(shape=cshape, i=lo, j=hi, weights=weights, beta=g.beta)
    coarse = MRFProblem(shape=cshape, k=k, lam=problem.lam, unary=unary, graph=graph,
                        laplacian=None, hard=hard_c, beta=problem.beta,
                        colour_model=problem.colour_model, models=problem.models,
                        constraints=(None if problem.constraints is None
                                     else problem.constraints.coarsened(block, len(hard_c))))
    return coarse, block


def undecided_band(problem: MRFProblem, labels: np.ndarray, radius: int = 2) -> np.ndarray:
    """Pixels a coarse-to-fine step should leave free: near a label boundary, or disputed by the
    data.

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
    seed |= (problem.cheapest + 1).reshape(problem.shape) != lab
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
    return replace_problem(problem, hard=new)


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


