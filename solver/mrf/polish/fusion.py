"""Level-set fusion: ADMM's own continuous iterates propose regions, each taken if it lowers the
energy.

The early iterates of ℓ2-box ADMM are close to the continuous (quadratic) relaxation. Their level
sets ``{x_c > t}`` outline regions that rounding and the later, strongly penalised iterations can
get wrong as a whole (a thin part, a corner cut off), which no single-pixel move can repair. For
a proposal ``C`` (the current labels with label ``c`` wherever ``x_c > t``), every 8-connected
component of ``{labels != C}`` is a move of its own: components never touch, so the energy change
of each is exact and independent of the others, and all the moves that lower the energy are taken
at once (a fusion move restricted to whole components).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np
from scipy import ndimage

from solver.mrf.build.problem import MRFProblem
from solver.mrf.build.stencil import Potts, potts_of
from solver.mrf.options import PolishOptions
from solver.mrf.polish import descent_kernels, region_kernels
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish.morphology import square_morphology
from solver.mrf.polish.moves import documented, on_copy

log = logging.getLogger(__name__)

#: Level-set thresholds of the plain fusion by default (:attr:`PolishOptions.thresholds`).
THRESHOLDS = PolishOptions().fusion.thresholds


class Snapshot(NamedTuple):
    """A continuous iterate as label weights on the pixels its solver had free; every other pixel
    has weight 1 on the label it was fixed to. Kept this way, a snapshot of a band level costs
    memory for the band only.

    Attributes
    ----------
    pixels : numpy.ndarray
        ``(m,)`` int64 pixel indices.
    weights : numpy.ndarray
        ``(m, K)`` float32 label weights of those pixels.
    fixed : numpy.ndarray
        ``(n,)`` int labels (1..K) of the other pixels, 0 at ``pixels`` (int8 as the solver
        keeps them and the kernels take them; other integer dtypes are converted).
    """

    pixels: np.ndarray
    weights: np.ndarray
    fixed: np.ndarray

    @classmethod
    def from_dense(cls, weights: np.ndarray) -> Snapshot:
        """A snapshot with weights on every pixel, from an ``(n, K)`` array."""
        w = np.asarray(weights, dtype=np.float32)
        w = w.reshape(-1, w.shape[-1])
        return cls(np.arange(w.shape[0], dtype=np.int64), w, np.zeros(w.shape[0], np.int8))

    def dense(self) -> np.ndarray:
        """The ``(n, K)`` float32 label weights of every pixel."""
        return region_kernels.dense_snapshot(*snapshot_arrays(self))


def snapshot_arrays(snap: Snapshot | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pixels, weights, fixed)`` of a snapshot (or of ``(n, K)`` dense weights) with the
    dtypes the fusion kernels take: int64, contiguous float32, int8 (the dtype the solver keeps
    a snapshot's fixed labels in, so its ``(n,)`` array is passed without a copy; labels are at
    most 32)."""
    if not isinstance(snap, Snapshot):
        snap = Snapshot.from_dense(snap)
    return (np.asarray(snap.pixels, dtype=np.int64),
            np.ascontiguousarray(snap.weights, dtype=np.float32),
            np.asarray(snap.fixed, dtype=np.int8))


