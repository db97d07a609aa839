"""The MRF segmentation problem ``E(x) = lam * x^T (I_K kron L) x + d^T x`` and its builder.

Labels are 1..K.  Arrays over pixels are pixel-major: pixel ``(row, col)`` has index
``i = row * W + col``; ``unary[i, k - 1]`` is the cost of giving pixel ``i`` label ``k``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from solver.backend.threads import threaded
from solver.mrf.build.checks import (
    MAX_LABELS,
    RECT_BACKGROUND,
    check_rect,
    check_scalar,
    label_image,
    seed_map,
)
from solver.mrf.build.colour import fit_colour_models, unary_costs
from solver.mrf.build.constraints import ConstraintReport, Constraints, LevelConstraints
from solver.mrf.build.constraints import report as constraint_report
from solver.mrf.build.graph import (GridGraph, build_grid_graph, edge_ends, image_to_float,
                                    laplacian, own_grid)
from solver.mrf.build.grid_kernels import (cheapest_labels, grid_potts_energy,
                                           grid_potts_energy_threaded, potts_energy)
from solver.mrf.options import DEFAULT_LAMBDA  # (the default λ; see build_problem's reasoning)

__all__ = [
    "DEFAULT_LAMBDA", "MAX_LABELS", "MRFProblem", "build_problem", "problem_from_unary",
    "replace_problem", "with_constraints",
]

logger = logging.getLogger(__name__)

#: Largest smoothness weight accepted: 1e5 times the default, far past where every labelling
#: but a constant one costs more than any data term; beyond it the energies (up to 8 lambda a
#: pixel) lose the data terms to rounding and eventually overflow.
MAX_LAMBDA: float = 1e6


class _Laplacian:
    """:attr:`MRFProblem.laplacian`: the matrix stored, or where none is (None given, as
    :func:`build_problem` makes every problem), the graph's made at the first access and kept
    until :meth:`MRFProblem.forget_laplacian`."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: MRFProblem | None, owner: type | None = None) -> sp.csr_matrix | None:
        if obj is None:
            return None  # (the dataclass's default: none stored)
        got = obj.__dict__[self.slot]
        if got is None:
            got = obj.__dict__.get(_MADE)
            if got is None:
                got = laplacian(obj.graph)
                obj.__dict__[_MADE] = got
        return got

    def __set__(self, obj: MRFProblem, value: sp.csr_matrix | None) -> None:
        obj.__dict__[self.slot] = value


#: Pixels from which a grid's energy is summed on numba's threads
#: (:func:`~solver.mrf.build.grid_kernels.grid_potts_energy_threaded`; the same value): below,
#: starting the threads costs more than they save, and brute-force searches and the polish's
#: small problems call the energy thousands of times.
THREADED_ENERGY_PIXELS = 1 << 16

#: Where an :class:`MRFProblem` keeps the Laplacian made from its graph.
_MADE = "_laplacian_made"


