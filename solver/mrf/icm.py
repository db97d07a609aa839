"""The polish: iterated conditional modes, whole-region moves and level-set fusion.

Every move is exact and taken only when it lowers the energy, so the polish never raises it. The
moves run as compiled kernels (:mod:`solver.mrf.kernels`) on the Laplacian's CSR arrays.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from . import kernels, region_kernels
from .fusion import (THRESHOLDS, Snapshot, Workspace, descent_fuser, fuse_boxes_into,
                     fuse_closings_into, fuse_level_sets_into, snapshot_arrays)
from .problem import MRFProblem
from .watershed import fuse_edge_snapped_into

log = logging.getLogger(__name__)

#: Whether :func:`polish_labels` tries :func:`split_moves` (when asked to: the final polish).
SPLIT = True
#: Whether :func:`polish_labels` tries :func:`fuse_descents` (in the final polish too).
DESCENTS = True
#: Largest level-set proposal in pixels, plain or for descent fusion (larger ones are skipped;
#: None: no cap). The early iterates of K > 2 give proposals as large as the whole band (every
#: weight near 1/K exceeds 0.2). At 5e5, K = 4, descents cost 1.4 s of 10 without the cap, 0.1 s
#: with it (gap 0.617% -> 0.633%); the plain fusion then 11.2 s -> 8.2 s (0.633% -> 0.662%). No
#: other of 14 problems changed.
PROPOSAL_MAX_PIXELS: int | None = 20000
#: Largest descent-fusion proposal (the plain fusion keeps :data:`PROPOSAL_MAX_PIXELS`). At
#: K = 4 the early snapshots' low level sets span nearly the whole band: at 5e4 the 19 proposals
#: of 15000-20322 pixels cost 0.165 s of the descents' 0.54 s and were taken twice in all.
#: Over 28 K = 3/4 cameraman problems the mean gap stays 0.159% (two problems moved by
#: 0.01%), over 13 K = 2 ones 0.082%; in-process alternation: K = 4 at 5e4 0.83x the time, at
#: 1e5 0.95x (10 solves each). 12000 lost K = 4 at 1.2e5 (0.38% -> 0.63%).
DESCENT_MAX_PIXELS: int | None = 15000
#: Level-set thresholds of the descent proposals: wider than the plain fusion's (0.2, 0.5, 0.8),
#: since ICM carves what a loose level set takes in too much. Mean gap over 14 / 10 held-out /
#: 9 more cameraman problems: 0.235 / 0.281 / 0.124% with (0.2, 0.5, 0.8), 0.213 / 0.246 /
#: 0.116% with these, at the same time ((0.05, 0.2, 0.5, 0.8, 0.95): 0.231% held-out, +14% time).
DESCENT_THRESHOLDS = (0.1, 0.5, 0.9)
#: The same for K > 2: every 0.1. Over K = 3/4 cameraman problems (session 8) the mean gap to
#: alpha-expansion went, K = 4: 0.707% -> 0.451% at n = 1e4, 5e4, 1e5, 2e5, 5e5 (1e4 1.16% ->
#: 0.35%) and 0.850% -> 0.400% on five held-out sizes; K = 3: 0.049% -> 0.030% and 0.027% ->
#: 0.012%; no problem worse, for 6-18% more time. Every 0.05 went further (K = 4 0.350% /
#: 0.379%) at 30-45% more time. For K = 2 every 0.1 gave 0.112% -> 0.105% at 19% more time at
#: n = 5e5, where the time target is already missed.
DESCENT_THRESHOLDS_MULTI = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: Whether the final polish tries edge-snapped proposals (:mod:`solver.mrf.watershed`).
EDGE_SNAP = True
#: Rounds of plain level-set fusion at a coarser level of coarse to fine (each round fuses every
#: snapshot, then ICM and region moves; they stop when one takes nothing).
COARSE_FUSION_ROUNDS = 3
#: The same in a final polish, after descent fusion and the edge-snapped proposals. A second
#: round there took nothing that changed a result: one round and three gave identical gaps over
#: 23 cameraman K = 3/4 problems (3e3 ... 1.5e5, mean 0.174%) and 13 K = 2 ones (0.082%), while
#: at K = 4 5e4 the second round (which ran because the first took something) cost ~50 ms.
FINAL_FUSION_ROUNDS = 1
#: Whether a K = 2 polish tries pair moves (:func:`pair_moves`; K > 2 always does). Over 13
#: cameraman K = 2 problems (1e4 ... 5e5) they changed no gap (mean 0.082% either way): the
#: two-pixel slivers they take, descent fusion and the edge-snapped proposals take as well. At
#: K = 3/4 they do not (16 problems: 0.095% with, 0.118% without). Off, K = 2 at 5e5 takes 0.95x
#: the time (1e5: 0.94x; in-process alternation, 8 solves each).
PAIR_MOVES_BINARY = False


def icm(problem: MRFProblem, labels: np.ndarray, max_sweeps: int = 30,
        since: np.ndarray | None = None) -> np.ndarray:
    """Improve a labelling by colour-parallel ICM; hard-constrained pixels never change.

    No two pixels of the same colour class ``(row % 2, col % 2)`` are 8-neighbours, so all pixels
    of one class move to their best label at once without interacting; each sweep visits the
    four classes in turn. After the first sweep only neighbours of pixels that moved are
    evaluated again (:func:`solver.mrf.kernels.icm_sweeps`).

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    max_sweeps : int
        Limit on full sweeps over the four colour classes.
    since : numpy.ndarray, optional
        A labelling that ICM cannot improve and from which ``labels`` was made (by some other
        move): only the pixels that changed and their neighbours can move, so only they are
        evaluated at first. The result is the same as without ``since``, for less work.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels with ``problem.energy(result) <= problem.energy(labels)``; no
        single free pixel can lower the energy by changing its label (unless ``max_sweeps`` ran out).
    """
    lab = kernels.zero_based(labels)
    _icm_in_place(problem, lab, max_sweeps, None if since is None else kernels.zero_based(since))
    return kernels.one_based(lab, problem.shape)


def _icm_in_place(problem: MRFProblem, lab: np.ndarray, max_sweeps: int = 30,
                  since: np.ndarray | None = None) -> None:
    """:func:`icm` on ``(n,)`` int64 0-based labels, changed in place (``since`` 0-based too):
    the region moves' rounds, which work on such labels, skip four conversions of the image."""
    movable = np.asarray(problem.hard).ravel() == 0
    graph = kernels.graph_arrays(problem)
    if since is None:
        active = movable.copy()
    else:
        active = kernels.around_changes(graph[0], graph[1], lab, since, movable)
    moves = kernels.icm_sweeps(*graph, problem.unary, 2.0 * problem.lam, lab, movable, active,
                               problem.shape[1], max_sweeps)
    log.debug("ICM: %d moves", moves)


