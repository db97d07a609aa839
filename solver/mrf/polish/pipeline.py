"""The polish: the sequence of moves that finishes ADMM's labelling.

ICM and pair moves, closing and box fusion, whole-region moves, region splits, then fusion with
the level sets of ADMM's iterates (carved by ICM), of a TV relaxation (of the labelling for
K = 2, of each label's expansion move for K > 2), of edge-snapped zones, and plain ones. Every
move is exact and taken only when it lowers the energy, so the polish never raises it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from solver.mrf.build.problem import MRFProblem, replace_problem
from solver.mrf.options import PolishOptions
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish.constrained import constrained_polish
from solver.mrf.polish.descents import fuse_descents_into
from solver.mrf.polish.fusion import (
    Snapshot,
    Workspace,
    fuse_boxes_into,
    fuse_closings_into,
    fuse_level_sets_into,
)
from solver.mrf.polish.icm import icm_into, pair_moves_into
from solver.mrf.polish.local import fuse_local_expansions_into
from solver.mrf.polish.moves import documented
from solver.mrf.polish.regions import settle_regions_into, split_moves_into
from solver.mrf.polish.stages import StageClock
from solver.mrf.polish.tv import fuse_tv_expansions_into, fuse_tv_into
from solver.mrf.polish.watershed import fuse_edge_snapped_into

log = logging.getLogger(__name__)

_DEFAULT = PolishOptions()


@documented
def polish_labels(problem: MRFProblem, labels: np.ndarray,
                  snapshots: Sequence[Snapshot | np.ndarray] = (),
                  max_rounds: int | None = None, split: bool = True,
                  since: np.ndarray | None = None,
                  options: PolishOptions = _DEFAULT, backend: Any = None,
                  stop: Callable[[], bool] | None = None,
                  cells: int | None = None, report: list | None = None,
                  energy: float | None = None,
                  on_stage: Callable[[str], None] | None = None) -> np.ndarray:
    """ICM and pair moves (K > 2, or ``options.pair_moves_binary``), filled concavities and box
    completions, whole-region moves, region splits, then fusion with the level sets of ADMM's
    iterates carved by ICM (:func:`solver.mrf.polish.descents.fuse_descents`), with the TV
    relaxation's level sets (:mod:`solver.mrf.polish.tv`: of the labelling for K = 2, of each
    label's expansion move for K > 2, if ``options.tv.iterations`` or
    ``options.tv.expansion_iterations``), with the boundaries snapped to image edges
    (:func:`solver.mrf.polish.watershed.fuse_edge_snapped`,
    if ``options.edge_snap``) and with the plain level sets; never raises the energy.

    Parameters
    ----------
    %(problem_labels)s
    snapshots : sequence of Snapshot or numpy.ndarray
        Continuous ADMM iterates (:class:`solver.mrf.polish.fusion.Snapshot`, or ``(n, K)``
        label weights), for the level-set fusions; empty: no level-set fusion.
    max_rounds : int, optional
        Limit on rounds of plain level-set fusion, each followed by ICM and region moves
        (default: ``options.fusion.final_rounds`` in a final polish,
        ``options.fusion.coarse_rounds`` at a coarser level).
    split : bool
        This is a final polish: try split moves (if ``options.split``), descent fusion (if
        ``options.descents``) and edge-snapped proposals (if ``options.edge_snap``). The
        coarse-to-fine solver asks for them in the final polish only: at coarser levels they
        change which regions the next level sees, for no gain (see docs/decisions.md).
    since : numpy.ndarray, optional
        An ICM fixed point that ``labels`` differs from in few pixels (a band level's warm
        start): the first ICM then looks only around those pixels
        (:func:`solver.mrf.polish.icm.icm`), with the same result.
    options : PolishOptions
        What to try.
    backend : solver.backend.Backend, optional
        The solve's backend: on the GPU the TV relaxations' steps run there
        (:func:`solver.mrf.polish.tv.grid_steps`); None: the host.
    stop : callable, optional
        Polled between the TV relaxations' rounds (and labels) and after them; once it returns
        True the polish ends with the labels it has (a cancel: never worse than the input).
    cells : int, optional
        The labels came through a pyramid whose finest cells have this side: a final polish
        re-solves windows around straight label runs along its cell lines
        (:func:`solver.mrf.polish.local.fuse_local_expansions_into`, if
        ``options.local.iterations``), after the TV relaxations, and again after the last
        level-set fusion around the runs it made (``options.local.again``). None: a problem
        solved whole.
    report : list, optional
        Where to append a :class:`solver.mrf.polish.stages.StageReport` per stage that ran
        (:data:`solver.mrf.polish.stages.STAGES`: its time and the energy it took off, the
        energy evaluated only after a stage that changed the labels). None: nothing timed.
    energy : float, optional
        The energy of ``labels``, where the caller has it (saves the report one pass).
    on_stage : callable, optional
        Called with each stage's name as it starts (with or without ``report``).

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32 labels.
    """
    if problem.constraints is not None:  # only moves that keep area bounds and apart pairs
        return _constrained(problem, labels, snapshots, split, options, backend, report,
                            energy, on_stage)
    ws = Workspace(problem)  # (one set of work arrays for every step)
    # The steps work in place on 0-based labels, converted once each way (not between steps:
    # each conversion is a pass over the image), with the labels before each step in one
    # reused array. Each step starts from an ICM fixed point, so each ICM after it looks only
    # around its moves; each region pass after the first starts from the last one's settled
    # labelling, so it need only look at the regions near what changed since.
    lab = kernels.zero_based(labels)
    before = ws.labels("step")
    clock = StageClock(problem, lab, energy) if report is not None else None

    def stage(name: str, compare: bool = True):
        """The stage ``name`` timed (when a report is asked for), the labels before it kept
        in ``before``; ``compare``: it does not say whether it moved, so its end compares."""
        if on_stage is not None:
            on_stage(name)
        if clock is None:
            if not compare:  # (the stage reads ``before``)
                np.copyto(before, lab)
            return nullcontext(_ignore)
        np.copyto(before, lab)
        return clock.stage(name, before if compare else None)

    def settle(since: np.ndarray | None) -> bool:
        return settle_regions_into(problem, lab, icm_optimal=True, since=since, workspace=ws,
                                   options=options)

    with stage("icm"):
        icm_into(problem, lab, since=None if since is None else kernels.zero_based(since))
        if problem.k > 2 or options.pair_moves_binary:
            np.copyto(before, lab)
            pair_moves_into(problem, lab, before=before)
    with stage("fill", compare=False) as took:
        for fill in (fuse_closings_into, fuse_boxes_into):
            np.copyto(before, lab)
            if fill(problem, lab, workspace=ws):
                took()
                icm_into(problem, lab, since=before)
    with stage("regions"):
        settled = settle(None)
    if options.split and split and problem.k > 2:  # (region splits need a third label)
        with stage("split", compare=False) as took:
            if split_moves_into(problem, lab):
                took()
                icm_into(problem, lab, since=before)
                settled = settle(before if settled else None)
    if len(snapshots):
        # built once for all rounds; dense weights as snapshots once, so every fusion sees
        # the same fixed arrays (fusion.FixedDisagreement finds their pixels once)
        snapshots = [s if isinstance(s, Snapshot) else Snapshot.from_dense(s)
                     for s in snapshots]
    tv_steps = (binary_tv_steps(problem.n, options) if problem.k == 2
                else options.tv.expansion_iterations)
    tv_runs = (split and tv_steps > 0
               and (options.tv.max_pixels is None or problem.n <= options.tv.max_pixels))
    # (K = 2: the TV relaxation's level sets take what descent fusion and edge snapping take)
    tv_only = problem.k == 2 and tv_runs and options.tv.only_binary
    if options.descents and split and len(snapshots) and not tv_only:
        # before the plain fusion, which can take a union whose bad part a descent leaves out
        thresholds = (options.fusion.descent_thresholds if problem.k == 2
                      else options.fusion.descent_thresholds_multi)
        with stage("descent", compare=False) as took:
            if fuse_descents_into(problem, lab, snapshots, thresholds,
                                  options.fusion.descent_max_pixels, workspace=ws):
                took()
                settled = settle(before if settled else None)
    if tv_runs:
        with stage("tv" if problem.k == 2 else "tv-expansion", compare=False) as took:
            if (fuse_tv_into(problem, lab, tv_steps, options.tv.step, options.tv.thresholds,
                             workspace=ws, backend=backend, gap=options.tv.gap,
                             every=options.tv.fuse_every, next_every=options.tv.fuse_next,
                             proof=options.tv.proof,
                             proof_iterations=int(tv_steps * options.tv.proof_scale),
                             stop=stop)
                    if problem.k == 2 else
                    fuse_tv_expansions_into(problem, lab, tv_steps, options.tv.step,
                                            options.tv.thresholds, workspace=ws,
                                            backend=backend, gap=options.tv.expansion_gap,
                                            stop=stop)):
                took()
                icm_into(problem, lab, since=before)
                settled = settle(before if settled else None)
    local = (cells is not None and split and options.local.iterations > 0
             and (problem.k > 2 or (options.local.binary and not tv_runs)))
    covered = np.zeros(problem.shape, bool) if local else None  # (zones re-solved so far)

    def resolve_runs(settled: bool) -> bool:
        """The local re-solves around the runs outside ``covered``, then ICM and region
        moves where they took regions; whether the labels are settled after."""
        with stage("local", compare=False) as took:
            if fuse_local_expansions_into(problem, lab, cells, options.local.iterations,
                                          options.tv.step, options.tv.thresholds,
                                          margin=options.local.margin,
                                          length=options.local.run, gap=options.local.gap,
                                          rounds=options.local.rounds, covered=covered,
                                          workspace=ws, stop=stop):
                took()
                icm_into(problem, lab, since=before)
                settled = settle(before if settled else None)
        return settled

    def done() -> np.ndarray:
        if clock is not None:
            report.extend(clock.reports())
        return kernels.one_based(lab, problem.shape)

    if local and not (stop is not None and stop()):
        settled = resolve_runs(settled)
    if stop is not None and stop():
        log.info("polish stopped after its TV relaxations")
        return done()
    if options.edge_snap and split and not tv_only:
        with stage("edge-snap", compare=False) as took:
            if fuse_edge_snapped_into(problem, lab, workspace=ws):
                took()
                settled = settle(before if settled else None)
    if max_rounds is None:
        max_rounds = options.fusion.final_rounds if split else options.fusion.coarse_rounds
    if len(snapshots) and max_rounds > 0:
        with stage("level-sets", compare=False) as took:
            for _ in range(max_rounds):
                np.copyto(before, lab)
                if fuse_level_sets_into(problem, lab, snapshots, options.fusion.thresholds,
                                        max_pixels=options.fusion.max_pixels,
                                        workspace=ws) == 0:
                    break
                took()
                icm_into(problem, lab, since=before)
                settled = settle(before if settled else None)
    if local and options.local.again and not (stop is not None and stop()):
        resolve_runs(settled)  # (after the last fusion: around the runs it made)
    return done()


def _ignore() -> None:
    """A stage's ``took`` where no report is kept."""