@dataclass(frozen=True, eq=False)
class MRFProblem:
    """A K-label Potts MRF on an 8-neighbour pixel grid.

    Attributes
    ----------
    shape : tuple of int
        Image size ``(H, W)``.
    k : int
        Number of labels K (labels are 1..K).
    lam : float
        Smoothness weight lambda.
    unary : numpy.ndarray
        ``(n, K)`` float64 unary costs, pixel-major.
    graph : GridGraph
        The weighted grid graph.
    laplacian : scipy.sparse.csr_matrix
        ``n x n`` Laplacian ``L = D - W`` of ``graph``. None given (as :func:`build_problem` and
        :func:`problem_from_unary` make problems): made from the graph at the first access and
        kept with the problem (until :meth:`forget_laplacian`; not pickled). The solvers and the
        polish do not read it on a graph of the grid's own edges (they read its weights,
        :mod:`solver.mrf.build.stencil`), so a photo's segmentation never makes it: its CSR
        arrays are 108 bytes a pixel.
    hard : numpy.ndarray
        ``(n,)`` int32: 0 = free, ``k`` = pixel fixed to label ``k``.
    beta : float
        Contrast parameter of the edge weights.
    colour_model : str
        Name of the colour model behind ``unary``.
    models : tuple
        The fitted colour models (label ``k`` at index ``k - 1``).
    constraints : LevelConstraints or None
        Area bounds and apart pairs the labelling must satisfy
        (:mod:`solver.mrf.build.constraints`); None: none.
    seeds : numpy.ndarray or None
        ``(H, W)`` int32 pixels that trained the colour models (strokes, hard constraints and
        the outside of a rectangle; 0 = none), as :func:`build_problem` found them.
    """

    shape: tuple[int, int]
    k: int
    lam: float
    unary: np.ndarray
    graph: GridGraph
    laplacian: sp.csr_matrix | None = _Laplacian()
    hard: np.ndarray = None  # type: ignore[assignment]  # (required: checked below)
    beta: float = None  # type: ignore[assignment]  # (required: checked below)
    colour_model: str = "gmm"
    models: tuple = field(default=(), repr=False)
    seeds: np.ndarray | None = field(default=None, repr=False)
    constraints: LevelConstraints | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.hard is None or self.beta is None:
            raise TypeError("MRFProblem needs its hard labels and beta")

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop(_MADE, None)  # (made again where needed, from the graph)
        return state

    def forget_laplacian(self) -> None:
        """Drop the Laplacian made for an access of :attr:`laplacian` (made again when asked
        for); nothing for a problem that stores its own."""
        self.__dict__.pop(_MADE, None)

    @property
    def n(self) -> int:
        """Number of pixels."""
        return self.shape[0] * self.shape[1]

    @cached_property
    def movable(self) -> np.ndarray:
        """``(n,)`` bool: the free pixels (``hard == 0``), made once (a pass over the image
        that every polish move needs; at 24 MP it was a tenth of a second per ICM call). Read
        it, do not write it."""
        return np.asarray(self.hard).ravel() == 0

    @cached_property
    def cheapest(self) -> np.ndarray:
        """``(n,)`` int8: each pixel's cheapest label by its data alone, 0-based, the first on
        ties (``argmin(unary, axis=1)``, made once on numba's threads: at 24 MP numpy's took
        0.08 s a call, over a dozen calls a solve). Read it, do not write it."""
        return threaded(cheapest_labels, np.ascontiguousarray(self.unary))

    def _flat_labels(self, labels: np.ndarray) -> np.ndarray:
        """Validate a labelling of shape ``(H, W)`` or ``(n,)`` and return it flat, int64."""
        lab = np.asarray(labels)
        if lab.shape not in (self.shape, (self.n,)):
            raise ValueError(f"labels must have shape {self.shape} or ({self.n},), got {lab.shape}")
        lab = lab.reshape(-1).astype(np.int64)
        if lab.size and (lab.min() < 1 or lab.max() > self.k):
            raise ValueError(f"labels must lie in 1..{self.k}, got {lab.min()}..{lab.max()}")
        return lab

    def energy(self, labels: np.ndarray) -> float:
        """Energy of a labelling.

        ``E = lam * sum_{pairs, l_i != l_j} 2 W_ij + sum_i d_{i, l_i}``, which equals
        ``lam * x^T (I_K kron L) x + d^T x`` for the one-hot encoding ``x`` of the labels.

        Parameters
        ----------
        labels : numpy.ndarray
            ``(H, W)`` or ``(n,)`` labels in 1..K.

        Returns
        -------
        float
            The energy.
        """
        lab = self._flat_labels(labels)
        g = self.graph
        if own_grid(g):  # (the grid's own edges, in order, without their ends' arrays)
            h, w = (int(s) for s in self.shape)
            if self.n < THREADED_ENERGY_PIXELS:
                return float(grid_potts_energy(g.weights, h, w, self.unary, lab - 1,
                                               float(self.lam)))
            return float(threaded(grid_potts_energy_threaded, g.weights, h, w, self.unary,
                                  lab - 1, float(self.lam)))
        gi, gj = edge_ends(g)
        return float(potts_energy(gi, gj, g.weights, self.unary, lab - 1, float(self.lam)))

    def continuous_energy(self, x: np.ndarray) -> float:
        """``lam * x^T (I_K kron L) x + d^T x`` for a relaxed assignment.

        Parameters
        ----------
        x : numpy.ndarray
            ``(n, K)`` (or ``(H, W, K)``) pixel-major relaxed indicators, or the stacked vector
            of length ``n * K`` in label-major order ``[x_1; ...; x_K]`` (the order of
            ``I_K kron L``).

        Returns
        -------
        float
            The energy.
        """
        arr = np.asarray(x, dtype=np.float64)
        if arr.shape == (self.n * self.k,):
            arr = arr.reshape(self.k, self.n).T
        elif arr.shape == (*self.shape, self.k):
            arr = arr.reshape(self.n, self.k)
        elif arr.shape != (self.n, self.k):
            raise ValueError(f"x must have shape ({self.n}, {self.k}), got {arr.shape}")
        quad = float(np.einsum("ik,ik->", arr, self.laplacian @ arr))
        return self.lam * quad + float(np.einsum("ik,ik->", arr, self.unary))

    def check_hard(self, labels: np.ndarray) -> None:
        """Raise ValueError if a labelling violates a hard constraint.

        Parameters
        ----------
        labels : numpy.ndarray
            ``(H, W)`` or ``(n,)`` labels in 1..K.
        """
        lab = self._flat_labels(labels)
        fixed = self.hard > 0
        bad = int(np.count_nonzero(lab[fixed] != self.hard[fixed]))
        if bad:
            raise ValueError(f"labelling violates {bad} hard constraint(s)")

    def constraint_report(self, labels: np.ndarray) -> list[ConstraintReport]:
        """Whether each of the problem's constraints holds for a labelling (empty without).

        Parameters
        ----------
        labels : numpy.ndarray
            ``(H, W)`` or ``(n,)`` labels in 1..K.

        Returns
        -------
        list of ConstraintReport
        """
        if self.constraints is None:
            return []
        return constraint_report(self.constraints, self._flat_labels(labels), self.shape)

    def feasible(self, labels: np.ndarray) -> bool:
        """Whether a labelling satisfies the hard constraints and every other constraint."""
        lab = self._flat_labels(labels)
        fixed = self.hard > 0
        return bool(np.all(lab[fixed] == self.hard[fixed])
                    and all(r.satisfied for r in self.constraint_report(lab)))