def _move_regions(problem: MRFProblem, lab: np.ndarray, a: int, prefer: np.ndarray | None,
                  hard: np.ndarray, near: np.ndarray | None, cap: int, scratch: tuple) -> int:
    """Move each 8-connected region of the pixels labelled ``a`` (only those where the bool
    array ``prefer`` is True, when given) to its best label: the regions of at most ``cap``
    pixels that meet the pixels ``near`` (an index array; all regions when None).

    Regions of one mask are never neighbours, so their moves do not interact and are taken
    together. Moving region ``R`` from ``a`` to ``c`` changes the energy by its unary difference
    plus ``2 lam`` times (the weight of its border with label ``a`` minus that with label ``c``).
    Changes ``lab`` (0-based) in place and returns the number of regions moved. With ``near``,
    the seeds come from it first, and the image-sized mask is made only if there are any (after
    the first round of :func:`settle_regions` most label pairs have none near the changes).
    """
    if near is not None:
        pick = lab[near] == a
        if prefer is not None:
            pick &= prefer[near]
        seeds = near[pick]
        if seeds.size == 0:
            return 0
    mask = lab == a
    if prefer is not None:
        mask &= prefer
    if near is None:
        seeds = np.flatnonzero(mask)
    return region_kernels.move_regions(*kernels.graph_arrays(problem), problem.unary,
                                       2.0 * problem.lam, lab, mask, a, hard, seeds, cap, scratch)