def _constrained(problem: MRFProblem, labels: np.ndarray,
                 snapshots: Sequence[Snapshot | np.ndarray], split: bool,
                 options: PolishOptions, backend: Any, report: list | None,
                 energy: float | None,
                 on_stage: Callable[[str], None] | None) -> np.ndarray:
    """:func:`polish_labels` under area bounds and apart pairs: only moves that keep them
    (:func:`constrained_polish`), and for a K = 2 area bound the relax-and-repair move; each
    a stage of ``report`` where one is asked for."""
    relax = (split and problem.n <= options.constrained.relax_area_max_pixels and problem.k == 2
             and problem.constraints.has_area and not problem.constraints.has_apart)
    lab = kernels.zero_based(labels) if report is not None else None
    clock = StageClock(problem, lab, energy) if report is not None else None
    for name in ("constrained", "area-relaxation") if relax else ("constrained",):
        if on_stage is not None:
            on_stage(name)
        with (clock.stage(name, lab.copy()) if clock is not None
              else nullcontext(_ignore)):
            labels = (constrained_polish(problem, labels, snapshots, options, tv=split)
                      if name == "constrained" else
                      _relaxed_area(problem, labels, options, backend))
            if lab is not None:
                lab[:] = kernels.zero_based(labels)
    if clock is not None:
        report.extend(clock.reports())
    return labels


