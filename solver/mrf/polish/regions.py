"""Region moves: relabel whole connected regions, or re-split them between two other labels.

Regions of one mask never touch, so their moves are independent and taken together; each move's
energy change is exact and a move is taken only when it lowers the energy
(:mod:`solver.mrf.polish.region_kernels`).
"""

from __future__ import annotations

import logging

import numpy as np

from solver.mrf.build.problem import MRFProblem
from solver.mrf.build.stencil import graph_arrays, potts_of
from solver.mrf.options import PolishOptions
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish import region_kernels
from solver.mrf.polish.fusion import Workspace
from solver.mrf.polish.icm import icm_into
from solver.mrf.polish.moves import documented

log = logging.getLogger(__name__)

_DEFAULT = PolishOptions()
_NO_PIXELS = np.empty(0, np.int64)
_NO_PREFERENCE = np.empty(0, np.bool_)


def _move_regions(problem: MRFProblem, lab: np.ndarray, a: int, prefer: np.ndarray | None,
                  hard: np.ndarray, near: np.ndarray | None, cap: int, scratch: tuple) -> int:
    """Move each 8-connected region of the pixels labelled ``a`` (only those where the bool
    array ``prefer`` is True, when given) to its best label: the regions of at most ``cap``
    pixels that meet the pixels ``near`` (an index array; all regions when None).

    Regions of one mask are never neighbours, so their moves do not interact and are taken
    together. Moving region ``R`` from ``a`` to ``c`` changes the energy by its unary difference
    plus ``2 lam`` times (the weight of its border with label ``a`` minus that with label ``c``).
    Changes ``lab`` (0-based) in place and returns the number of regions moved. The mask is
    tested pixel by pixel in the kernel, never made as an image-sized array; with ``near`` only
    its pixels seed the regions (after the first round of :func:`settle_regions` most label
    pairs have none near the changes).
    """
    if near is not None and near.size == 0:
        return 0  # (the kernel takes empty seeds for "every pixel")
    seeds = _NO_PIXELS if near is None else near
    return region_kernels.move_regions(potts_of(problem), lab, a,
                                       _NO_PREFERENCE if prefer is None else prefer, hard, seeds,
                                       cap, scratch)


def component_flips(problem: MRFProblem, labels: np.ndarray, max_rounds: int = 10, *,
                    icm_optimal: bool = False, options: PolishOptions = _DEFAULT) -> np.ndarray:
    """Relabel whole regions when that lowers the energy (see :func:`settle_regions`).

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels with energy no higher than the input's.
    """
    return settle_regions(problem, labels, max_rounds, icm_optimal=icm_optimal,
                          options=options)[0]


@documented
def settle_regions(problem: MRFProblem, labels: np.ndarray, max_rounds: int = 10, *,
                   icm_optimal: bool = False, since: np.ndarray | None = None,
                   workspace: Workspace | None = None,
                   options: PolishOptions = _DEFAULT) -> tuple[np.ndarray, bool]:
    """Relabel whole regions when that lowers the energy; hard pixels never change.

    Two families of regions are tried, label by label: every 8-connected region of label ``a``
    (removes islands, fills holes), and every 8-connected cluster of pixels labelled ``a`` whose
    own data prefers another label ``b`` (fixes small clusters on a boundary that single-pixel
    moves cannot). Each region moves to the label that lowers the energy most, if any (see
    :func:`_move_regions`); ICM follows each round, and rounds repeat until nothing moves.
    Regions larger than ``options.cap(n)`` pixels are left out.

    After the first round only regions that meet a change of the round before (or a neighbour
    of one) are evaluated: every other region is the one the round before rejected, with the
    same border. With ``since`` the first round does the same relative to ``since``.

    Parameters
    ----------
    %(problem_labels)s
    max_rounds : int
        Limit on rounds.
    icm_optimal : bool
        ``labels`` is an ICM result, so the ICM after the first round need only look around
        the moves (after later rounds it always does).
    since : numpy.ndarray, optional
        A labelling that this function returned as settled (``labels`` was made from it by
        other moves): only regions near the changes since are evaluated in the first round. The
        result is the same as without ``since``.
    %(workspace)s
    options : PolishOptions
        The region cap (``region_cap``, ``region_cap_min``).

    Returns
    -------
    labels : numpy.ndarray
        ``(H, W)`` int32 labels with energy no higher than the input's.
    settled : bool
        The last round moved nothing (False when ``max_rounds`` ran out first).
    """
    lab = kernels.zero_based(labels)
    settled = settle_regions_into(problem, lab, max_rounds, icm_optimal=icm_optimal,
                                  since=None if since is None else kernels.zero_based(since),
                                  workspace=workspace, options=options)
    return kernels.one_based(lab, problem.shape), settled