def pair_moves(problem: MRFProblem, labels: np.ndarray, max_sweeps: int = 10, *,
               icm_optimal: bool = False) -> np.ndarray:
    """Move two neighbouring pixels of one label together, then ICM again if any moved.

    A sliver two pixels wide can cost less in the other label while each of its pixels alone
    would raise the energy, so ICM keeps it; only pairs with a pixel on a label boundary are
    tried (:func:`solver.mrf.kernels.pair_moves`). Hard pixels never change.

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    max_sweeps : int
        Limit on sweeps over the pixels.
    icm_optimal : bool
        ``labels`` is an ICM result, so the ICM afterwards need only look around the moves.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels with energy no higher than the input's.
    """
    lab = kernels.zero_based(labels)
    _pair_moves_in_place(problem, lab, max_sweeps, lab.copy() if icm_optimal else None)
    return kernels.one_based(lab, problem.shape)


def _pair_moves_in_place(problem: MRFProblem, lab: np.ndarray, max_sweeps: int = 10,
                         before: np.ndarray | None = None) -> int:
    """:func:`pair_moves` on ``(n,)`` int64 0-based labels, changed in place; ``before``, if
    given, holds a copy of them that is an ICM fixed point (it is read, not kept). Returns the
    number of pairs moved."""
    movable = np.asarray(problem.hard).ravel() == 0
    moved = kernels.pair_moves(*kernels.csr_arrays(problem), problem.unary, 2.0 * problem.lam,
                               lab, movable, max_sweeps)
    log.debug("pair moves: %d", moved)
    if moved:
        _icm_in_place(problem, lab, since=before)
    return moved


#: Largest region (as a fraction of the level's pixels, at least :data:`REGION_CAP_MIN`) that a
#: region move considers. Over cameraman K = 2/3/4 at 1e4 ... 5e5 the largest region ever moved
#: was 0.7% of its level (1311 of 2e5 pixels); the cap spares a pass over the few huge regions
#: (the background) each time a change touches them: a search stops once it passes the cap, so
#: each big region near a change costs up to the cap in steps. Until session 13 it was 1/32 and
#: 4096; with 1/128 and 2048, 24 problems (K = 2/3/4, 3e3 ... 5e5) gave identical gaps (and so
#: did 1/512 and 512), and K = 2 at 5e5 took 0.92x the time (in-process alternation, 8 solves
#: each; K = 2 and K = 3 at 1e5 and K = 4 at 5e4 within 0.98-1.02x).
REGION_CAP = 1 / 128
REGION_CAP_MIN = 2048


def component_flips(problem: MRFProblem, labels: np.ndarray, max_rounds: int = 10, *,
                    icm_optimal: bool = False) -> np.ndarray:
    """Relabel whole regions when that lowers the energy (see :func:`settle_regions`).

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels with energy no higher than the input's.
    """
    return settle_regions(problem, labels, max_rounds, icm_optimal=icm_optimal)[0]


