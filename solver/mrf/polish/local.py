"""Local re-solves where a labelling shows the pyramid: straight label runs along cell lines.

A coarse-to-fine solve decides whole ``2^l x 2^l`` cells at its coarse levels. Where the data
is weak the finer levels and the polish can leave a cell's edge in place, and the result shows
a label boundary that runs straight along a pyramid cell line for tens of pixels: a person
reads it as a bug. The α-expansion moves of the final polish (:mod:`solver.mrf.polish.tv`) are
relaxed over the whole image with a step count the whole image can afford; near such a run the
move's relaxation has often not finished moving a boundary on flat data.

This module finds those runs in the labelling itself (no yardstick: a label change across a
line between pixel rows, or columns, ``c j - 1`` and ``c j`` for the pyramid's cell side ``c``,
running along it for more than ``length`` pixels) and re-solves the pixels within ``margin`` of
them: for every label, the TV relaxation of its α-expansion move with only those pixels free,
each connected part on a crop of its box (every pixel outside the part kept, so the crop's move
is the image's move restricted to the part), with many more steps than the whole image gets,
its level sets fused exactly. A real object boundary that happens to lie on a line is re-solved
too, at the cost of a small crop; every fused region lowers the energy, so the move never raises it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import scipy.ndimage as ndi

from solver.mrf.build.problem import MRFProblem
from solver.mrf.build.stencil import WIDTH, box_forward_costs, grid_geometry
from solver.mrf.polish.fusion import Workspace, fuse_level_sets_into
from solver.mrf.polish.morphology import square_morphology
from solver.mrf.polish.tv import (expansion_terms, grid_steps, kernel_grid, may_move,
                                  move_snapshot, start_value)
from solver.mrf.polish.tv_kernels import TVGrid

log = logging.getLogger(__name__)

Box = tuple[int, int, int, int]


def cell_line_runs(labels: np.ndarray, cell: int, length: int) -> np.ndarray:
    """The pixels on both sides of each straight label change along a pyramid cell line.

    Parameters
    ----------
    labels : numpy.ndarray
        ``(H, W)`` labels.
    cell : int
        Cell side: the lines lie between rows (and columns) ``cell j - 1`` and ``cell j``.
    length : int
        Only runs of more than this many pixels count.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` bool.
    """
    lab = np.asarray(labels)
    out = np.zeros(lab.shape, bool)
    for a, o in ((lab, out), (lab.T, out.T)):  # (rows, then columns as rows of the transpose)
        after = a[cell::cell]
        change = after != a[cell - 1:-1:cell][:after.shape[0]]
        if change.size == 0:
            continue
        edges = np.diff(np.pad(change.astype(np.int8), ((0, 0), (1, 1))), axis=1)
        starts, ends = np.nonzero(edges == 1), np.nonzero(edges == -1)
        for j, x0, x1 in zip(starts[0], starts[1], ends[1]):
            if x1 - x0 > length:
                r = cell * (int(j) + 1)
                o[r - 1:r + 1, x0:x1] = True
    return out


def run_regions(runs: np.ndarray, margin: int) -> list[tuple[Box, np.ndarray]]:
    """The regions to re-solve: the connected parts of the marked pixels grown by ``margin``
    (a ``2 margin + 1`` square), each as its box ``(y0, y1, x0, x1)`` (one pixel more on each
    side inside the image: the fixed frame) and its mask in that box.

    Two regions share no pixel and no edge (they are 8-connected components), so their moves
    are independent and can be proposed together; their boxes may overlap.

    Parameters
    ----------
    runs : numpy.ndarray
        ``(H, W)`` bool (:func:`cell_line_runs`).
    margin : int
        Free pixels around each run.

    Returns
    -------
    list of (tuple of int, numpy.ndarray)
    """
    h, w = runs.shape
    if not runs.any():
        return []
    grown = square_morphology(runs, margin, "dilation") if margin > 0 else runs
    comp, _ = ndi.label(grown, structure=np.ones((3, 3), bool))
    out = []
    for i, sl in enumerate(ndi.find_objects(comp), start=1):
        box = (max(sl[0].start - 1, 0), min(sl[0].stop + 1, h),
               max(sl[1].start - 1, 0), min(sl[1].stop + 1, w))
        out.append((box, comp[box[0]:box[1], box[2]:box[3]] == i))
    return out


class _Window:
    """One region's crop of the grid kernel's terms: its box's pixels (flat indices into the
    image), their unary costs (all a problem :func:`solver.mrf.polish.tv.expansion_terms`
    reads), forward-edge costs with the edges that leave the box removed, offsets, primal steps
    (the image's: a pixel's edge count is the image's), and which of its pixels may move (the
    region's, where the problem lets them)."""

    def __init__(self, box: Box, region: np.ndarray, problem: MRFProblem, grid: tuple,
                 movable: np.ndarray) -> None:
        gw, geom, two_lam, gamma = grid
        width = int(geom[WIDTH])
        y0, y1, x0, x1 = box
        self.pixels = (np.arange(y0, y1)[:, None] * width + np.arange(x0, x1)[None, :]).ravel()
        self.unary = problem.unary[self.pixels]
        self.cost, deg = box_forward_costs(gw, geom, two_lam, y0, y1, x0, x1)
        self.offsets = grid_geometry(y1 - y0, x1 - x0)[:8].copy()
        self.tau = (gamma / np.maximum(deg, 1)).astype(np.float32)
        self.movable = np.asarray(region, bool).ravel() & movable[self.pixels]


def _window_move(lab: np.ndarray, alpha: int, win: _Window, iterations: int,
                 sigma: np.float32, least: float, gap_tol: float
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """The relaxed α-expansion move in one window: the pixels proposed (image indices) and
    their ``y``, or None."""
    sub = lab[win.pixels]
    u, cost = expansion_terms(win, sub, alpha, win.cost, win.offsets)
    free = win.movable & (sub != alpha) & may_move(u, cost, win.offsets)
    if not free.any():
        return None
    y = (sub == alpha).astype(np.float32)
    start = start_value(cost, win.offsets, u, y) if np.isfinite(gap_tol) else np.inf
    grid_steps(None, TVGrid(cost, win.offsets, u, free, win.tau), y, sigma, iterations, 1e-3,
               start, gap_tol)
    keep = free & (y > least)
    if not keep.any():
        return None
    return win.pixels[keep], y[keep]


def _resolve(problem: MRFProblem, lab: np.ndarray, regions: list[tuple[Box, np.ndarray]],
             iterations: int, thresholds: tuple[float, ...], grid: tuple, gap_tol: float,
             workspace: Workspace | None, stop: Callable[[], bool] | None) -> int:
    """One round of :func:`fuse_local_expansions_into` on the given regions (``grid``:
    :func:`solver.mrf.polish.tv.kernel_grid`'s; ``gap_tol`` an energy, -inf for none)."""
    movable = np.asarray(problem.movable).ravel()
    windows = [_Window(b, r, problem, grid, movable) for b, r in regions]
    sigma = np.float32(0.5 / grid[3])
    least = min(thresholds)
    moved = 0
    for alpha in range(problem.k):
        if stop is not None and stop():
            break
        found = [m for m in (_window_move(lab, alpha, w, iterations, sigma, least, gap_tol)
                             for w in windows) if m is not None]
        if not found:
            continue
        snap = move_snapshot(lab, alpha, np.concatenate([m[0] for m in found]),
                             np.concatenate([m[1] for m in found]), problem.k)
        moved += fuse_level_sets_into(problem, lab, [snap], thresholds, max_pixels=None,
                                      workspace=workspace)
    return moved


def fuse_local_expansions_into(problem: MRFProblem, lab: np.ndarray, cell: int,
                               iterations: int, step: float, thresholds: tuple[float, ...],
                               margin: int = 16, length: int = 16, gap: float | None = None,
                               rounds: int = 1, covered: np.ndarray | None = None,
                               workspace: Workspace | None = None,
                               stop: Callable[[], bool] | None = None) -> int:
    """Re-solve the zones around ``lab``'s straight runs on pyramid cell lines by TV-relaxed
    α-expansion moves, each label in turn, fusing their level sets into ``lab`` in place.

    Parameters
    ----------
    problem : MRFProblem
        Any K, on an 8-neighbour grid with non-negative weights (else nothing is done).
    lab : numpy.ndarray
        ``(n,)`` 0-based labels, changed in place; the energy of the labels never rises.
    cell : int
        The pyramid's finest cell side (:func:`cell_line_runs`).
    iterations : int
        Most steps of each window's relaxation of each move.
    step : float
        Their scale, relative to the largest pairwise weight (as
        :func:`solver.mrf.polish.tv.grid_terms`'s).
    thresholds : tuple of float
        Levels proposed.
    margin, length : int
        Free pixels around a run, and the shortest run (exclusive) that counts.
    gap : float, optional
        A window's steps stop once its move is proved to gain at most this fraction of the
        labelling's energy; None: they run ``iterations``.
    rounds : int
        Most rounds: after a round that took regions, the runs of the new labels that lie
        outside the zones already re-solved (a move can complete a straight run a zone only
        touched) get their own round, with twice the last round's margin (the region that
        straightens such a run can reach past the old zone).
    covered : numpy.ndarray, optional
        ``(H, W)`` bool: zones re-solved before (their runs are passed over), updated in
        place with this call's zones; None: none.
    workspace : Workspace, optional
        The polish's shared work arrays.
    stop : callable, optional
        Polled before each label: True ends the moves (a cancel).

    Returns
    -------
    int
        Regions taken.
    """
    shape = tuple(int(s) for s in problem.shape)
    if iterations <= 0 or rounds <= 0:
        return 0
    if covered is None:
        covered = np.zeros(shape, bool)
    moved, grid, gap_tol = 0, None, -np.inf
    for done in range(rounds):
        runs = cell_line_runs(lab.reshape(shape), cell, length)
        runs &= ~covered  # (a run inside a zone already re-solved has had its moves)
        regions = run_regions(runs, margin << done)
        if not regions:
            break
        if grid is None:  # (made once there is something to re-solve)
            grid = kernel_grid(problem, step)
            if grid is None:
                return 0
            if gap is not None:
                gap_tol = float(gap) * max(1.0, abs(problem.energy(lab + 1)))
        for (y0, y1, x0, x1), region in regions:
            covered[y0:y1, x0:x1] |= region
        taken = _resolve(problem, lab, regions, iterations, thresholds, grid, gap_tol,
                         workspace, stop)
        moved += taken
        log.debug("local re-solves, round %d: %d regions of %d pixels, %d moves taken",
                  done + 1, len(regions), sum(int(r.sum()) for _, r in regions), taken)
        if not taken or (stop is not None and stop()):
            break
    return moved