def binary_tv_steps(n: int, options: PolishOptions = _DEFAULT) -> int:
    """The most TV steps of a K = 2 final polish of ``n`` pixels: ``options.tv.iterations``,
    grown with the image's side above ``options.tv.grow_above`` pixels and rounded up to whole
    rounds of ``options.tv.fuse_every`` steps.

    On the real-input benchmark's tuning images at 3 MP (K = 2, 2026-11-29), 800 steps left
    four of 24 cases with a straight block edge (worst +0.029% above min-cut's energy), 1600
    one (+0.006%), 400 seven (+0.095%): a boundary drifts a bounded number of pixels a step,
    so a larger image needs more (docs/decisions.md, "TV proposals up to 4 MP").

    Parameters
    ----------
    n : int
        Pixels.
    options : PolishOptions

    Returns
    -------
    int
    """
    steps = int(options.tv.iterations)
    grow = options.tv.grow_above
    if grow is None or n <= grow or steps <= 0:
        return steps
    grown = steps * math.sqrt(n / grow)
    block = max(int(options.tv.fuse_every or 1), 1)
    return int(math.ceil(grown / block - 1e-9) * block)


def _relaxed_area(problem: MRFProblem, labels: np.ndarray, options: PolishOptions,
                  backend: Any) -> np.ndarray:
    """The better of a K = 2 area-bounded problem's polished ``labels`` and the end of a
    relax-and-repair move from them: the polish without the bound, then the repair and the
    feasible polish (:func:`constrained_polish`, without its relaxations) from there.

    The move takes a region out and the area back elsewhere at once, an exchange no feasible
    move makes: with the area near a bound, each half alone breaks it or raises the energy. On
    the coffee photo with a rectangle at 1e4 pixels, its area bounded above the unconstrained
    min-cut's, it took the energy from 1.41 % above the parametric min-cut's to 0.02 % below
    (docs/decisions.md, Area bounds and apart pairs, "Relax and repair")."""
    relaxed = polish_labels(replace_problem(problem, constraints=None), labels, split=False,
                            options=options, backend=backend)
    other = constrained_polish(problem, relaxed, (), options, tv=False)
    before, after = problem.energy(labels), problem.energy(other)
    if after < before:
        log.debug("relax and repair: %.6g -> %.6g", before, after)
        return other
    return labels