def settle_regions(problem: MRFProblem, labels: np.ndarray, max_rounds: int = 10, *,
                   icm_optimal: bool = False, since: np.ndarray | None = None,
                   workspace: Workspace | None = None) -> tuple[np.ndarray, bool]:
    """Relabel whole regions when that lowers the energy; hard pixels never change.

    Two families of regions are tried, label by label: every 8-connected region of label ``a``
    (removes islands, fills holes), and every 8-connected cluster of pixels labelled ``a`` whose
    own data prefers another label ``b`` (fixes small clusters on a boundary that single-pixel
    moves cannot). Each region moves to the label that lowers the energy most, if any (see
    :func:`_move_regions`); ICM follows each round, and rounds repeat until nothing moves.
    Regions larger than :data:`REGION_CAP` of the image are left out.

    After the first round only regions that meet a change of the round before (or a neighbour
    of one) are evaluated: every other region is the one the round before rejected, with the
    same border. With ``since`` the first round does the same relative to ``since``.

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    max_rounds : int
        Limit on rounds.
    icm_optimal : bool
        ``labels`` is an ICM result, so the ICM after the first round need only look around
        the moves (after later rounds it always does).
    since : numpy.ndarray, optional
        A labelling that this function returned as settled (``labels`` was made from it by
        other moves): only regions near the changes since are evaluated in the first round. The
        result is the same as without ``since``.
    workspace : Workspace, optional
        Work arrays shared with the other steps of a polish (default: new ones).

    Returns
    -------
    labels : numpy.ndarray
        ``(H, W)`` int32 labels with energy no higher than the input's.
    settled : bool
        The last round moved nothing (False when ``max_rounds`` ran out first).
    """
    lab = kernels.zero_based(labels)
    settled = _settle_in_place(problem, lab, max_rounds, icm_optimal=icm_optimal,
                               since=None if since is None else kernels.zero_based(since),
                               workspace=workspace)
    return kernels.one_based(lab, problem.shape), settled


def _settle_in_place(problem: MRFProblem, lab: np.ndarray, max_rounds: int = 10, *,
                     icm_optimal: bool = False, since: np.ndarray | None = None,
                     workspace: Workspace | None = None) -> bool:
    """:func:`settle_regions` on ``(n,)`` int64 0-based labels, changed in place (``since``
    0-based too, read only); returns ``settled``."""
    k = problem.k
    hard = np.asarray(problem.hard).ravel()
    workspace = workspace or Workspace(problem)
    cap = max(REGION_CAP_MIN, int(REGION_CAP * lab.size))
    scratch = workspace.region()
    indptr, indices = kernels.csr_arrays(problem)[:2]
    everywhere = np.ones(lab.size, bool)
    previous = since
    start = workspace.labels("settle")  # (each round's start, in one array for all rounds)
    moved_total, settled = 0, False
    for _ in range(max_rounds):
        near = (None if previous is None else  # (the pixels near the changes, in index order)
                np.flatnonzero(kernels.around_changes(indptr, indices, lab, previous, everywhere)))
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
        _icm_in_place(problem, lab, since=before)
        icm_optimal = True
    log.debug("region moves: %d regions moved", moved_total)
    return settled


def split_moves(problem: MRFProblem, labels: np.ndarray, min_size: int = 16,
                sweeps: int = 10) -> tuple[np.ndarray, int]:
    """Re-split whole regions between two other labels when that lowers the energy.

    Each 8-connected region of each label (at least ``min_size`` pixels) is relabelled by ICM
    restricted to each pair of the other labels around it (from the data's cheaper label of
    the pair), the rest of the image fixed; the best result is taken if it lowers the energy
    (:func:`solver.mrf.region_kernels.split_regions`). A region that the yardstick splits between two
    neighbouring labels while ADMM gave it a third is such a move. K = 2 has no such pairs.

    Returns
    -------
    labels : numpy.ndarray
        ``(H, W)`` int32 labels, energy no higher than the input's.
    moved : int
        Regions re-split.
    """
    lab = kernels.zero_based(labels)
    moved = _split_moves_in_place(problem, lab, min_size, sweeps)
    return kernels.one_based(lab, problem.shape), moved