class Workspace:
    """Work arrays that the steps of one polish share, made when first asked for.

    Each kernel leaves its work arrays as it found them, so one set serves every step. Made per
    step, a 5e5-pixel set is tens of MB of fresh memory whose first touch costs page faults
    (measured: docs/decisions.md, Less set-up and fewer fresh arrays).

    Parameters
    ----------
    problem : MRFProblem
    """

    def __init__(self, problem: MRFProblem) -> None:
        self.n, self.k = problem.n, problem.k
        self._problem = problem
        self._sets: dict[str, Any] = {}

    def _get(self, name: str, make: Callable[[], Any]) -> Any:
        if name not in self._sets:
            self._sets[name] = make()
        return self._sets[name]

    def fusion(self) -> tuple[np.ndarray, ...]:
        """Work arrays of the fusion kernels
        (:func:`solver.mrf.polish.region_kernels.fusion_scratch`); its fourth to seventh are
        the region moves' set (:meth:`region`), shared."""
        def make() -> tuple[np.ndarray, ...]:
            if "region" not in self._sets:
                return region_kernels.fusion_scratch(self.n)
            ix = region_kernels.index_dtype(self.n)  # (the arrays fusion_scratch makes)
            return (np.empty(self.n, ix), np.zeros(self.n, ix), np.zeros(self.n, np.bool_),
                    *self._sets["region"], np.zeros(self.n, np.bool_), np.full(self.n, -1, ix))
        return self._get("fusion", make)

    def descent(self) -> tuple[np.ndarray, ...]:
        """Work arrays of descent fusion
        (:func:`solver.mrf.polish.descent_kernels.descent_scratch`), sharing the fusion set."""
        return self._get("descent", lambda: descent_kernels.descent_scratch(self.n, self.k,
                                                                            self.fusion()))

    def region(self) -> tuple[np.ndarray, ...]:
        """Work arrays of region moves (:func:`solver.mrf.polish.region_kernels.region_scratch`):
        the fusion set's fourth to seventh arrays, which have the same dtypes, sizes and
        contents between calls (a region map of -1, a pixel order, component starts, a pixel
        list), so the two steps, which never run at once, share them: 16 bytes a pixel less at
        a large photo's memory peak, the final polish (docs/decisions.md, Memory)."""
        def make() -> tuple[np.ndarray, ...]:
            if "fusion" in self._sets:
                return tuple(self._sets["fusion"][3:7])
            return region_kernels.region_scratch(self.n)
        return self._get("region", make)

    def labels(self, name: str) -> np.ndarray:
        """An ``(n,)`` int32 array for labels (the dtype of :func:`icm_kernels.zero_based`), one
        per ``name`` (its contents are the caller's)."""
        return self._get("labels:" + name, lambda: np.empty(self.n, np.int32))

    def preferred(self) -> np.ndarray:
        """``(n,)`` int8 each pixel's cheapest label by its data alone (0-based; the problem's
        :attr:`~solver.mrf.build.problem.MRFProblem.cheapest`, made once)."""
        return self._problem.cheapest

    def prefers(self, b: int) -> np.ndarray:
        """``(n,)`` bool: the pixels whose cheapest label by their data is ``b`` (0-based)."""
        return self._get(f"prefers:{b}", lambda: self.preferred() == b)


class FixedDisagreement:
    """The pixels that a snapshot's solver fixed to another label than the current labels',
    found once per ``fixed`` array while the labels do not change.

    A fusion's snapshots come from a few solver pieces, each with its own ``fixed`` array, and each
    kernel call needs the pixels where that array disagrees with ``lab``
    (:func:`solver.mrf.polish.region_kernels.fixed_disagreement`): a pass over the image, made here
    once per array instead of once per snapshot (measured: docs/decisions.md, Splits, fusions and
    the polish's bookkeeping). Call :meth:`labels_changed` whenever ``lab`` changes.

    Parameters
    ----------
    lab : numpy.ndarray
        ``(n,)`` 0-based labels (the array the fusion changes in place).
    movable : numpy.ndarray
        ``(n,)`` bool, the pixels that may change.
    """

    def __init__(self, lab: np.ndarray, movable: np.ndarray) -> None:
        self._lab, self._movable = lab, movable
        self._found: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __call__(self, fixed: np.ndarray) -> np.ndarray:
        """The disagreeing pixels of ``fixed`` (``(n,)`` int8, 1-based, 0 where not fixed) in
        index order, int64."""
        got = self._found.get(id(fixed))
        if got is None or got[0] is not fixed:  # (the array is kept, so its id stays its own)
            got = (fixed, region_kernels.fixed_disagreement(self._lab, self._movable, fixed))
            self._found[id(fixed)] = got
        return got[1]

    def labels_changed(self) -> None:
        """Forget every list (the labels changed)."""
        self._found.clear()


