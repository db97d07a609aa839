"""Constraints a graph cut cannot take: bounds on each label's area, and labels that must not touch.

* **Area** (cardinality): label ``k`` covers between ``lo`` and ``hi`` pixels, given as fractions
  of the image or as pixel counts (:class:`AreaBound`).
* **Apart** (mutual exclusion on neighbours): no two 8-neighbouring pixels carry labels ``a`` and
  ``b``, i.e. ``x_ia + x_jb <= 1`` for every neighbouring pair, both ways. With K = 3, "inner"
  apart from "outside" nests the inner region inside the middle one with a margin of at least
  one pixel.

:class:`Constraints` is what a user gives; :meth:`Constraints.validate` turns it into the
:class:`LevelConstraints` a problem carries (pixel bounds, the apart matrix and, on a coarse
pyramid level, how many image pixels each of its pixels stands for), after checking it with
one-line errors. :func:`report` says of a labelling whether each constraint holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from solver.mrf.build.checks import MAX_LABELS

#: The units an area bound can be given in.
AREA_UNITS = ("fraction", "px")


@dataclass(frozen=True)
class AreaBound:
    """Label ``label`` (1-based) covers between ``lo`` and ``hi`` pixels.

    Attributes
    ----------
    label : int
    lo, hi : float
        Fractions of the image in ``[0, 1]`` (``unit="fraction"``) or pixel counts (``"px"``).
    unit : {"fraction", "px"}
    """

    label: int
    lo: float
    hi: float
    unit: str = "fraction"

    def pixels(self, n: int) -> tuple[int, int]:
        """The bounds in whole pixels of an ``n``-pixel image (rounded inwards)."""
        scale = n if self.unit == "fraction" else 1.0
        eps = 1e-9 * max(1.0, scale)
        return math.ceil(self.lo * scale - eps), math.floor(self.hi * scale + eps)

    def describe(self) -> str:
        """``"1:0.2-0.3"`` or ``"2:5000px-9000px"``, as the command line takes it."""
        if self.unit == "px":
            return f"{self.label}:{self.lo:g}px-{self.hi:g}px"
        return f"{self.label}:{self.lo:g}-{self.hi:g}"


@dataclass(frozen=True)
class LevelConstraints:
    """Constraints in the form the solver takes, for one problem (or pyramid level).

    Attributes
    ----------
    lo, hi : numpy.ndarray
        ``(K,)`` float bounds on each label's area in image pixels (0 and ``n`` where the user
        gave none).
    apart : numpy.ndarray
        ``(K, K)`` symmetric bool: ``apart[a, b]`` when labels ``a + 1`` and ``b + 1`` must not
        touch.
    weights : numpy.ndarray or None
        ``(n_level,)`` image pixels each pixel of this level stands for (None: one each, the
        image itself).
    area_given : numpy.ndarray
        ``(K,)`` bool, the labels with a user bound.
    """

    lo: np.ndarray
    hi: np.ndarray
    apart: np.ndarray
    weights: np.ndarray | None = None
    area_given: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def k(self) -> int:
        return int(self.lo.size)

    @property
    def has_area(self) -> bool:
        """Whether some label's area is bounded."""
        return bool(np.any(self.area_given))

    @property
    def has_apart(self) -> bool:
        """Whether some pair of labels must not touch."""
        return bool(np.any(self.apart))

    def pixel_weights(self, n: int) -> np.ndarray:
        """``(n,)`` float weights of this level's pixels."""
        return np.ones(n) if self.weights is None else np.asarray(self.weights, np.float64)

    def areas(self, labels: np.ndarray) -> np.ndarray:
        """``(K,)`` image-pixel area of each label of a labelling (1-based) of this level."""
        lab = np.asarray(labels).ravel()
        return np.bincount(lab - 1, weights=self.pixel_weights(lab.size), minlength=self.k)

    def coarsened(self, block: np.ndarray, n_coarse: int) -> LevelConstraints:
        """The same constraints on a coarse level whose pixel ``block[i]`` holds pixel ``i``."""
        w = np.bincount(block, weights=self.pixel_weights(block.size), minlength=n_coarse)
        return LevelConstraints(self.lo, self.hi, self.apart, w, self.area_given)