def _split_moves_in_place(problem: MRFProblem, lab: np.ndarray, min_size: int = 16,
                          sweeps: int = 10) -> int:
    """:func:`split_moves` on ``(n,)`` int64 0-based labels, changed in place; returns the
    number of regions re-split."""
    hard = np.asarray(problem.hard).ravel()
    moved = 0
    for a in range(problem.k if problem.k > 2 else 0):
        moved += region_kernels.split_regions(*kernels.csr_arrays(problem), problem.unary,
                                       2.0 * problem.lam, lab, np.ascontiguousarray(lab == a), a,
                                       hard, min_size, sweeps)
    log.debug("split moves: %d regions", moved)
    return moved


def fuse_descents(problem: MRFProblem, labels: np.ndarray,
                  snapshots: Sequence[Snapshot | np.ndarray],
                  thresholds: Sequence[float] = THRESHOLDS,
                  max_pixels: int | None = None,
                  workspace: Workspace | None = None) -> tuple[np.ndarray, int]:
    """Fuse with level-set proposals after ICM has carved them: ICM from "label ``c`` wherever
    ``x_c > t``", then each connected region where the result differs is taken if it lowers the
    energy.

    A level-set region that holds a good move is often joined to pixels where the same label
    costs more, so :func:`solver.mrf.fusion.fuse_level_sets` rejects the whole. ICM started from
    the proposal lets those pixels fall back one by one (given the proposal around them), which
    leaves the good part as a region of its own. Each ICM is a work queue around the
    proposal's pixels (:func:`solver.mrf.descent_kernels.fuse_descents`); if ``labels`` is an ICM
    fixed point the result is one too.

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    snapshots : sequence of Snapshot or numpy.ndarray
        ADMM's continuous iterates, as for :func:`polish_labels`.
    thresholds : sequence of float
        Level-set thresholds.
    max_pixels : int, optional
        Proposals relabelling more pixels are skipped (None: no limit).
    workspace : Workspace, optional
        Work arrays shared with the other steps of a polish (default: new ones).

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int64 labels, an ICM fixed point with energy no higher than the input's.
    moved : int
        Regions taken.
    """
    lab = kernels.zero_based(labels)
    moved = _fuse_descents_in_place(problem, lab, snapshots, thresholds, max_pixels, workspace)
    return lab + 1, moved


def _fuse_descents_in_place(problem: MRFProblem, lab: np.ndarray,
                            snapshots: Sequence[Snapshot | np.ndarray],
                            thresholds: Sequence[float] = THRESHOLDS,
                            max_pixels: int | None = None,
                            workspace: Workspace | None = None) -> int:
    """:func:`fuse_descents` on ``(n,)`` int64 0-based labels, changed in place; returns the
    number of regions taken."""
    fuse_into = descent_fuser(problem, lab, workspace)
    ts = np.asarray(tuple(thresholds), dtype=np.float64)
    max_size = problem.n if max_pixels is None else max_pixels
    moved = 0
    for snap in snapshots:
        moved += fuse_into(*snapshot_arrays(snap), ts, max_size)
    log.debug("descent fusion: %d regions taken", moved)
    return moved