def settle_regions_into(problem: MRFProblem, lab: np.ndarray, max_rounds: int = 10, *,
                        icm_optimal: bool = False, since: np.ndarray | None = None,
                        workspace: Workspace | None = None,
                        options: PolishOptions = _DEFAULT) -> bool:
    """:func:`settle_regions` on ``(n,)`` int64 0-based labels, changed in place (``since``
    0-based too, read only); returns ``settled``."""
    k = problem.k
    hard = np.asarray(problem.hard).ravel()
    workspace = workspace or Workspace(problem)
    cap = options.cap(lab.size)
    scratch = workspace.region()
    indptr, indices, _, gw, geom = graph_arrays(problem)
    everywhere = np.ones(lab.size, bool)
    previous = since
    start = workspace.labels("settle")  # (each round's start, in one array for all rounds)
    moved_total, settled = 0, False
    for _ in range(max_rounds):
        near = (None if previous is None else  # (the pixels near the changes, in index order)
                np.flatnonzero(kernels.around_changes(indptr, indices, gw, geom, lab, previous,
                                                      everywhere)))
        np.copyto(start, lab)  # (also the ICM fixed point for the ICM below)
        previous = start
        before = previous if icm_optimal else None
        moved = 0
        for a in range(k):
            moved += _move_regions(problem, lab, a, None, hard, near, cap, scratch)
            for b in range(k):
                if b != a:
                    moved += _move_regions(problem, lab, a, workspace.prefers(b), hard, near,
                                           cap, scratch)
        moved_total += moved
        if moved == 0:
            settled = True
            break
        icm_into(problem, lab, since=before)
        icm_optimal = True
    log.debug("region moves: %d regions moved", moved_total)
    return settled


def split_moves(problem: MRFProblem, labels: np.ndarray, min_size: int = 16,
                sweeps: int = 10) -> tuple[np.ndarray, int]:
    """Re-split whole regions between two other labels when that lowers the energy.

    Each 8-connected region of each label (at least ``min_size`` pixels) is relabelled by ICM
    restricted to each pair of the other labels around it (from the data's cheaper label of
    the pair), the rest of the image fixed; the best result is taken if it lowers the energy
    (:func:`solver.mrf.polish.region_kernels.split_regions`). A region that the yardstick splits
    between two neighbouring labels while ADMM gave it a third is such a move. K = 2 has no such
    pairs.

    Returns
    -------
    labels : numpy.ndarray
        ``(H, W)`` int32 labels, energy no higher than the input's.
    moved : int
        Regions re-split.
    """
    lab = kernels.zero_based(labels)
    moved = split_moves_into(problem, lab, min_size, sweeps)
    return kernels.one_based(lab, problem.shape), moved


def split_moves_into(problem: MRFProblem, lab: np.ndarray, min_size: int = 16,
                     sweeps: int = 10) -> int:
    """:func:`split_moves` on ``(n,)`` int64 0-based labels, changed in place; returns the
    number of regions re-split."""
    hard = np.asarray(problem.hard).ravel()
    moved = 0
    for a in range(problem.k if problem.k > 2 else 0):
        moved += region_kernels.split_regions(potts_of(problem), lab,
                                              np.ascontiguousarray(lab == a), a, hard, min_size,
                                              sweeps)
    log.debug("split moves: %d regions", moved)
    return moved