@dataclass(frozen=True)
class Constraints:
    """Area bounds and apart pairs for a segmentation (see the module docstring).

    Attributes
    ----------
    area : tuple of AreaBound
        Several bounds on one label all hold (their intersection).
    apart : tuple of (int, int)
        Pairs of labels (1-based) that must not touch.
    """

    area: tuple[AreaBound, ...] = ()
    apart: tuple[tuple[int, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.area or self.apart)

    def resized(self, ratio: float) -> Constraints:
        """The same constraints on an image ``ratio`` times as many pixels (a reduced copy):
        bounds in pixels scaled, widened outwards to whole pixels; fractions and apart pairs
        as they are.

        Parameters
        ----------
        ratio : float
            Pixels of the other image over this one's, > 0.

        Returns
        -------
        Constraints
        """
        if not ratio > 0:
            raise ValueError(f"the pixel ratio must be > 0, got {ratio}")
        area = tuple(b if b.unit != "px" else
                     AreaBound(b.label, math.floor(b.lo * ratio), math.ceil(b.hi * ratio), "px")
                     for b in self.area)
        return Constraints(area=area, apart=self.apart)

    def validate(self, k: int, shape: tuple[int, int], seeds: np.ndarray | None = None,
                 hard: np.ndarray | None = None) -> LevelConstraints:
        """Check the constraints against the image and the user's drawing; their solver form.

        Parameters
        ----------
        k : int
            Number of labels.
        shape : tuple of int
            Image ``(H, W)``.
        seeds : numpy.ndarray, optional
            ``(H, W)`` pixels the user labelled (strokes and hard constraints, 0 = none): a bound
            they already break, or apart labels they already put side by side, is an error.
        hard : numpy.ndarray, optional
            ``(H, W)`` hard constraints (0 = none): the pixels they fix to other labels bound
            how large a label can grow.

        Returns
        -------
        LevelConstraints

        Raises
        ------
        ValueError
            With a one-line message naming the constraint and what is wrong with it.
        """
        k = int(k)
        if not 2 <= k <= MAX_LABELS:
            raise ValueError(f"k must be between 2 and {MAX_LABELS}, got {k}")
        h, w = (int(s) for s in shape)
        n = h * w
        lo, hi = np.zeros(k), np.full(k, float(n))
        given = np.zeros(k, bool)
        for bound in self.area:
            what = f"area bound {bound.describe()}"
            if bound.unit not in AREA_UNITS:
                raise ValueError(f"{what}: unit must be one of {', '.join(AREA_UNITS)}")
            if not 1 <= int(bound.label) <= k or int(bound.label) != bound.label:
                raise ValueError(f"{what}: label must be 1..{k}")
            if not (math.isfinite(bound.lo) and math.isfinite(bound.hi)):
                raise ValueError(f"{what}: bounds must be finite numbers")
            top = 1.0 if bound.unit == "fraction" else float(n)
            if bound.lo < 0 or bound.hi > top:
                unit = "fractions in [0, 1]" if bound.unit == "fraction" else f"0..{n} pixels"
                raise ValueError(f"{what}: bounds must be {unit}")
            if bound.lo > bound.hi:
                raise ValueError(f"{what}: the lower bound is above the upper one")
            p_lo, p_hi = bound.pixels(n)
            if p_lo > p_hi:
                raise ValueError(f"{what}: no whole number of pixels lies between the bounds "
                                 f"on a {n}-pixel image")
            c = int(bound.label) - 1
            lo[c], hi[c] = max(lo[c], p_lo), min(hi[c], p_hi)
            given[c] = True
            if lo[c] > hi[c]:
                raise ValueError(f"{what}: it contradicts another bound on label {c + 1}")
        apart = np.zeros((k, k), bool)
        if self.apart and k == 2:
            raise ValueError("apart pairs need K >= 3: with two labels, 1 and 2 apart means a "
                             "single label everywhere")
        for pair in self.apart:
            if len(pair) != 2:
                raise ValueError(f"apart pair {pair}: give two labels")
            a, b = (int(v) for v in pair)
            if not (1 <= a <= k and 1 <= b <= k):
                raise ValueError(f"apart pair {a},{b}: labels must be 1..{k}")
            if a == b:
                raise ValueError(f"apart pair {a},{b}: a label cannot be apart from itself")
            apart[a - 1, b - 1] = apart[b - 1, a - 1] = True
        if apart.any() and np.all(apart | np.eye(k, dtype=bool)):
            raise ValueError(f"the apart pairs keep every one of the {k} labels from every "
                             "other, so only one label could appear in the image; drop a pair")
        if lo.sum() > n:
            raise ValueError(f"the area bounds cannot all hold: their lower bounds add up to "
                             f"{int(lo.sum())} pixels, more than the image's {n}")
        if hi.sum() < n:
            raise ValueError(f"the area bounds cannot all hold: their upper bounds add up to "
                             f"{int(hi.sum())} pixels, fewer than the image's {n}")
        level = LevelConstraints(lo, hi, apart, None, given)
        if hard is not None:
            counts = np.bincount(np.asarray(hard).ravel(), minlength=k + 1)[1:k + 1]
            for c in range(k):
                if given[c] and n - (counts.sum() - counts[c]) < lo[c]:
                    raise ValueError(
                        f"area bound on label {c + 1}: hard constraints of other labels leave "
                        f"it at most {int(n - (counts.sum() - counts[c]))} pixels, fewer than "
                        f"its lower bound {int(lo[c])}")
        if seeds is not None:
            _check_seeds(level, np.asarray(seeds).reshape(h, w))
        return level


def _check_seeds(level: LevelConstraints, seeds: np.ndarray) -> None:
    """Errors for a bound the user's own pixels break, or apart labels they put side by side."""
    k = level.k
    counts = np.bincount(seeds.ravel(), minlength=k + 1)[1:k + 1]
    for c in range(k):
        if level.area_given[c] and counts[c] > level.hi[c]:
            raise ValueError(f"area bound on label {c + 1}: its strokes and hard constraints "
                             f"cover {int(counts[c])} pixels, more than its upper bound "
                             f"{int(level.hi[c])}")
    if not level.has_apart:
        return
    for a, b, rows, cols in touching_pairs(seeds, level.apart):
        raise ValueError(f"labels {a} and {b} are apart, but strokes or hard constraints of "
                         f"them touch at row {rows[0]}, column {cols[0]}")
    _check_chains(level.apart, seeds)


def label_distances(apart: np.ndarray) -> np.ndarray:
    """``(K, K)`` fewest neighbour steps between labels when only pairs not ``apart`` may touch
    (0 on the diagonal, ``inf`` between labels no chain joins): a labelling with both ``a`` and
    ``b`` needs at least ``d - 1`` pixels of other labels between any two of their pixels."""
    k = apart.shape[0]
    step = ~apart
    np.fill_diagonal(step, False)
    dist = np.full((k, k), np.inf)
    for a in range(k):  # breadth first from each label (K <= 32)
        dist[a, a] = 0
        frontier, d = [a], 0
        while frontier:
            d += 1
            nxt = [b for f in frontier for b in np.flatnonzero(step[f]) if dist[a, b] == np.inf]
            for b in nxt:
                dist[a, b] = d
            frontier = list(dict.fromkeys(nxt))
    return dist


def _check_chains(apart: np.ndarray, seeds: np.ndarray) -> None:
    """Errors for seeded labels that no labelling can keep apart as asked: two labels no chain
    of labels allowed to touch joins (no labelling of a connected grid holds both), or seeds of
    two labels closer than the shortest such chain leaves room for."""
    from scipy.ndimage import maximum_filter  # noqa: PLC0415

    k = apart.shape[0]
    present = [c for c in range(1, k + 1) if np.any(seeds == c)]
    dist = label_distances(apart)
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            d = dist[a - 1, b - 1]
            if not np.isfinite(d):
                raise ValueError(f"labels {a} and {b} both have strokes or hard constraints, but "
                                 "the apart pairs leave no chain of labels allowed to touch "
                                 "from one to the other, so no labelling keeps every pair "
                                 "apart; drop a pair or a stroke")
            if d >= 3:  # (d = 2: touching seeds, refused above)
                near = maximum_filter(seeds == a, size=2 * int(d) - 1) & (seeds == b)
                if near.any():
                    r, c = (int(v[0]) for v in np.nonzero(near))
                    raise ValueError(f"labels {a} and {b} need {int(d) - 1} pixels of other "
                                     f"labels between them (the apart pairs), but their strokes "
                                     f"or hard constraints come closer, at row {r}, column {c}")


#: The four directions of an 8-neighbour grid that list each neighbouring pair once.
_FORWARD = ((0, 1), (1, 0), (1, 1), (1, -1))


def touching_pairs(labels: np.ndarray, apart: np.ndarray):
    """Yield ``(a, b, rows, cols)`` for each apart pair of labels (1-based, ``a < b``) that
    touch in a 2-D labelling (0 = no label), with the pixels where ``a`` touches ``b``."""
    lab = np.asarray(labels)
    h, w = lab.shape
    k = apart.shape[0]
    for a in range(1, k + 1):
        for b in range(a + 1, k + 1):
            if not apart[a - 1, b - 1]:
                continue
            hits = np.zeros((h, w), bool)
            for dr, dc in _FORWARD:
                src = lab[: h - dr, max(0, -dc): w - max(0, dc)]
                dst = lab[dr:, max(0, dc): w + min(0, dc)]
                pair = ((src == a) & (dst == b)) | ((src == b) & (dst == a))
                hits[: h - dr, max(0, -dc): w - max(0, dc)] |= pair
            if hits.any():
                rows, cols = np.nonzero(hits)
                yield a, b, rows, cols


def touching_count(labels: np.ndarray, a: int, b: int) -> int:
    """Number of 8-neighbouring pixel pairs of a 2-D labelling where labels ``a`` and ``b``
    meet."""
    lab = np.asarray(labels)
    h, w = lab.shape
    total = 0
    for dr, dc in _FORWARD:
        src = lab[: h - dr, max(0, -dc): w - max(0, dc)]
        dst = lab[dr:, max(0, dc): w + min(0, dc)]
        total += int(np.count_nonzero(((src == a) & (dst == b)) | ((src == b) & (dst == a))))
    return total


@dataclass(frozen=True)
class ConstraintReport:
    """Whether one constraint holds for a labelling.

    Attributes
    ----------
    kind : {"area", "apart"}
    labels : tuple of int
    lo, hi : float
        The bounds (area: pixels; apart: 0 and 0 touching pairs).
    value : float
        The labelling's area of the label, or its number of touching neighbour pairs.
    satisfied : bool
    """

    kind: str
    labels: tuple[int, ...]
    lo: float
    hi: float
    value: float
    satisfied: bool

    def as_dict(self) -> dict:
        """The report's JSON form."""
        return {"kind": self.kind, "labels": list(self.labels), "lo": self.lo, "hi": self.hi,
                "value": self.value, "satisfied": self.satisfied}


def report(level: LevelConstraints, labels: np.ndarray, shape: tuple[int, int]
           ) -> list[ConstraintReport]:
    """Each constraint of ``level`` on a labelling of the image (``labels`` 1-based)."""
    lab = np.asarray(labels).reshape(shape)
    out = []
    areas = level.areas(lab)
    for c in np.flatnonzero(level.area_given):
        v = float(areas[c])
        out.append(ConstraintReport("area", (int(c) + 1,), float(level.lo[c]),
                                    float(level.hi[c]), v,
                                    bool(level.lo[c] - 1e-9 <= v <= level.hi[c] + 1e-9)))
    k = level.k
    for a in range(k):
        for b in range(a + 1, k):
            if level.apart[a, b]:
                t = touching_count(lab, a + 1, b + 1)
                out.append(ConstraintReport("apart", (a + 1, b + 1), 0.0, 0.0, float(t), t == 0))
    return out