def polish_labels(problem: MRFProblem, labels: np.ndarray,
                  snapshots: Sequence[Snapshot | np.ndarray] = (),
                  max_rounds: int | None = None, split: bool = True,
                  since: np.ndarray | None = None) -> np.ndarray:
    """ICM and pair moves (K > 2, or :data:`PAIR_MOVES_BINARY`), filled concavities and box
    completions, whole-region moves, region splits, then fusion with the level sets of ADMM's
    iterates carved by ICM (:func:`fuse_descents`), with the boundaries snapped to image edges
    (:func:`solver.mrf.watershed.fuse_edge_snapped`, if :data:`EDGE_SNAP`) and with the plain
    level sets; never raises the energy.

    Parameters
    ----------
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K.
    snapshots : sequence of Snapshot or numpy.ndarray
        Continuous ADMM iterates (:class:`solver.mrf.fusion.Snapshot`, or ``(n, K)`` label
        weights), for :func:`solver.mrf.fusion.fuse_level_sets`; empty: no level-set fusion.
    max_rounds : int, optional
        Limit on rounds of plain level-set fusion, each followed by ICM and region moves
        (default: :data:`FINAL_FUSION_ROUNDS` in a final polish, :data:`COARSE_FUSION_ROUNDS`
        at a coarser level).
    split : bool
        This is a final polish: try :func:`split_moves` (if :data:`SPLIT`),
        :func:`fuse_descents` (if :data:`DESCENTS`) and edge-snapped proposals. The coarse-to-fine solver asks for them in
        the final polish only: at coarser levels they changed which regions the next level
        saw, which made some sizes better and others worse (and descents cost K = 3/4 up to
        28% more time there).
    since : numpy.ndarray, optional
        An ICM fixed point that ``labels`` differs from in few pixels (a band level's warm
        start): the first ICM then looks only around those pixels (:func:`icm`), with the same
        result.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels.
    """
    ws = Workspace(problem)  # (one set of work arrays for every step)
    # The steps work in place on 0-based labels, converted once each way (at 12 MP the
    # conversions between 1-based steps took over a second), with the labels before each step
    # in one reused array. Each step starts from an ICM fixed point, so each ICM after it
    # looks only around its moves; each region pass after the first starts from the last
    # one's settled labelling, so it need only look at the regions near what changed since.
    lab = kernels.zero_based(labels)
    _icm_in_place(problem, lab, since=None if since is None else kernels.zero_based(since))
    before = ws.labels("step")

    def mark() -> np.ndarray:
        np.copyto(before, lab)
        return before

    if problem.k > 2 or PAIR_MOVES_BINARY:
        _pair_moves_in_place(problem, lab, before=mark())
    for fill in (fuse_closings_into, fuse_boxes_into):
        mark()
        if fill(problem, lab, workspace=ws):
            _icm_in_place(problem, lab, since=before)
    settled = _settle_in_place(problem, lab, icm_optimal=True, workspace=ws)
    if SPLIT and split:
        mark()
        if _split_moves_in_place(problem, lab):
            _icm_in_place(problem, lab, since=before)
            settled = _settle_in_place(problem, lab, icm_optimal=True,
                                       since=before if settled else None, workspace=ws)
    if len(snapshots):
        # built once for all rounds; dense weights as snapshots once, so every fusion sees
        # the same fixed arrays (fusion.FixedDisagreement finds their pixels once)
        snapshots = [s if isinstance(s, Snapshot) else Snapshot.from_dense(s)
                     for s in snapshots]
    if DESCENTS and split and len(snapshots):
        # before the plain fusion, which can take a union whose bad part a descent leaves out
        # (14 cameraman problems: mean gap 0.235% this way round, 0.240% after it)
        thresholds = DESCENT_THRESHOLDS if problem.k == 2 else DESCENT_THRESHOLDS_MULTI
        mark()
        if _fuse_descents_in_place(problem, lab, snapshots, thresholds, DESCENT_MAX_PIXELS,
                                   workspace=ws):
            settled = _settle_in_place(problem, lab, icm_optimal=True,
                                       since=before if settled else None, workspace=ws)
    if EDGE_SNAP and split:
        mark()
        if fuse_edge_snapped_into(problem, lab, workspace=ws):
            settled = _settle_in_place(problem, lab, icm_optimal=True,
                                       since=before if settled else None, workspace=ws)
    if max_rounds is None:
        max_rounds = FINAL_FUSION_ROUNDS if split else COARSE_FUSION_ROUNDS
    for _ in range(max_rounds if len(snapshots) else 0):
        mark()
        if fuse_level_sets_into(problem, lab, snapshots, max_pixels=PROPOSAL_MAX_PIXELS,
                                workspace=ws) == 0:
            break
        _icm_in_place(problem, lab, since=before)
        settled = _settle_in_place(problem, lab, icm_optimal=True,
                                   since=before if settled else None, workspace=ws)
    return kernels.one_based(lab, problem.shape)
