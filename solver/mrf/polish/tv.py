"""TV-relaxation proposals for the polish: the labelling's own for K = 2, each label's expansion
move for K > 2.

With weak data (a rectangle, a few short strokes) ℓ2-box ADMM can settle on a labelling that
differs from the optimum in a whole region, one that no level set of its own iterates outlines
(its relaxation is quadratic in the pairwise term, so flat data leaves it undecided). For two
labels the TV (ℓ1) form of the same energy has a tight relaxation; a few hundred linearized-ADMM
steps on it (:func:`solver.mrf.polish.tv_kernels.tv_iterate`), started from the polish's
labelling, outline such regions, and their level sets are fused like ADMM's own
(:func:`solver.mrf.polish.fusion.fuse_level_sets_into`): each region is taken only if it lowers
the energy. For K > 2 the same iteration runs on each label's α-expansion move, a two-label
submodular energy of the same form (:func:`expansion_terms`). Tuned and measured in
docs/decisions.md, "TV proposals for two labels" and "TV-relaxed expansion moves".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from solver.backend.threads import threaded
from solver.mrf.build.problem import MRFProblem
from solver.mrf.build.stencil import box_forward_costs, forward_costs, grid_offsets, grid_view
from solver.mrf.polish import tv_device, tv_kernels
from solver.mrf.polish.fusion import Snapshot, Workspace, fuse_level_sets_into
from solver.mrf.polish.moves import on_copy

log = logging.getLogger(__name__)


class GridRelaxation:
    """The TV relaxation of a K = 2 energy on an 8-neighbour grid, run in calls that go on
    from one another (:func:`solver.mrf.polish.tv_kernels.tv_iterate_grid`'s state kept
    between them): calls of multiples of 25 steps make the iterates of one run.

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem with a grid view.
    lab : numpy.ndarray
        ``(n,)`` 0-based labels to start from (hard pixels keep theirs).
    terms : tuple
        :func:`grid_terms` of the problem.
    backend : solver.backend.Backend, optional
        Where the steps run (:func:`grid_steps`); None: the host.
    gap : float, optional
        Also stop once ``lab`` is proved within this fraction of its energy's magnitude of the
        optimum (the duality gap at the start, :func:`tv_kernels.grid_dual_value`, checked
        every 25 steps); None: no such test.
    box : tuple of int, optional
        ``(y0, y1, x0, x1)``: the steps run on this box alone, as a grid of its own, ``terms``
        being the box's (:func:`grid_terms` with ``box``); every pixel outside it, and every
        pixel on its edge that has a neighbour outside, must be hard (:func:`movable_box`).
        Then the values are those of the steps on the whole grid: a hard pixel's value never
        changes and only reaches the free pixels through its edges to them, all in the box.

    Attributes
    ----------
    s : numpy.ndarray
        ``(n,)`` float32 values of the steps so far (label 2's weight), the whole grid's.
    """

    def __init__(self, problem: MRFProblem, lab: np.ndarray, terms: tuple,
                 backend: Any = None, gap: float | None = None,
                 box: tuple[int, int, int, int] | None = None) -> None:
        self.cost, self.offsets, self.tau, gamma = terms
        self.sigma = np.float32(0.5 / gamma)
        self.s = np.asarray(lab, dtype=np.float32).copy()
        self.shape = tuple(int(v) for v in problem.shape)
        self.box = None if box is None else tuple(int(v) for v in box)
        unary = self._boxed(problem.unary)  # (a copy of the box's rows alone)
        self.u = np.subtract(unary[:, 1], unary[:, 0], dtype=np.float32, casting="unsafe")
        self.free = self._boxed(problem.movable)
        self.inner = self._boxed(self.s) if box is not None else self.s
        if self.inner.size != self.tau.size:
            raise ValueError(f"the TV terms are for {self.tau.size} pixels, the box has "
                             f"{self.inner.size}")
        self.p = np.zeros((4, self.inner.size), np.float32)
        self.bar = self.inner.copy()
        self.backend = backend
        self.problem = problem
        self.gap = None if gap is None else float(gap)
        self.start, self.gap_tol = np.inf, -np.inf
        self.restart_gap(lab)
        self.steps = 0

    def run(self, iterations: int, tol: float) -> bool:
        """At most ``iterations`` more steps (a multiple of 25 keeps the run's rhythm).

        Parameters
        ----------
        iterations : int
        tol : float
            Stop once 25 steps move no value by more than this.

        Returns
        -------
        bool
            Whether a stopping test ended the steps before ``iterations``.
        """
        grid = tv_kernels.TVGrid(self.cost, self.offsets, self.u, self.free, self.tau)
        done, sparse = grid_steps(self.backend, grid, self.inner, self.sigma, int(iterations),
                                  float(tol), self.start, self.gap_tol, self.p, self.bar)
        if self.box is not None:
            y0, y1, x0, x1 = self.box
            self.s.reshape(self.shape)[y0:y1, x0:x1] = self.inner.reshape(y1 - y0, x1 - x0)
        self.steps += done
        log.debug("TV relaxation: %d steps (%d in all), %d of them sparse", done, self.steps,
                  sparse)
        return done < iterations

    def proven_gap(self, lab: np.ndarray) -> float:
        """How far ``lab`` is at most from the optimum, as a fraction of its energy's magnitude
        (at least 1): its relaxed value less the dual objective of the steps so far
        (:func:`solver.mrf.polish.tv_kernels.grid_dual_value`, a lower bound on the minimum).

        Parameters
        ----------
        lab : numpy.ndarray
            ``(n,)`` 0-based labels with the hard pixels' labels of the start.

        Returns
        -------
        float
        """
        value = start_value(self.cost, self.offsets, self.u, self._boxed(lab))
        bound = threaded(tv_kernels.grid_dual_value, self.offsets, self.u, self.free,
                         self.inner, self.p)
        return (value - float(bound)) / max(1.0, abs(self.problem.energy(np.asarray(lab) + 1)))

    def restart_gap(self, lab: np.ndarray) -> None:
        """Let the gap test of later steps prove ``lab`` (the labels after a fusion) instead
        of the start: a gap test on a start that a fusion has since improved can never pass.

        Parameters
        ----------
        lab : numpy.ndarray
            ``(n,)`` 0-based labels with the hard pixels' labels of the start.
        """
        if self.gap is not None:
            self.start = start_value(self.cost, self.offsets, self.u, self._boxed(lab))
            self.gap_tol = self.gap * max(1.0, abs(self.problem.energy(np.asarray(lab) + 1)))

    def _boxed(self, values: np.ndarray) -> np.ndarray:
        """:func:`boxed` on this relaxation's grid and box."""
        return boxed(values, self.shape, self.box)


def tv_relaxation(problem: MRFProblem, lab: np.ndarray, iterations: int, step: float,
                  tol: float = 1e-3, backend: Any = None) -> tuple[np.ndarray, int]:
    """Approximate minimiser of the TV relaxation of a K = 2 energy, started from ``lab``.

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem.
    lab : numpy.ndarray
        ``(n,)`` 0-based labels to start from (hard pixels keep theirs).
    iterations : int
        Most primal-dual steps.
    step : float
        The primal step scale relative to the largest pairwise weight ``2 lam``.
    tol : float
        Stop once 25 steps move no pixel's value by more than this.
    backend : solver.backend.Backend, optional
        Where the steps run (:func:`grid_steps`); None: the host.

    Returns
    -------
    s : numpy.ndarray
        ``(n,)`` float64 weight of label 2 per pixel, in [0, 1].
    steps : int
        Steps run.
    """
    if problem.k != 2:
        raise ValueError(f"the TV relaxation is for two labels, not K = {problem.k}")
    box = movable_box(problem)
    terms = grid_terms(problem, step, box=box)
    if terms is not None:
        relax = GridRelaxation(problem, lab, terms, backend, box=box)
        relax.run(iterations, tol)
        return relax.s.astype(np.float64), relax.steps
    # (no grid: the Laplacian's upper triangle, each edge once)
    u = problem.unary[:, 1] - problem.unary[:, 0]
    two_lam = 2.0 * float(problem.lam)
    gamma = step / max(two_lam, 1e-300)
    s = np.asarray(lab, dtype=np.float64).copy()
    upper = sp.triu(problem.laplacian, k=1, format="coo")
    c = -two_lam * upper.data.astype(np.float64)
    steps = tv_kernels.tv_iterate(upper.row.astype(np.int64), upper.col.astype(np.int64),
                                  c, np.ascontiguousarray(u, dtype=np.float64),
                                  problem.movable, s, np.zeros(c.size), gamma, int(iterations),
                                  float(tol))
    return s, int(steps)


def start_value(cost: np.ndarray, offsets: np.ndarray, u: np.ndarray, s: np.ndarray) -> float:
    """The TV relaxation's value at ``s`` (the two-label energy less its constant at a
    labelling), from the grid kernel's float32 terms so that it compares with their dual
    objective: ``u's + sum_q cost_q |s_i - s_{i + o_q}|``, summed in float64
    (:func:`solver.mrf.polish.tv_kernels.grid_primal_value`).

    Parameters
    ----------
    cost, offsets, u
        As :func:`solver.mrf.polish.tv_kernels.tv_iterate_grid`'s.
    s : numpy.ndarray
        ``(n,)`` values in [0, 1].

    Returns
    -------
    float
    """
    return float(threaded(tv_kernels.grid_primal_value, cost, offsets,
                          np.ascontiguousarray(u, dtype=np.float32),
                          np.ascontiguousarray(s, dtype=np.float32)))


def grid_steps(backend: Any, grid: tv_kernels.TVGrid, s: np.ndarray, sigma: np.float32,
               iterations: int, tol: float, start: float = np.inf,
               gap_tol: float = -np.inf, p: np.ndarray | None = None,
               bar: np.ndarray | None = None) -> tuple[int, int]:
    """The grid kernel's steps on ``s`` in place: on the GPU where ``backend`` is the real GPU
    backend (:mod:`solver.mrf.polish.tv_device`, the same iterates), else on the host
    (:func:`solver.mrf.polish.tv_kernels.tv_iterate_grid`).

    Parameters
    ----------
    backend : solver.backend.Backend or None
        Where to run them.
    grid : solver.mrf.polish.tv_kernels.TVGrid
        The relaxation.
    s, sigma, iterations, tol
        As :func:`solver.mrf.polish.tv_kernels.tv_iterate_grid`'s.
    start, gap_tol : float
        Its ``start_value`` (:func:`start_value`) and ``gap_tol``: stop once the start is
        proved within ``gap_tol`` of the optimum (the default never).
    p, bar : numpy.ndarray, optional
        The duals and extrapolation to go on from, updated in place (together; default: a
        fresh start).

    Returns
    -------
    steps : int
        Steps run.
    sparse : int
        How many of them visited only the pixels that could move (the host's).
    """
    if tv_device.applies(backend):
        return tv_device.tv_iterate_grid(backend, *grid, s, sigma, iterations, tol, start,
                                         gap_tol, p, bar), 0
    return threaded(tv_kernels.tv_iterate_grid, grid, s, sigma, iterations, tol,
                    tv_kernels.SPARSE_BELOW, float(start), float(gap_tol), p, bar)


def fuse_tv_into(problem: MRFProblem, lab: np.ndarray, iterations: int, step: float,
                 thresholds: tuple[float, ...], workspace: Workspace | None = None,
                 backend: Any = None, gap: float | None = None,
                 every: int | None = None, next_every: int | None = None,
                 proof: float | None = None, proof_iterations: int = 0,
                 stop: Callable[[], bool] | None = None) -> int:
    """Fuse the level sets of the TV relaxation (from ``lab``) into ``lab`` in place.

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem.
    lab : numpy.ndarray
        ``(n,)`` 0-based labels, changed in place; the energy never rises.
    iterations, step : int, float
        Most steps and their scale, as :func:`tv_relaxation`'s.
    thresholds : tuple of float
        Levels ``t`` whose sets ``{s > t}`` are proposed.
    workspace : Workspace, optional
        The polish's shared work arrays.
    backend : solver.backend.Backend, optional
        Where the relaxation's steps run (:func:`grid_steps`); None: the host.
    gap : float, optional
        Stop the steps once the start is proved within this fraction of its energy of the
        optimum (:class:`GridRelaxation`); None: no such test.
    every : int, optional
        On a grid, fuse the level sets every this many steps (a multiple of 25) and stop once
        a fusion takes nothing; None: once, after the steps.
    next_every : int, optional
        With ``every``: the rounds after the first are this many steps (None: ``every``).
    proof : float, optional
        With ``every``, on a grid: neither a fusion that takes nothing nor ``iterations`` ends
        the steps while the labels are not yet proved within this fraction of their energy of
        the optimum (:meth:`GridRelaxation.proven_gap`); they go on, up to
        ``proof_iterations`` steps in all. None: no such test.
    proof_iterations : int
        The most steps while the labels are not proved within ``proof``.
    stop : callable, optional
        Polled after each round's fusion: True ends the steps (a cancel).

    Returns
    -------
    int
        Regions taken.
    """
    box = movable_box(problem) if problem.k == 2 else None
    terms = grid_terms(problem, step, box=box) if problem.k == 2 else None
    if terms is None:
        s, steps = tv_relaxation(problem, lab, iterations, step, backend=backend)
        moved = _fuse_levels(problem, lab, s, thresholds, workspace)
        log.debug("TV proposals: %d steps, %d regions taken", steps, moved)
        return moved
    relax = GridRelaxation(problem, lab, terms, backend, gap, box)
    block = iterations if every is None else max(int(every), 1)
    later = block if next_every is None else max(int(next_every), 1)
    proving = proof is not None and every is not None
    most = max(iterations, int(proof_iterations)) if proving else iterations
    moved, unproven = 0, None
    while relax.steps < most:
        end = iterations if relax.steps < iterations else most  # (a check at ``iterations``)
        stopped = relax.run(min(later if relax.steps else block, end - relax.steps), 1e-3)
        taken = _fuse_levels(problem, lab, relax.s, thresholds, workspace)
        moved += taken
        if stopped or (not taken and not proving) or (stop is not None and stop()):
            break
        if taken:
            relax.restart_gap(lab)
            unproven = None
        if proving and (not taken or relax.steps >= iterations):
            unproven = relax.proven_gap(lab)
            if unproven <= proof:
                break
        elif relax.steps >= iterations:
            break
    if unproven is not None and unproven > proof:
        log.debug("TV proposals: the labels are proved only within %.2g of the optimum",
                  unproven)
    log.debug("TV proposals: %d steps, %d regions taken", relax.steps, moved)
    return moved


def _fuse_levels(problem: MRFProblem, lab: np.ndarray, s: np.ndarray,
                 thresholds: tuple[float, ...], workspace: Workspace | None) -> int:
    """The level sets of the label-2 weights ``s`` fused into ``lab``; regions taken."""
    weights = np.empty((s.size, 2), dtype=np.float32)
    weights[:, 1] = s
    weights[:, 0] = 1.0 - s
    return fuse_level_sets_into(problem, lab, [Snapshot.from_dense(weights)], thresholds,
                                max_pixels=None, workspace=workspace)


def fuse_tv(problem: MRFProblem, labels: np.ndarray, iterations: int, step: float,
            thresholds: tuple[float, ...], gap: float | None = None,
            every: int | None = None) -> tuple[np.ndarray, int]:
    """:func:`fuse_tv_into` on 1-based labels, returning new ones.

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem.
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..2.
    iterations, step, thresholds, gap, every
        As :func:`fuse_tv_into`.

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int32 labels in 1..2, energy no higher than the input's.
    moved : int
        Regions taken.
    """
    return on_copy(fuse_tv_into, problem, labels, iterations, step, thresholds, None, None, gap,
                   every, dtype=np.int64)


def tv_relaxation_area(problem: MRFProblem, lab: np.ndarray, area: tuple[float, float],
                       weights: np.ndarray, iterations: int, step: float, gap: float = 0.0
                       ) -> tuple[np.ndarray, float]:
    """:func:`tv_relaxation` with the area of label 2, ``sum weights_i s_i``, kept within
    ``area`` (a K = 2 problem with area bounds; an 8-neighbour grid).

    Parameters
    ----------
    problem : MRFProblem
        A two-label problem with a grid view (:mod:`solver.mrf.build.stencil`).
    lab : numpy.ndarray
        ``(n,)`` 0-based labels to start from, label 2's area within ``area``.
    area : tuple of float
        Least and most area of label 2 (in the units of ``weights``).
    weights : numpy.ndarray
        ``(n,)`` area of each pixel.
    iterations, step : int, float
        As :func:`tv_relaxation`.
    gap : float
        Stop once ``lab``'s energy is proved within this fraction of its magnitude of the
        relaxation's minimum, hence of every labelling's within the bounds (the duality gap,
        checked every 25 steps; :func:`solver.mrf.polish.tv_kernels.tv_iterate_grid_area`).
        0: run every step.

    Returns
    -------
    s : numpy.ndarray
        ``(n,)`` float64 weight of label 2 per pixel, in [0, 1].
    start_gap : float
        The last duality gap of ``lab`` found, as a fraction of its energy's magnitude (inf
        where none was taken).
    """
    if problem.k != 2:
        raise ValueError(f"the TV relaxation is for two labels, not K = {problem.k}")
    w = np.asarray(weights, dtype=np.float32)
    terms = grid_terms(problem, step, row=w)
    if terms is None:
        raise ValueError("the TV relaxation with an area bound needs an 8-neighbour grid")
    cost, offsets, tau, gamma = terms
    u = (problem.unary[:, 1] - problem.unary[:, 0]).astype(np.float32)
    free = problem.movable
    s32 = np.asarray(lab, dtype=np.float32).copy()
    start, scale = np.inf, max(1.0, abs(problem.energy(np.asarray(lab) + 1)))
    if gap > 0:  # (the start's value from the kernel's own float32 terms, as its dual's)
        start = start_value(cost, offsets, u, s32)
    steps, nu, left = threaded(tv_kernels.tv_iterate_grid_area,
                               tv_kernels.TVGrid(cost, offsets, u, free, tau), s32,
                               np.float32(0.5 / gamma), w, (float(area[0]), float(area[1])),
                               1.0 / (gamma * float(w.sum())), int(iterations), start,
                               float(gap) * scale, threads=tv_kernels.step_threads(s32.size))
    log.debug("TV relaxation under an area bound: %d steps, multiplier %.4g, start gap %.3g",
              steps, nu, left / scale)
    return s32.astype(np.float64), float(left) / scale


def expansion_terms(problem: MRFProblem, lab: np.ndarray, alpha: int, cost: np.ndarray,
                    offsets: np.ndarray, apart: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The α-expansion move of ``lab`` to label ``alpha`` as a K = 2 TV energy.

    With ``y_i = 1`` for "pixel i takes ``alpha``", the move's energy is, up to a constant,
    ``u^T y + sum c'_ij |y_i - y_j|``: an edge whose ends share a label other than ``alpha``
    keeps its cost ``c``; one whose ends carry two such different labels costs ``c (1 - y_i
    y_j) = c - c (y_i + y_j) / 2 + c |y_i - y_j| / 2``; one with an end at ``alpha`` costs
    ``c (1 - y)`` at its other end, a unary term.

    Parameters
    ----------
    problem : MRFProblem
        The problem (any K).
    lab : numpy.ndarray
        ``(n,)`` 0-based labels.
    alpha : int
        0-based label to expand.
    cost : numpy.ndarray
        ``(4, n)`` float32 forward-edge costs ``2 lam W_ij`` (0: no edge), as
        :func:`tv_relaxation` builds them.
    offsets : numpy.ndarray
        ``(8,)`` grid offsets (:func:`solver.mrf.build.stencil.grid_offsets`).
    apart : numpy.ndarray, optional
        ``(K, K)`` bool apart pairs (0-based), for a labelling that keeps them: a pixel that
        stays at a label apart from α must not see a neighbour take α, so such an edge gets
        the penalty ``M max(0, y_j - y_i) = M |y_i - y_j| / 2 + M (y_j - y_i) / 2`` (``M``
        above any one pixel's gain from a move), which makes the relaxation's level sets keep
        the pairs apart where it can; the fusion checks each region itself.

    Returns
    -------
    u : numpy.ndarray
        ``(n,)`` float32 unary term.
    move_cost : numpy.ndarray
        ``(4, n)`` float32 edge costs ``c'``.
    """
    n = lab.size
    u = (problem.unary[:, alpha] - problem.unary[np.arange(n), lab]).astype(np.float32)
    at = lab == alpha
    out = np.zeros_like(cost)
    for q in range(4):
        o = int(offsets[4 + q])
        if o >= n:  # (a single row: no edge that far)
            continue
        c = cost[q, :n - o]
        ai, aj = at[:n - o], at[o:]
        other = ~ai & ~aj
        same = lab[:n - o] == lab[o:]
        out[q, :n - o] = np.where(other, np.where(same, c, 0.5 * c), 0.0)
        half = np.where(other & ~same, 0.5 * c, 0.0)
        u[:n - o] -= np.where(aj & ~ai, c, 0.0) + half
        u[o:] -= np.where(ai & ~aj, c, 0.0) + half
    if apart is not None and np.any(apart[alpha]):
        big = np.float32(2.0 * (float(np.abs(u).max()) + 8.0 * float(cost.max())))
        blocks = np.asarray(apart[alpha])[lab]  # a pixel whose label must not touch alpha
        for q in range(4):
            o = int(offsets[4 + q])
            if o >= n:  # (a single row: no edge that far)
                continue
            edge = (cost[q, :n - o] > 0.0) & ~at[:n - o] & ~at[o:]
            i_blocks = edge & blocks[:n - o]  # y_j <= y_i
            j_blocks = edge & blocks[o:]      # y_i <= y_j
            out[q, :n - o] += (0.5 * big) * (i_blocks.astype(np.float32)
                                             + j_blocks.astype(np.float32))
            u[:n - o] += np.where(j_blocks, 0.5 * big, 0.0) - np.where(i_blocks, 0.5 * big, 0.0)
            u[o:] += np.where(i_blocks, 0.5 * big, 0.0) - np.where(j_blocks, 0.5 * big, 0.0)
    return u, out


#: Share of the grid at most that the box of the free pixels may cover for the K = 2 TV steps
#: to run on it alone (:func:`movable_box`): a rectangle's outside, hard, then costs nothing
#: (measured: docs/decisions.md, The TV steps on the free pixels' box).
BOX_BELOW = 0.9


def movable_box(problem: MRFProblem) -> tuple[int, int, int, int] | None:
    """The box ``(y0, y1, x0, x1)`` (rows ``y0 .. y1 - 1``, columns ``x0 .. x1 - 1``) of the
    free pixels grown by one pixel (clipped to the image): every pixel outside it is hard and
    so is every pixel on its edge with a neighbour outside. None where no pixel is free, where
    it covers more than :data:`BOX_BELOW` of the grid, or is under 3 columns wide.

    Parameters
    ----------
    problem : MRFProblem
        A problem on an 8-neighbour grid.

    Returns
    -------
    box : tuple of int or None
        ``(y0, y1, x0, x1)``, or None where the TV steps should run on the whole grid.
    """
    h, w = (int(v) for v in problem.shape)
    free = problem.movable.reshape(h, w)
    rows = np.flatnonzero(free.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(free.any(axis=0))
    y0, y1 = max(int(rows[0]) - 1, 0), min(int(rows[-1]) + 2, h)
    x0, x1 = max(int(cols[0]) - 1, 0), min(int(cols[-1]) + 2, w)
    if x1 - x0 < 3 or (y1 - y0) * (x1 - x0) > BOX_BELOW * h * w:
        return None
    return y0, y1, x0, x1


def boxed(values: np.ndarray, shape: tuple[int, int],
          box: tuple[int, int, int, int] | None) -> np.ndarray:
    """A grid's ``(n,)`` or ``(n, K)`` values at a box's pixels, row by row (the box's own
    grid's order; a copy); without a box, all of them (a view).

    Parameters
    ----------
    values : numpy.ndarray
        ``(n,)`` or ``(n, K)``, ``n = H W``.
    shape : tuple of int
        The grid's ``(H, W)``.
    box : tuple of int or None
        ``(y0, y1, x0, x1)`` (:func:`movable_box`).

    Returns
    -------
    numpy.ndarray
    """
    values = np.asarray(values)
    rest = values.shape[1:] if values.ndim == 2 else ()
    if box is None:
        return values.reshape(-1, *rest)
    y0, y1, x0, x1 = (int(v) for v in box)
    inside = values.reshape(int(shape[0]), int(shape[1]), *rest)[y0:y1, x0:x1]
    return np.ascontiguousarray(inside).reshape(-1, *rest)


def kernel_grid(problem: MRFProblem, step: float
                ) -> tuple[np.ndarray, np.ndarray, float, float] | None:
    """The grid weights and geometry the TV kernels read
    (:func:`solver.mrf.build.stencil.grid_view`), the largest pairwise weight ``2 lam`` and the
    step scale ``gamma = step / (2 lam)``, or None when the problem has no grid view, a
    negative (or NaN) edge weight, or no pairwise term at all (λ = 0: each pixel's best label is
    the answer, and there is nothing for a relaxation to smooth).

    Parameters
    ----------
    problem : MRFProblem
    step : float
        The primal step scale, relative to ``2 lam``.

    Returns
    -------
    tuple or None
        ``(gw, geom, two_lam, gamma)``.
    """
    two_lam = 2.0 * float(problem.lam)
    if not two_lam > 0.0:
        return None
    gw, geom = grid_view(problem)
    if gw.shape[0] == 0 or not np.all(gw >= 0.0):  # (a negative or NaN weight: no such kernel)
        return None
    return gw, geom, two_lam, step / two_lam


def grid_terms(problem: MRFProblem, step: float, row: np.ndarray | float | None = None,
               layers: int = 1, box: tuple[int, int, int, int] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """Forward-edge costs ``(4, n)`` (float32, 0: no edge), offsets, primal steps and ``gamma``
    of the grid kernel, or None when the problem has no grid view
    (:func:`solver.mrf.build.stencil.grid_view`) or a negative edge weight. A pixel's primal
    step is ``gamma`` over the entries of its column: its edge count once per layer of the
    relaxation (two for :mod:`solver.mrf.polish.layered`), plus its entry of ``row`` where more
    constraint rows hold it (an area; a nesting's order rows). With ``box``
    (``(y0, y1, x0, x1)``, :func:`movable_box`) the terms of that box as a grid of its own: its
    pixels' edges inside it, and their steps from their edge counts in the image."""
    grid = kernel_grid(problem, step)
    if grid is None:
        return None
    gw, geom, two_lam, gamma = grid
    if box is None:
        cost, deg = forward_costs(gw, geom, two_lam)
        offsets = geom[:8].copy()
    else:
        y0, y1, x0, x1 = (int(v) for v in box)
        cost, deg = box_forward_costs(gw, geom, two_lam, y0, y1, x0, x1)
        offsets = grid_offsets(x1 - x0)
        if isinstance(row, np.ndarray):
            row = boxed(row.reshape(-1), problem.shape, box)
    entries = layers * np.maximum(deg, 1)
    tau = (gamma / (entries if row is None else entries + row)).astype(np.float32)
    return cost, offsets, tau, gamma


def fuse_tv_expansion_into(problem: MRFProblem, lab: np.ndarray, alpha: int, iterations: int,
                           step: float, thresholds: tuple[float, ...],
                           workspace: Workspace | None = None, tol: float = 1e-3,
                           backend: Any = None) -> int:
    """Fuse the level sets of the TV relaxation of the α-expansion move of ``lab`` to label
    ``alpha`` (:func:`expansion_terms`) into ``lab`` in place, as regions of ``alpha``.

    The move is a two-label submodular energy, so its TV relaxation is tight: each level set
    of a minimiser is an optimal move, and its regions (no edge joins two of them) each lower
    the energy or leave it, so fusing them region by region reaches the optimal move once the
    relaxation has converged. A problem with a grid view only (else nothing is done).

    Parameters
    ----------
    problem : MRFProblem
        A problem with K >= 2 labels.
    lab : numpy.ndarray
        ``(n,)`` 0-based labels, changed in place; the energy never rises.
    alpha : int
        0-based label to expand.
    iterations, step : int, float
        As :func:`tv_relaxation`.
    thresholds : tuple of float
        Levels ``t`` whose sets ``{y > t}`` are proposed.
    workspace : Workspace, optional
        The polish's shared work arrays.
    tol, backend
        As :func:`tv_relaxation`.

    Returns
    -------
    int
        Regions taken.
    """
    terms = grid_terms(problem, step)
    return 0 if terms is None else _fuse_expansion(problem, lab, alpha, terms, iterations,
                                                   thresholds, workspace, tol, backend)


def _fuse_expansion(problem: MRFProblem, lab: np.ndarray, alpha: int, terms: tuple,
                    iterations: int, thresholds: tuple[float, ...],
                    workspace: Workspace | None, tol: float, backend: Any,
                    gap: float | None = None) -> int:
    """:func:`fuse_tv_expansion_into` with the grid's terms made."""
    snap = expansion_snapshot(problem, lab, alpha, terms, iterations, min(thresholds), tol,
                              backend=backend, gap=gap)
    if snap is None:
        return 0
    return fuse_level_sets_into(problem, lab, [snap], thresholds, max_pixels=None,
                                workspace=workspace)


def may_move(u: np.ndarray, move_cost: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The pixels of a two-label move (:func:`expansion_terms`) that may take the new label in
    a minimiser: a pixel whose switching cost ``u`` is at least every edge cost it could save
    stays put in some minimiser (its subgradient is never negative), so it needs no steps.

    Parameters
    ----------
    u, move_cost : numpy.ndarray
        The move's ``(n,)`` unary term and ``(4, n)`` forward-edge costs.
    offsets : numpy.ndarray
        ``(8,)`` grid offsets.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` bool.
    """
    n = u.size
    reach = move_cost.sum(axis=0)
    for q in range(4):
        o = int(offsets[4 + q])
        if o >= n:  # (a single row: no edge that far)
            continue
        reach[o:] += move_cost[q, :n - o]
    return u < reach


def expansion_snapshot(problem: MRFProblem, lab: np.ndarray, alpha: int, terms: tuple,
                       iterations: int, least: float, tol: float = 1e-3,
                       apart: np.ndarray | None = None, backend: Any = None,
                       gap: float | None = None) -> Snapshot | None:
    """The TV relaxation of the α-expansion move of ``lab`` as label weights: ``y`` on
    ``alpha`` and ``1 - y`` on each pixel's own label, over the free pixels whose ``y``
    exceeds ``least`` (every other pixel at its label), or None when there are none.

    Parameters
    ----------
    problem : MRFProblem
        A problem on an 8-neighbour grid.
    lab : numpy.ndarray
        ``(n,)`` 0-based labels.
    alpha : int
        0-based label to expand.
    terms : tuple
        ``(cost, offsets, tau, gamma)`` of the grid (:func:`grid_terms`).
    iterations : int
        Most steps.
    least : float
        Lowest level that will be proposed.
    tol : float
        As :func:`tv_relaxation`.
    apart : numpy.ndarray, optional
        Apart pairs the move must keep (:func:`expansion_terms`).
    backend : solver.backend.Backend, optional
        Where the relaxation's steps run (:func:`grid_steps`); None: the host.
    gap : float, optional
        Stop the steps once no expansion of ``alpha`` is proved to lower the energy by more
        than this fraction of its magnitude (the move's duality gap at ``lab``, checked every
        25 steps); None: no such test.

    Returns
    -------
    Snapshot or None
    """
    cost, offsets, tau, gamma = terms
    u, move_cost = expansion_terms(problem, lab, alpha, cost, offsets, apart)
    free = problem.movable & (lab != alpha) & may_move(u, move_cost, offsets)
    y = (lab == alpha).astype(np.float32)
    start, gap_tol = np.inf, -np.inf
    if gap is not None:
        start = start_value(move_cost, offsets, u, y)
        gap_tol = float(gap) * max(1.0, abs(problem.energy(lab + 1)))
    steps, sparse = grid_steps(backend, tv_kernels.TVGrid(move_cost, offsets, u, free, tau), y,
                               np.float32(0.5 / gamma), int(iterations), float(tol), start,
                               gap_tol)
    pixels = np.flatnonzero(free & (y > least))
    log.debug("TV expansion of label %d: %d steps (%d sparse), %d free, %d proposed",
              alpha + 1, steps, sparse, int(free.sum()), pixels.size)
    if pixels.size == 0:
        return None
    return move_snapshot(lab, alpha, pixels, y[pixels], problem.k)


def move_snapshot(lab: np.ndarray, alpha: int, pixels: np.ndarray, y: np.ndarray,
                  k: int) -> Snapshot:
    """A relaxed α-expansion move as label weights: ``y`` on ``alpha`` and ``1 - y`` on each
    pixel's own label at ``pixels``, every other pixel fixed at its label.

    Parameters
    ----------
    lab : numpy.ndarray
        ``(n,)`` 0-based labels.
    alpha : int
        0-based label the move expands.
    pixels : numpy.ndarray
        ``(m,)`` pixel indices proposed.
    y : numpy.ndarray
        ``(m,)`` their relaxed move values.
    k : int
        Labels.

    Returns
    -------
    Snapshot
    """
    pixels = np.asarray(pixels, np.int64)
    weights = np.zeros((pixels.size, k), dtype=np.float32)
    weights[np.arange(pixels.size), lab[pixels]] = 1.0 - y
    weights[:, alpha] += y
    fixed = (lab + 1).astype(np.int8)
    fixed[pixels] = 0
    return Snapshot(pixels, weights, fixed)


def fuse_tv_expansions_into(problem: MRFProblem, lab: np.ndarray, iterations: int, step: float,
                            thresholds: tuple[float, ...],
                            workspace: Workspace | None = None, backend: Any = None,
                            gap: float | None = None,
                            stop: Callable[[], bool] | None = None) -> int:
    """:func:`fuse_tv_expansion_into` for each label in turn (one sweep of TV-relaxed
    α-expansion moves): the K > 2 counterpart of :func:`fuse_tv_into`.

    Parameters
    ----------
    problem : MRFProblem
        A problem on an 8-neighbour grid (else nothing is done).
    lab : numpy.ndarray
        ``(n,)`` 0-based labels, changed in place; the energy never rises.
    iterations, step, thresholds, workspace, backend
        As :func:`fuse_tv_expansion_into`.
    gap : float, optional
        Each move's steps stop once it is proved to gain at most this fraction of the
        energy's magnitude (:func:`expansion_snapshot`); None: no such test.
    stop : callable, optional
        Polled before each label's move: True ends the sweep (a cancel).

    Returns
    -------
    int
        Regions taken.
    """
    terms = grid_terms(problem, step)
    moved = 0
    for alpha in range(problem.k if terms is not None else 0):
        if stop is not None and stop():
            break
        moved += _fuse_expansion(problem, lab, alpha, terms, iterations, thresholds, workspace,
                                 1e-3, backend, gap)
    return moved


def fuse_tv_expansions(problem: MRFProblem, labels: np.ndarray, iterations: int, step: float,
                       thresholds: tuple[float, ...], gap: float | None = None
                       ) -> tuple[np.ndarray, int]:
    """:func:`fuse_tv_expansions_into` on 1-based labels, returning new ones.

    Parameters
    ----------
    problem : MRFProblem
        A problem on an 8-neighbour grid.
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    iterations, step, thresholds, gap
        As :func:`fuse_tv_expansions_into`.

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int32 labels in 1..K, energy no higher than the input's.
    moved : int
        Regions taken.
    """
    return on_copy(fuse_tv_expansions_into, problem, labels, iterations, step, thresholds,
                   None, None, gap, dtype=np.int64)