def descent_fuser(problem: MRFProblem, lab: np.ndarray,
                  workspace: Workspace | None = None) -> Callable[..., int]:
    """Descent fusion into ``lab`` (``(n,)`` 0-based, changed in place), one proposal set a call.

    Sets up what every call of :func:`solver.mrf.polish.descent_kernels.fuse_descents` on these
    labels shares: the free-pixel mask, the kernel's work arrays (its copy of the labels made
    once) and the Laplacian's arrays, and the pixels each ``fixed`` array disagrees with
    (:class:`FixedDisagreement`). The returned function takes ``(pixels, weights, fixed,
    thresholds, max_size)`` and returns the regions taken; ``lab`` must change only through it.
    """
    movable = problem.movable
    scratch = (workspace or Workspace(problem)).descent()
    scratch[1][:] = lab  # the kernel's copy of the labels, which it keeps equal to them
    # (the graph arrays: on a grid its weights, read without the matrix; solver.mrf.build.stencil)
    potts = potts_of(problem)

    disagreeing = FixedDisagreement(lab, movable)

    def fuse_into(pixels: np.ndarray, weights: np.ndarray, fixed: np.ndarray,
                  thresholds: np.ndarray, max_size: int) -> int:
        taken = descent_kernels.fuse_descents(potts, lab, movable, pixels, weights, fixed,
                                              disagreeing(fixed), thresholds, max_size, scratch)
        if taken:
            disagreeing.labels_changed()
        return taken
    return fuse_into


def _context(problem: MRFProblem,
             workspace: Workspace | None) -> tuple[np.ndarray, Potts, tuple]:
    """What every fusion works on besides the labels: the free-pixel mask, the Potts energy's arrays
    (:class:`solver.mrf.build.stencil.Potts`) and one set of kernel work arrays for all its
    proposals."""
    scratch = (workspace or Workspace(problem)).fusion()
    return problem.movable, potts_of(problem), scratch


def fuse(problem: MRFProblem, labels: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, int]:
    """Take ``candidate`` on each 8-connected region where it differs, if that lowers the energy.

    Parameters
    ----------
    problem : MRFProblem
    labels, candidate : numpy.ndarray
        ``(n,)`` integer labels in 1..K. Hard-constrained pixels never change.

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int64 labels (a new array), energy no higher than the input's.
    moved : int
        Number of regions taken.
    """
    lab = kernels.zero_based(labels)
    free, potts, scratch = _context(problem, None)
    c = kernels.zero_based(candidate)
    idx = np.flatnonzero((lab != c) & free)
    moved = region_kernels.fuse_candidate(potts, lab, idx, c[idx], scratch)
    return lab + 1, moved


@documented
def fuse_level_sets(problem: MRFProblem, labels: np.ndarray,
                    snapshots: Iterable[Snapshot | np.ndarray],
                    thresholds: Iterable[float] = THRESHOLDS,
                    max_pixels: int | None = None,
                    workspace: Workspace | None = None) -> tuple[np.ndarray, int]:
    """Fuse ``labels`` with every level-set proposal of every snapshot, in turn.

    The proposal for label ``c`` and threshold ``t`` is ``labels`` with ``c`` wherever ``x_c > t``.

    Parameters
    ----------
    %(problem_labels)s
    snapshots : iterable of Snapshot or numpy.ndarray
        Continuous iterates: :class:`Snapshot` or ``(n, K)`` label weights.
    thresholds : iterable of float
    %(max_pixels)s
    %(workspace)s

    Returns
    -------
    %(labels_moved)s
    """
    return on_copy(fuse_level_sets_into, problem, labels, snapshots, thresholds, max_pixels,
                   workspace)


def fuse_level_sets_into(problem: MRFProblem, lab: np.ndarray,
                         snapshots: Iterable[Snapshot | np.ndarray],
                         thresholds: Iterable[float] = THRESHOLDS,
                         max_pixels: int | None = None,
                         workspace: Workspace | None = None) -> int:
    """:func:`fuse_level_sets` on ``(n,)`` int64 0-based labels, changed in place (a polish
    keeps its labels so from step to step, sparing a conversion of the image each way); returns
    the number of regions taken."""
    free, potts, scratch = _context(problem, workspace)
    ts = np.asarray(tuple(thresholds), dtype=np.float64)
    moved = 0
    disagreeing = FixedDisagreement(lab, free)
    for snap in snapshots:
        pixels, weights, fixed = snapshot_arrays(snap)
        taken = region_kernels.fuse_level_sets(potts, lab, free, pixels, weights, fixed,
                                               disagreeing(fixed), ts,
                                               lab.size if max_pixels is None else max_pixels,
                                               scratch)
        if taken:
            disagreeing.labels_changed()
        moved += taken
    log.debug("level-set fusion: %d regions taken", moved)
    return moved


