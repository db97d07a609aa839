"""Descent fusion: level-set proposals of ADMM's iterates, carved by ICM, fused region by region."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from solver.mrf.build.problem import MRFProblem
from solver.mrf.polish.fusion import (
    THRESHOLDS,
    Snapshot,
    Workspace,
    descent_fuser,
    snapshot_arrays,
)
from solver.mrf.polish.moves import documented, on_copy

log = logging.getLogger(__name__)


@documented
def fuse_descents(problem: MRFProblem, labels: np.ndarray,
                  snapshots: Sequence[Snapshot | np.ndarray],
                  thresholds: Sequence[float] = THRESHOLDS,
                  max_pixels: int | None = None,
                  workspace: Workspace | None = None) -> tuple[np.ndarray, int]:
    """Fuse with level-set proposals after ICM has carved them: ICM from "label ``c`` wherever
    ``x_c > t``", then each connected region where the result differs is taken if it lowers the
    energy.

    A level-set region that holds a good move is often joined to pixels where the same label
    costs more, so :func:`solver.mrf.polish.fusion.fuse_level_sets` rejects the whole. ICM
    started from the proposal lets those pixels fall back one by one (given the proposal around
    them), which leaves the good part as a region of its own. Each ICM is a work queue around
    the proposal's pixels (:func:`solver.mrf.polish.descent_kernels.fuse_descents`); if
    ``labels`` is an ICM fixed point the result is one too.

    Parameters
    ----------
    %(problem_labels)s
    snapshots : sequence of Snapshot or numpy.ndarray
        ADMM's continuous iterates, as for :func:`solver.mrf.polish.polish_labels`.
    thresholds : sequence of float
        Level-set thresholds.
    %(max_pixels)s
    %(workspace)s

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int64 labels, an ICM fixed point with energy no higher than the input's.
    moved : int
        Regions taken.
    """
    return on_copy(fuse_descents_into, problem, labels, snapshots, thresholds, max_pixels,
                   workspace)


def fuse_descents_into(problem: MRFProblem, lab: np.ndarray,
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