def replace_problem(problem: MRFProblem, **changes: object) -> MRFProblem:
    """``dataclasses.replace`` for a problem that leaves a Laplacian it does not store
    unstored (``replace`` itself reads every field, which would make the matrix).

    Parameters
    ----------
    problem : MRFProblem
    **changes
        Fields to change.

    Returns
    -------
    MRFProblem
    """
    changes.setdefault("laplacian", problem.__dict__["_laplacian"])
    return replace(problem, **changes)


def with_constraints(problem: MRFProblem, constraints: Constraints | None) -> MRFProblem:
    """``problem`` with other constraints (None: none), checked against its hard pixels and the
    seeds it recorded.

    Parameters
    ----------
    problem : MRFProblem
    constraints : Constraints or None

    Returns
    -------
    MRFProblem
    """
    if not constraints:
        return replace_problem(problem, constraints=None)
    seeds = problem.seeds if problem.seeds is not None else problem.hard.reshape(problem.shape)
    level = constraints.validate(problem.k, problem.shape, seeds=seeds,
                                 hard=problem.hard.reshape(problem.shape))
    return replace_problem(problem, constraints=level)


def problem_from_unary(
    image: np.ndarray,
    unary: np.ndarray,
    *,
    lam: float = DEFAULT_LAMBDA,
    beta: float | None = None,
    hard: np.ndarray | None = None,
    diagonal_distance: bool = True,
    colour_model: str = "custom",
    models: tuple = (),
    constraints: Constraints | None = None,
) -> MRFProblem:
    """Assemble an MRF from an image (for the edge weights) and given unary costs.

    Useful for benchmarks with synthetic unaries (e.g. the seed paper's fixed Gaussian ones)
    and for tests; :func:`build_problem` uses it after fitting colour models.

    Parameters
    ----------
    image : numpy.ndarray
        Grey, RGB or RGBA image of shape ``(H, W[, C])``.
    unary : numpy.ndarray
        ``(n, K)`` (or ``(H, W, K)``) finite unary costs, pixel-major.
    lam : float, default DEFAULT_LAMBDA
        Smoothness weight, finite and >= 0.
    beta : float, optional
        Edge contrast parameter; estimated from the image when None.
    hard : numpy.ndarray, optional
        ``(H, W)`` int label image of hard constraints, 0 = none.
    diagonal_distance : bool, default True
        Divide diagonal edge weights by sqrt(2).
    colour_model : str, default "custom"
        Name recorded in the problem.
    models : tuple, default ()
        Colour models recorded in the problem.
    constraints : Constraints, optional
        Area bounds and apart pairs (checked against ``hard``).

    Returns
    -------
    MRFProblem
        The problem.
    """
    colours = image_to_float(image)
    shape = colours.shape[:2]
    n = shape[0] * shape[1]
    d = np.asarray(unary, dtype=np.float64)
    if d.ndim == 3 and d.shape[:2] == shape:
        d = d.reshape(n, -1)
    if d.ndim != 2 or d.shape[0] != n:
        raise ValueError(f"unary must have shape ({n}, K), got {d.shape}")
    k = d.shape[1]
    if k < 2 or k > MAX_LABELS:
        raise ValueError(f"k must be between 2 and {MAX_LABELS}, got {k}")
    if not np.all(np.isfinite(d)):
        raise ValueError("unary costs contain NaN or infinite values")
    lam = check_scalar("lambda", lam, upper=MAX_LAMBDA)
    if beta is not None:
        beta = check_scalar("beta", beta)
    hard_img = label_image("hard", hard, shape, k)
    level = (constraints.validate(k, shape, seeds=hard_img, hard=hard_img)
             if constraints else None)
    graph = build_grid_graph(colours, beta=beta, diagonal_distance=diagonal_distance)
    return MRFProblem(
        shape=shape, k=k, lam=lam, unary=np.ascontiguousarray(d), graph=graph,
        laplacian=None, hard=hard_img.ravel(), beta=graph.beta,
        colour_model=colour_model, models=tuple(models), constraints=level,
    )