#: Half-width of the closing in :func:`fuse_closings` (tuned: docs/decisions.md, Closing fusion and
#: box completion).
CLOSING_RADIUS = 2


@documented
def fuse_closings(problem: MRFProblem, labels: np.ndarray, radius: int = CLOSING_RADIUS,
                  workspace: Workspace | None = None) -> tuple[np.ndarray, int]:
    """Fill in each label's concavities: fuse with "label ``c`` on the closing of
    ``{labels == c}``".

    A shape that ADMM bit a corner off, or left a notch in, is cheaper whole, but filling the
    corner needs many pixels to move together (the first ones alone raise the energy), so no
    single-pixel or boundary-cluster move starts it. The morphological closing (dilation then
    erosion by a ``(2 radius + 1)``-square) proposes exactly those pixels; each connected region
    of them is taken if it lowers the energy (exact, see :func:`fuse`).

    Parameters
    ----------
    %(problem_labels)s
    radius : int
        Half-width of the closing's square.
    %(workspace)s

    Returns
    -------
    %(labels_moved)s
    """
    return on_copy(fuse_closings_into, problem, labels, radius, workspace)


def fuse_closings_into(problem: MRFProblem, lab: np.ndarray, radius: int = CLOSING_RADIUS,
                       workspace: Workspace | None = None) -> int:
    """:func:`fuse_closings` on ``(n,)`` int64 0-based labels, changed in place; returns the
    number of regions taken."""
    free, potts, scratch = _context(problem, workspace)
    moved = 0
    for c in range(problem.k):
        mask = (lab == c).reshape(problem.shape)
        closed = square_morphology(mask, radius, "closing").ravel()
        idx = np.flatnonzero(closed & ~mask.ravel() & free)
        if idx.size:
            moved += region_kernels.fuse_candidate(potts, lab, idx,
                                                   np.full(idx.size, c, np.int64), scratch)
    log.debug("closing fusion: %d regions taken", moved)
    return moved


@documented
def fuse_boxes(problem: MRFProblem, labels: np.ndarray, min_size: int = 16,
               max_fraction: float = 0.25,
               workspace: Workspace | None = None) -> tuple[np.ndarray, int]:
    """Complete shapes to their bounding boxes: fuse with "label ``c`` on the box of each
    8-connected region of ``c``" (regions of at least ``min_size`` pixels whose box covers at most
    ``max_fraction`` of the image).

    A corner cut off a rectangular object is a convex cut, which :func:`fuse_closings` does not
    fill; the box proposes it, and each connected piece where the box differs from the labels is
    taken if it lowers the energy (exact, see :func:`fuse`).

    Parameters
    ----------
    %(problem_labels)s
    min_size : int
    max_fraction : float
    %(workspace)s

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int64 labels, energy no higher than the input's.
    moved : int
        Number of pieces taken.
    """
    return on_copy(fuse_boxes_into, problem, labels, min_size, max_fraction, workspace)


def fuse_boxes_into(problem: MRFProblem, lab: np.ndarray, min_size: int = 16,
                    max_fraction: float = 0.25, workspace: Workspace | None = None) -> int:
    """:func:`fuse_boxes` on ``(n,)`` int64 0-based labels, changed in place; returns the
    number of pieces taken."""
    h, w = problem.shape
    free, potts, scratch = _context(problem, workspace)
    free = free.reshape(h, w)
    moved = 0
    for c in range(problem.k):
        comp, nc = ndimage.label((lab == c).reshape(h, w), structure=np.ones((3, 3), bool))
        sizes = np.bincount(comp.ravel(), minlength=nc + 1)
        for j, (rows, cols) in enumerate(ndimage.find_objects(comp), start=1):
            area = (rows.stop - rows.start) * (cols.stop - cols.start)
            if sizes[j] < min_size or area > max_fraction * h * w or area == sizes[j]:
                continue
            box = lab.reshape(h, w)[rows, cols]
            ys, xs = np.nonzero((box != c) & free[rows, cols])
            idx = (ys + rows.start) * w + xs + cols.start
            moved += region_kernels.fuse_candidate(potts, lab, idx,
                                                   np.full(idx.size, c, np.int64), scratch)
    log.debug("box fusion: %d pieces taken", moved)
    return moved
