"""The polish under area bounds and apart pairs: make the labelling feasible, then only moves
that keep it so.

A constrained problem's labelling from ADMM's rounding may break a bound by a few pixels, or
leave a few pixels of apart labels side by side, so the polish starts with a repair (the
cheapest single-pixel moves that remove the conflicts, then those that bring each area within
its bounds). Where single pixels cannot undo a conflict (a junction of four labels with two
pairs apart, :mod:`solver.mrf.polish.swap`), αβ-swaps that price the conflicts follow, then
whole regions giving way. From then on every move is exact, lowers the energy and keeps every
constraint: ICM that takes a pixel's best feasible label, whole-region moves to the best
feasible label (also with a margin of a third label where the region touches one apart from
the new label, :mod:`solver.mrf.polish.margin_kernels`), and exchanges of two boundary pixels
between two labels, which leave both areas where they were (with an area pinned, no single
pixel can move). See :mod:`solver.mrf.polish.constrained_kernels`.

With two labels and area bounds the final polish runs a second time from the TV relaxation
under the bound (:func:`solver.mrf.polish.tv.tv_relaxation_area`): from its best level set
within the bounds, with its level sets among the proposals, and the better end is kept. A
nesting (three labels, one pair apart) does the same from its layered relaxation
(:mod:`solver.mrf.polish.layered`), started from the polished labels.

On a coarse pyramid level a pixel stands for several image pixels, and an exact area may not
be reachable with such pieces; there the bounds widen by the largest piece (the finest level
keeps them exact).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import ndimage

from solver.mrf.build.graph import edge_ends, own_grid
from solver.mrf.build.grid_kernels import grid_level_set_energies
from solver.mrf.build.problem import MRFProblem
from solver.mrf.build.stencil import Potts, grid_view, potts_of
from solver.mrf.options import PolishOptions
from solver.mrf.polish import constrained_kernels as ck
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish import margin_kernels as mk
from solver.mrf.polish.fusion import Snapshot
from solver.mrf.polish.layered import layered_proposals
from solver.mrf.polish.moves import documented
from solver.mrf.polish.swap import swap_repair
from solver.mrf.polish.tv import expansion_snapshot, grid_terms, tv_relaxation_area

log = logging.getLogger(__name__)

_DEFAULT = PolishOptions()
#: Sweeps of constrained ICM, rounds of region moves and exchanges, repair passes.
MAX_SWEEPS = 30
MAX_ROUNDS = 10
#: Times the repair may fall back on swaps and region moves where single pixels leave a
#: conflict (each one from where the last left off).
FALLBACKS = 3


class Labelling(NamedTuple):
    """What the constrained kernels work on, for one labelling: the energy, the 0-based labels
    (changed in place), the movable pixels and the constraint state (its ``counts`` kept those
    of ``lab``). A kernel takes them as ``kernel(*labelling, ...)``."""

    potts: Potts
    lab: np.ndarray
    movable: np.ndarray
    areas: ck.Areas


def level_state(problem: MRFProblem, lab: np.ndarray) -> ck.Areas:
    """The constraint state of a level for the kernels: pixel weights, the current areas of
    0-based ``lab``, the bounds (widened by the largest weight on a coarse level, and by a hair
    for rounding) and the apart matrix."""
    c = problem.constraints
    w = c.pixel_weights(problem.n)
    counts = np.bincount(lab, weights=w, minlength=problem.k).astype(np.float64)
    slack = 0.0 if c.weights is None else float(w.max())
    eps = 1e-9 * max(1.0, float(w.sum()))
    lo = np.where(c.area_given, c.lo - slack - eps, -np.inf)
    hi = np.where(c.area_given, c.hi + slack + eps, np.inf)
    return ck.Areas(w, counts, lo, hi, np.ascontiguousarray(c.apart))


@documented
def repair(problem: MRFProblem, labels: np.ndarray) -> np.ndarray:
    """A feasible labelling near ``labels``: conflicts between apart labels removed, then each
    area brought within its bounds, by the cheapest single-pixel moves (hard pixels stay).

    Parameters
    ----------
    %(constrained_labels)s

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels; feasible unless the moves run out (then logged).
    """
    lab = kernels.zero_based(labels)
    _repair_in_place(problem, lab)
    return kernels.one_based(lab, problem.shape)


def _repair_in_place(problem: MRFProblem, lab: np.ndarray) -> Labelling:
    """Repair 0-based ``lab`` in place (see :func:`repair`); returns the kernels' arguments
    for it, with the counts of the repaired labels."""
    hard = np.asarray(problem.hard).ravel()
    lab[hard > 0] = hard[hard > 0] - 1
    movable = hard == 0
    args = Labelling(potts_of(problem), lab, movable, level_state(problem, lab))
    c = problem.constraints
    for fallback in range(FALLBACKS + 1):
        for _ in range(4):
            left = ck.repair_apart(*args, MAX_ROUNDS) if c.has_apart else 0
            out = ck.repair_areas(*args, MAX_ROUNDS) if c.has_area else 0.0
            if left == 0 and out == 0.0:
                return args
        if fallback == FALLBACKS or not left:
            break
        # what single pixels could not undo (a junction of labels that no sequence of single
        # moves can unwind, :mod:`solver.mrf.polish.swap`): swaps of two labels, then whole
        # regions giving way; the areas counted again
        if swap_repair(problem, lab):
            _region_repair(problem, args)  # (which counts the areas again)
        else:
            _recount(problem, args)
    # (info, not a warning: a coarse level's repair may leave what a finer level undoes; the
    # answer's own constraint report says whether the final labels hold, and the app and the
    # command line tell the person)
    log.info("constrained polish: %d pixels still touch a label they must not, areas %.3g "
             "outside their bounds", left, out)
    return args


def _region_repair(problem: MRFProblem, args: Labelling, max_moves: int = 16) -> int:
    """Whole regions that give way to end conflicts between apart labels, on the kernels'
    ``args`` (in place). For every 8-connected region of one label that holds a pixel in
    conflict, and every other label: the region's movable pixels take that label, then the
    single-pixel repair runs (around a hard pixel left behind it puts a ring of a label that
    may touch both). Of these candidates the one with the fewest conflicts left, then the
    lowest energy, is taken where it leaves fewer than before; again until none is left or
    none helps (at most ``max_moves``). What a junction of four labels around a point needs
    where no swap of two labels undoes it (:mod:`solver.mrf.polish.swap`); the areas are
    brought back by the repair after it. Returns the moves."""
    lab, movable, areas = args.lab, args.movable, args.areas
    apart = areas.apart
    gi, gj = edge_ends(problem.graph)
    struct = np.ones((3, 3), bool)
    moved = 0
    for _ in range(max_moves):
        bad = np.flatnonzero(apart[lab[gi], lab[gj]])
        if bad.size == 0:
            break
        hot = np.zeros(problem.n, bool)
        hot[gi[bad]] = hot[gj[bad]] = True
        best = (bad.size, np.inf, None)
        for a in np.unique(lab[hot]):
            comp, _ = ndimage.label((lab == a).reshape(problem.shape), structure=struct)
            comp = comp.ravel()
            for r in np.unique(comp[hot & (lab == a)]):
                region = (comp == r) & movable
                if not region.any():
                    continue
                for c in range(problem.k):
                    if c == a:
                        continue
                    cand = lab.copy()
                    cand[region] = c
                    counts = np.bincount(cand, weights=areas.w, minlength=problem.k)
                    ck.repair_apart(args.potts, cand, movable, areas._replace(counts=counts),
                                    MAX_ROUNDS)
                    left = int(np.count_nonzero(apart[cand[gi], cand[gj]]))
                    if left > best[0]:
                        continue
                    energy = problem.energy(cand + 1)
                    if (left, energy) < best[:2]:
                        best = (left, energy, cand)
        if best[2] is None or best[0] >= bad.size:
            break
        lab[:] = best[2]
        moved += 1
        log.debug("region repair: %d edges in conflict left, energy %.6g", best[0], best[1])
    _recount(problem, args)
    return moved


def _recount(problem: MRFProblem, args: Labelling) -> None:
    """The kernels' area counts made those of their labels again, in place, after moves made
    outside the kernels."""
    args.areas.counts[:] = np.bincount(args.lab, weights=args.areas.w, minlength=problem.k)


@documented
def settle_feasible(problem: MRFProblem, labels: np.ndarray) -> np.ndarray:
    """:func:`repair`, then ICM with feasible moves only: a constrained level's warm start from
    the coarser answer (the counterpart of plain ICM there).

    Parameters
    ----------
    %(constrained_labels)s

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 feasible labels.
    """
    lab = kernels.zero_based(labels)
    args = _repair_in_place(problem, lab)
    _Incremental(args).icm(args)
    return kernels.one_based(lab, problem.shape)


class _Incremental:
    """What a polish of one labelling (the kernels' ``args``) must look at again after a
    round of moves: all of it the first time, then only around what changed. A round changes
    a few regions, and a pass over the image costs as much as the round.

    Constrained ICM visits the pixels its last call left pending and the neighbours of those
    changed since (:func:`constrained_kernels.constrained_icm
    <solver.mrf.polish.constrained_kernels.constrained_icm>`): the moves of a full first
    sweep. With apart pairs and no area bound, a round of level-set fusions on the same
    snapshots starts regions only at pixels beside a change since the last round began: a
    region's outcome depends on the labels of its pixels and their neighbours alone, so one
    with no change there is refused again (one taken is no longer a proposal). With an area
    bound a refused region may fit once the areas move, and every round looks at all of
    them."""

    def __init__(self, args: Labelling):
        self.pending = args.movable.copy()
        self.last: np.ndarray | None = None
        self.fused: np.ndarray | None = None

    def fork(self) -> _Incremental:
        """The ICM's state for another labelling of the same problem (the pixels where it
        differs from this one's last are marked at its first call, as a change would be); its
        fusion rounds, on other snapshots, start afresh."""
        other = _Incremental.__new__(_Incremental)
        other.pending = self.pending.copy()
        other.last = self.last
        other.fused = None
        return other

    def icm(self, args: Labelling) -> int:
        """Constrained ICM on ``args`` (in place); returns the moves."""
        lab = args.lab
        active = self.pending.copy()
        if self.last is not None:
            active |= _around_changes(args, self.last)
        moves = ck.constrained_icm(*args, MAX_SWEEPS, active, self.pending)
        self.last = lab.copy()
        return moves

    def fusion_starts(self, problem: MRFProblem, args: Labelling) -> np.ndarray | None:
        """The movable pixels where this round of fusions may start a region (see above);
        None for all of them."""
        starts = None
        if self.fused is not None and not problem.constraints.has_area:
            starts = _around_changes(args, self.fused)
        self.fused = args.lab.copy()
        return starts


def _around_changes(args: Labelling, before: np.ndarray) -> np.ndarray:
    """The movable pixels (of the kernels' ``args``) whose label differs from ``before``, and
    their movable neighbours (:func:`solver.mrf.polish.icm_kernels.around_changes`)."""
    indptr, indices, _, gw, geom, _, _ = args.potts
    return kernels.around_changes(indptr, indices, gw, geom, args.lab, before, args.movable)


def _region_moves(problem: MRFProblem, lab: np.ndarray, movable: np.ndarray,
                  state: ck.Areas, cap: int) -> int:
    """Whole-region moves that keep the constraints: each 8-connected region of a label (and
    each cluster of its pixels whose data prefers another label) moves to its best feasible
    label when that lowers the energy, the best moves first, every one checked against the
    areas as they stand. Changes ``lab`` and the state's counts in place; returns the moves."""
    w, counts, lo, hi, apart = state
    k = problem.k
    potts = potts_of(problem)
    preferred = problem.cheapest
    struct = np.ones((3, 3), bool)
    moved = 0
    for a in range(k):
        for prefer in [None] + [b for b in range(k) if b != a]:
            mask = lab == a
            if prefer is not None:
                mask &= preferred == prefer
            if not mask.any():
                continue
            comp, nc = ndimage.label(mask.reshape(problem.shape), structure=struct)
            comp = comp.ravel()
            if nc == 0:
                continue
            # weights, pinned pixels, unaries and the border to each outside label, one pass
            size, pinned, unary, border, touch = ck.region_sums(potts, lab, comp, w, movable, nc)
            blocked = (touch.astype(np.int64) @ apart.astype(np.int64)) > 0
            delta = unary - unary[:, [a]] + border[:, [a]] - border
            delta[:, a] = np.inf
            delta[blocked] = np.inf
            delta[pinned] = np.inf
            delta[size > cap] = np.inf
            delta[0] = np.inf
            scale = np.maximum(1.0, np.abs(np.where(np.isfinite(delta), delta, 0)).max(axis=1))
            rows, cols = np.nonzero(delta < -1e-9 * scale[:, None])
            if rows.size == 0:
                continue
            order = np.argsort(delta[rows, cols], kind="stable")
            target = np.full(nc + 1, -1, np.int64)
            for t in order:  # the best first, each checked against the areas as they stand
                r, c = rows[t], cols[t]
                if target[r] >= 0 or counts[a] - size[r] < lo[a] or counts[c] + size[r] > hi[c]:
                    continue
                target[r] = c
                counts[a] -= size[r]
                counts[c] += size[r]
                moved += 1
            # regions of one mask never touch, so their moves are independent: apply them all
            new = target[comp]
            np.copyto(lab, new, where=new >= 0)
    return moved


def _level_set_fusions(problem: MRFProblem, lab: np.ndarray, movable: np.ndarray,
                       state: ck.Areas, snapshots: Sequence, thresholds: Sequence[float],
                       labels: Sequence[int] | None = None,
                       starts: np.ndarray | None = None) -> int:
    """Fusion under the constraints (:func:`constrained_kernels.fuse_level_set
    <solver.mrf.polish.constrained_kernels.fuse_level_set>`) with "label ``c`` wherever its
    weight exceeds ``t``", for every snapshot of ADMM's iterates, threshold ``t`` and label
    ``c`` (of ``labels``, 0-based; default all), regions started only at the pixels of
    ``starts`` (default: every movable one; see :meth:`_Incremental.fusion_starts`). Returns
    the regions taken."""
    potts = potts_of(problem)
    comp = np.full(problem.n, -1, np.int64)
    queue = np.empty(problem.n, np.int64)
    c_ = problem.constraints
    # with apart pairs, the fusion with a margin takes every region the plain one would and
    # more; with no area bound the regions are independent, so it alone is enough
    plain, margin = not c_.has_apart or c_.has_area, c_.has_apart
    prop = lab.copy() if margin else None
    mark = np.full(problem.n, -1, np.int64)
    base = 0
    taken = 0
    least = float(min(thresholds))
    for snap in snapshots:
        X = snap.dense() if hasattr(snap, "dense") else np.ascontiguousarray(snap)
        # regions start only where the proposals differ from lab, found once a snapshot: a
        # region (with its margin) changes only its own pixels, which were in a level set of
        # the snapshot and so among the seeds, and every other pixel keeps its label
        seeds = ck.level_set_seeds(X, lab, movable if starts is None else starts, least)
        before = None if starts is None else lab.copy()
        for t in thresholds:
            for c in (range(problem.k) if labels is None else labels):
                got = 0
                if plain:
                    got += ck.fuse_level_set(potts, lab, movable, state, X, c, float(t), seeds,
                                             comp, queue)
                if margin:
                    if plain:  # (the plain fusion may have changed lab)
                        np.copyto(prop, lab)
                    got += mk.fuse_with_margin(potts, lab, movable, state, X, c, float(t), seeds,
                                               (prop, mark, queue), base)
                    base += problem.n
                taken += got
                if got and starts is not None:
                    # the regions beside those taken may now go otherwise: start there too
                    starts |= kernels.around_changes(potts.indptr, potts.indices, potts.gw,
                                                     potts.geom, lab, before, movable)
                    np.copyto(before, lab)
                    seeds = ck.level_set_seeds(X, lab, starts, least)
    return taken


def _level_sets_within(problem: MRFProblem, s: np.ndarray, w: np.ndarray,
                       area: tuple[float, float], levels: Sequence[float]):
    """``(energy, make)`` for each 0-based labelling from the relaxation ``s`` whose label-2
    area lies within ``area``, ``make()`` building it: its level sets ``{s > t}`` that do (on
    the grid's own edge list their energies and areas all at once,
    :func:`solver.mrf.build.grid_kernels.grid_level_set_energies`, so that only a set that
    is taken is built), and the pixels of largest ``s`` (hard pixels first or last, by their
    label) up to the area nearest the relaxation's own within the bounds, and up to each bound
    (an exact area, which no level set meets in general)."""
    ts = np.asarray(tuple(levels), dtype=np.float64)
    g = problem.graph
    if own_grid(g) and ts.size and np.all(np.diff(ts) > 0):
        h, width = (int(v) for v in problem.shape)
        energies, areas = grid_level_set_energies(g.weights, h, width, problem.unary, s, ts,
                                                  float(problem.lam), np.asarray(w, np.float64))
        for t, e, a in zip(ts, energies, areas):
            if area[0] <= a <= area[1]:
                yield float(e), lambda t=t: (s > t).astype(np.int32)
    else:
        for t in ts:
            cand = (s > t).astype(np.int32)
            if area[0] <= float(w @ cand) <= area[1]:
                yield problem.energy(cand + 1), lambda cand=cand: cand
    hard = np.asarray(problem.hard).ravel()
    key = np.where(hard == 2, np.inf, np.where(hard == 1, -np.inf, s))
    order = np.argsort(-key, kind="stable")
    reach = np.cumsum(w[order])
    own = min(max(float(w @ s), area[0]), area[1])
    for target in sorted({own, area[0], area[1]}):
        top = int(np.searchsorted(reach, target + 1e-9 * max(1.0, target), side="right"))
        if top and area[0] - 1e-9 * max(1.0, area[0]) <= reach[top - 1]:
            cand = np.zeros(s.size, np.int32)
            cand[order[:top]] = 1
            yield problem.energy(cand + 1), lambda cand=cand: cand


def _tv_proposals(problem: MRFProblem, lab: np.ndarray, state: ck.Areas, options: PolishOptions
                  ) -> list[tuple[Snapshot, np.ndarray | None]]:
    """K = 2 with area bounds and no apart pair: the TV relaxation under the area bound
    (:func:`solver.mrf.polish.tv.tv_relaxation_area`), from the repaired labels, as one more
    snapshot for the fusions, with its best level set within the bounds where that is below
    ``lab``'s energy (None otherwise); on an image up to
    ``options.constrained.area_small_pixels`` also the relaxation with the steps and step scale
    of ``options.constrained.area_small``. Empty where it does not apply
    (``options.tv.iterations`` 0, an image above ``options.constrained.tv_max_pixels``, no
    8-neighbour grid)."""
    c = problem.constraints
    if (problem.k != 2 or not c.has_area or c.has_apart or options.tv.iterations <= 0
            or (options.constrained.tv_max_pixels is not None
                and problem.n > options.constrained.tv_max_pixels)
            or grid_view(problem)[0].shape[0] == 0):
        return []
    w, _, lo, hi, _ = state
    total = float(w.sum())
    area = (max(float(lo[1]), total - float(hi[0]), 0.0),
            min(float(hi[1]), total - float(lo[0]), total))
    runs = [(options.constrained.area_iterations, options.constrained.area_step)]
    small = options.constrained.area_small
    if problem.n <= options.constrained.area_small_pixels and small is not None:
        runs.append(small)
    out = []
    start_e = problem.energy(lab + 1)
    for iterations, step in runs:
        s, start_gap = tv_relaxation_area(problem, lab, area, w, int(iterations), float(step),
                                          gap=options.constrained.relaxation_gap)
        if start_gap <= options.constrained.relaxation_gap:
            log.debug("area relaxation: the start is within %.2g of the optimum", start_gap)
            break  # (no labelling within the bounds is better by more: nothing to propose)
        best, best_e = None, start_e
        for e, make in _level_sets_within(problem, s, w, area, options.constrained.area_levels):
            if e < best_e - 1e-9 * abs(best_e):
                cand = make()
                if problem.feasible(cand + 1):
                    best, best_e = cand, e
        weights = np.empty((s.size, 2), dtype=np.float32)
        weights[:, 1] = s
        weights[:, 0] = 1.0 - s
        out.append((Snapshot.from_dense(weights), best))
    return out


def _expansion_fusions(problem: MRFProblem, args: Labelling, options: PolishOptions) -> int:
    """K >= 3 with apart pairs, area bounds or both: for each label α in turn, the TV
    relaxation of the α-expansion move (that keeps the pairs apart: :func:`solver.mrf.polish.
    tv.expansion_snapshot`), its level sets fused under the constraints as regions of α, each
    region taken only where the areas stay within their bounds (as the unconstrained polish's
    TV-relaxed expansion moves, with ``options.constrained.expansion_iterations`` steps, on
    images up to ``options.constrained.tv_max_pixels`` with an 8-neighbour grid). On the
    kernels' ``args``, in place; returns the regions taken."""
    c = problem.constraints
    steps = options.constrained.expansion_iterations
    if (not (c.has_apart or c.has_area) or problem.k < 3 or steps <= 0
            or (options.constrained.tv_max_pixels is not None
                and problem.n > options.constrained.tv_max_pixels)):
        return 0
    terms = grid_terms(problem, options.tv.step)
    if terms is None:
        return 0
    lab, movable, state = args.lab, args.movable, args.areas
    taken = 0
    for alpha in range(problem.k):
        snap = expansion_snapshot(problem, lab, alpha, terms, steps, min(options.tv.thresholds),
                                  apart=state.apart)
        if snap is not None:
            taken += _level_set_fusions(problem, lab, movable, state, [snap],
                                        options.tv.thresholds, labels=(alpha,))
    log.debug("constrained TV expansions: %d regions taken", taken)
    return taken


def _polish_rounds(problem: MRFProblem, args: Labelling, snapshots: Sequence,
                   options: PolishOptions, since: _Incremental | None = None) -> int:
    """Feasible ICM, then rounds of region moves, margin moves, swaps and level-set fusions,
    each followed by ICM, until a round moves nothing; on the kernels' ``args`` (from
    :func:`_repair_in_place`), in place, what to look at again carried by ``since`` (a new
    one by default; one carried over must have seen the same snapshots). Returns the moves."""
    lab, movable, state = args.lab, args.movable, args.areas
    since = _Incremental(args) if since is None else since
    moves = since.icm(args)
    cap = options.cap(problem.n)
    for r in range(MAX_ROUNDS):
        step = _region_moves(problem, lab, movable, state, cap)
        if problem.constraints.has_apart:
            step += mk.margin_moves(*args, problem.n)
        if problem.constraints.has_area:
            step += ck.swap_rounds(*args, MAX_ROUNDS)
        if r < options.fusion.coarse_rounds and len(snapshots):
            step += _level_set_fusions(problem, lab, movable, state, snapshots,
                                       options.fusion.thresholds,
                                       starts=since.fusion_starts(problem, args))
        moves += step
        if step == 0:
            break
        moves += since.icm(args)
    return moves


def _polish_from(problem: MRFProblem, args: Labelling, start: np.ndarray, snapshots: Sequence,
                 options: PolishOptions, since: _Incremental) -> int:
    """:func:`_polish_rounds` from other feasible 0-based labels ``start`` (changed in place),
    with their own areas, on the rest of the kernels' ``args``, the ICM's state forked from
    ``since`` (that of ``args``); returns the moves."""
    return _polish_rounds(problem, args._replace(lab=start, areas=level_state(problem, start)),
                          snapshots, options, since.fork())


@documented
def constrained_polish(problem: MRFProblem, labels: np.ndarray,
                       snapshots: Sequence = (), options: PolishOptions = _DEFAULT,
                       tv: bool = True) -> np.ndarray:
    """Repair, then polish with feasible moves only (see the module docstring); never raises
    the energy of a feasible labelling.

    Parameters
    ----------
    %(constrained_labels)s
    snapshots : sequence
        ADMM's continuous iterates (:class:`solver.mrf.polish.fusion.Snapshot` or ``(n, K)``
        label weights): their level sets are fused region by region.
    options : PolishOptions
        The region cap, and the TV relaxation's settings.
    tv : bool
        K = 2 with area bounds: also polish from the TV relaxations under the bound
        (:func:`_tv_proposals`) and keep the best end; K > 2 with apart pairs or area bounds:
        TV-relaxed expansion moves (:func:`_expansion_fusions`), then for a nesting a polish
        from the layered relaxation's best level set
        (:func:`solver.mrf.polish.layered.layered_proposals`), the better end kept. The
        coarse-to-fine solver asks for it in the final polish only (at a coarser level it
        changes what the next level starts from, and can lead it to a worse end).

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 feasible labels.
    """
    lab = kernels.zero_based(labels)
    args = _repair_in_place(problem, lab)
    relaxations = _tv_proposals(problem, lab, args.areas, options) if tv else []
    start = lab.copy() if relaxations else None
    since = _Incremental(args)
    moves = _polish_rounds(problem, args, snapshots, options, since)
    if tv and _expansion_fusions(problem, args, options):
        moves += _polish_rounds(problem, args, snapshots, options, since)
    for snap, candidate in relaxations:
        # one more polish per relaxation: from its best level set within the bounds, or from
        # the repaired labels, its level sets fused as well; the best end is kept (one polish
        # with all of them can end worse than the plain one: its fusions lead elsewhere)
        other = start.copy() if candidate is None else candidate
        moves += _polish_from(problem, args, other, [*snapshots, snap], options, since)
        if problem.energy(other + 1) < problem.energy(lab + 1):
            lab = other
    # a nesting: the layered relaxation from the polished labels (from far, its layers do not
    # settle in its steps), and a polish from its best level set where that is lower
    for snap, candidate in layered_proposals(problem, lab, options) if tv else []:
        if candidate is not None:
            moves += _polish_from(problem, args, candidate, [snap], options, since)
            if problem.energy(candidate + 1) < problem.energy(lab + 1):
                lab = candidate
    log.debug("constrained polish: %d moves", moves)
    return kernels.one_based(lab, problem.shape)