def build_problem(
    image: np.ndarray,
    strokes: np.ndarray | None = None,
    k: int = 2,
    *,
    rect: tuple[int, int, int, int] | None = None,
    hard: np.ndarray | None = None,
    lam: float = DEFAULT_LAMBDA,
    beta: float | None = None,
    colour_model: str = "gmm",
    diagonal_distance: bool = True,
    seed: int = 0,
    constraints: Constraints | None = None,
    models: Sequence[object] | None = None,
    unlabelled: int | None = None,
) -> MRFProblem:
    """Build the segmentation MRF of an image from strokes, a rectangle and hard constraints.

    The default ``lam = 15`` (:data:`DEFAULT_LAMBDA`) balances the two terms for real photos
    with GMM unaries.  The unaries are negative log densities on the ``[0, 1]`` colour cube, so
    only their differences between labels matter: a few nats for ambiguous colours, tens of
    nats for clearly different ones.  A cut pair costs ``2 * lam * W_ij``, with ``W_ij`` near 1
    inside flat regions and near 0 across strong edges, so with ``lam = 15`` a boundary pixel
    pays roughly 30-90 in a flat region (speckles of ambiguous colour disappear) but almost
    nothing on an image edge (boundaries snap to edges).  That is GrabCut's ``gamma = 50`` per
    pair tempered to 30 (our pairs cost ``2 * lam``): much smaller values leave
    ambiguous-colour islands, much larger ones (``lam = 20``) start to eat thin structures and
    small regions.  It was 10 until 2026-12-02; 15 was the best of 10, 12.5, 15 and 20 on the
    accuracy benchmark's tuning half and gained on every input of its held-out half
    (docs/decisions.md, default lambda).

    Parameters
    ----------
    image : numpy.ndarray
        Grey ``(H, W)``, RGB or RGBA ``(H, W, 3|4)`` image; uint8, uint16 or float in [0, 1].
    strokes : numpy.ndarray, optional
        ``(H, W)`` int label image, 0 = none, ``k`` = label ``k``.  Strokes only train the
        colour models; they are not hard constraints.
    k : int, default 2
        Number of labels, 2..32.
    rect : tuple of int, optional
        GrabCut rectangle ``(x, y, w, h)``, any K: pixels outside are hard-fixed to label 2
        (the background); label 1's model is fitted to the unlabelled inside (plus its
        strokes), label 2's to the outside (plus its strokes), and labels 3..K (K > 2) to
        their strokes, competing with label 1 inside.
    hard : numpy.ndarray, optional
        ``(H, W)`` int label image of hard constraints, 0 = none.  Hard pixels also train
        their label's colour model.
    lam : float, default DEFAULT_LAMBDA
        Smoothness weight, finite and >= 0.
    beta : float, optional
        Edge contrast parameter; estimated from the image when None.
    colour_model : {"gmm", "histogram"}, default "gmm"
        Colour model for the unaries.
    diagonal_distance : bool, default True
        Divide diagonal edge weights by sqrt(2).
    seed : int, default 0
        Random seed for the colour model fits.
    constraints : Constraints, optional
        Area bounds per label and labels that must not touch
        (:class:`solver.mrf.build.constraints.Constraints`); checked before anything is fitted,
        against the image, the strokes, the rectangle and the hard constraints.
    models : sequence of colour models, optional
        K fitted colour models to take instead of fitting them (e.g. those a GrabCut-style
        re-estimation found on a reduced copy of the image, or on another photo: a model is a
        density of colour, whatever the resolution); the seeds are still checked and recorded,
        but a label may have none.
    unlabelled : int, optional
        Without a rectangle, the label whose colour model also takes every pixel no stroke or
        hard pixel labels (:func:`solver.mrf.build.colour.fit_colour_models`); a re-estimation
        (:func:`solver.mrf.reestimate`) then refits every model to the answer.

    Returns
    -------
    MRFProblem
        The problem.

    Raises
    ------
    ValueError
        On any invalid input, with a one-line message naming the problem.
    """
    k = int(k)
    if k < 2 or k > MAX_LABELS:
        raise ValueError(f"k must be between 2 and {MAX_LABELS}, got {k}")
    colours = image_to_float(image)
    shape = colours.shape[:2]
    lam = check_scalar("lambda", lam, upper=MAX_LAMBDA)
    if beta is not None:
        beta = check_scalar("beta", beta)
    strokes_img = label_image("strokes", strokes, shape, k)
    hard_img = label_image("hard", hard, shape, k)
    if rect is not None:
        rect = check_rect(rect, shape, k)
        x, y, w, h = rect
        outside = np.ones(shape, dtype=bool)
        outside[y : y + h, x : x + w] = False
        wrong = outside & (hard_img > 0) & (hard_img != RECT_BACKGROUND)
        if np.any(wrong):
            r, c = (int(v[0]) for v in np.nonzero(wrong))
            raise ValueError(f"a label-{int(hard_img[r, c])} hard constraint lies outside the "
                             f"rectangle (at row {r}, column {c}), where every pixel is label "
                             f"{RECT_BACKGROUND}")
        hard_img = np.where(outside, RECT_BACKGROUND, hard_img).astype(np.int32)
    seeds = seed_map(strokes_img, hard_img, k, rect is not None, required=models is None)
    level = (constraints.validate(k, shape, seeds=seeds, hard=hard_img)
             if constraints else None)

    if models is None:
        models = fit_colour_models(colours, seeds, k, model=colour_model, rect=rect, seed=seed,
                                   unlabelled=unlabelled)
    elif len(models) != k:
        raise ValueError(f"models: expected {k} colour models (one a label), got {len(models)}")
    problem = problem_from_unary(
        colours, unary_costs(colours, models), lam=lam, beta=beta, hard=hard_img,
        diagonal_distance=diagonal_distance, colour_model=colour_model, models=tuple(models),
    )
    return replace_problem(problem, seeds=seeds, constraints=level)
