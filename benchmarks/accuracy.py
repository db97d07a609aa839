"""The cut a person wants: segapp against ground truth, side by side with GrabCut (issue:
"measured against ground truth, and better than GrabCut").

    python benchmarks/accuracy.py [--split tuning|held-out|both] [--methods M,...] [--quick]
                                  [--max-pixels 3e6] [--seed 0] [--out DIR] [--user-methods M,...]
                                  [--user-max-pixels 1e6] [--draw DIR]

The set (:mod:`accuracy_data`): composites with exact masks (objects pasted with a 1-2 px soft
alpha onto bundled photos; ground truth = alpha >= 0.5), 24 a half, K = 2 and K = 3, 0.1 to
3 MP, easy / medium / hard by measured colour overlap, in a tuning and a held-out half fixed by
source name. Inputs per composite, shaped like real use: ``rect`` (the objects' box enlarged by
3-10 % a side), ``rect+strokes`` (the rectangle and 1-3 short strokes), ``strokes`` (2-3 short
strokes a label); K = 3 has ``strokes`` only (GrabCut's rectangle is K = 2).

Methods, each timed over its whole call (model build included), on the same inputs:

- ``segapp``: the app's path, ``run_segmentation(image, strokes, SegmentParams(k=K), rect=...,
  reference=False)`` with the defaults (:data:`solver.mrf.DEFAULT_MODEL`: strokes keep their
  label, GrabCut-style re-estimation rounds), so a change to the model or its defaults shows up
  here; ``segapp-once``: the same with the colour models fitted once
  (:data:`solver.mrf.ONE_SHOT_MODEL`, the model before re-estimation);
- ``mincut``: the same model solved exactly, ``SegmentParams(k=K, solver="mincut")`` (K = 3: its
  yardstick, α-expansion);
- ``grabcut``: OpenCV's ``cv2.grabCut``, 5 iterations, K = 2 (see :func:`grabcut`);
- ``random_walker``: scikit-image's ``random_walker`` on the ``strokes`` inputs (see
  :func:`random_walker`).

Metrics: IoU of the object (K = 3: mean over the labels), boundary F-score with a 2 px tolerance
(:func:`boundary_f`), wall time. The simulated user (:func:`simulate`, the robot user of the NoC
protocol) starts from the rectangle and adds a disk stroke at the centre of the largest error
region after each result, until IoU >= 0.90 or 20 strokes; NoC@85 / NoC@90 per method.

Writes ``DIR/accuracy.json`` (settings, split, cases, every run and every user session, the
summary), ``DIR/accuracy.md`` (tables per half) and ``DIR/accuracy.png`` (the worst inputs for
segapp against GrabCut, side by side). Progress goes to stderr. Tune only on ``--split tuning``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _p in (str(ROOT), str(Path(__file__).resolve().parent)):
    if _p not in sys.path:  # (run as a script from anywhere; accuracy_data sits beside it)
        sys.path.insert(0, _p)

import accuracy_data as data  # noqa: E402

TOLERANCE = 2.0  # boundary F-score tolerance, px
USER_STROKES = 20
USER_STOP = 0.90
USER_MAX_PIXELS = 3e5  # (up to 20 full runs per method and composite: the 1 MP ones take hours)
NOC_LEVELS = (0.85, 0.90)
RW_MAX_PIXELS = 300_000  # random_walker solves on a copy down-scaled to this above it
#: random_walker's beta: the best mean IoU on the tuning half's strokes inputs of 130 (its
#: default: 0.41), 300, 1000, 3000 (0.71) and 10000 (at 0.06 MP, mode "bf").
RW_BETA = 3000
THUMB_SIDE = 360  # the figure's panels (longest side, px)


# -- metrics --------------------------------------------------------------------------------------

def iou(pred: np.ndarray, truth: np.ndarray, k: int) -> float:
    """IoU of label 1 (the object) for K = 2; the mean IoU over labels 1..K otherwise. A label
    absent from both counts 1."""
    labels = (1,) if k == 2 else range(1, k + 1)
    out = []
    for lab in labels:
        p, t = pred == lab, truth == lab
        union = np.count_nonzero(p | t)
        out.append(1.0 if union == 0 else np.count_nonzero(p & t) / union)
    return float(np.mean(out))


def boundary(mask: np.ndarray) -> np.ndarray:
    """The inner boundary of a binary mask: its pixels with a 4-neighbour outside it (the image
    border is not a boundary)."""
    m = np.asarray(mask, bool)
    edge = np.zeros_like(m)
    edge[1:] |= m[1:] & ~m[:-1]
    edge[:-1] |= m[:-1] & ~m[1:]
    edge[:, 1:] |= m[:, 1:] & ~m[:, :-1]
    edge[:, :-1] |= m[:, :-1] & ~m[:, 1:]
    return edge


def _distance_to(points: np.ndarray) -> np.ndarray:
    """Euclidean distance of every pixel to the nearest True pixel of ``points``."""
    return cv2.distanceTransform((~points).astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)


def boundary_pr(pred: np.ndarray, truth: np.ndarray,
                tol: float = TOLERANCE) -> tuple[float, float, float]:
    """``(F, precision, recall)`` of the predicted mask's boundary against the true one's: the
    fraction of predicted boundary pixels within ``tol`` px of a true boundary pixel, the
    fraction of true ones within ``tol`` px of a predicted one, and their harmonic mean. Both
    boundaries empty: 1; one empty: 0."""
    bp, bt = boundary(pred), boundary(truth)
    n_p, n_t = int(bp.sum()), int(bt.sum())
    if n_p == 0 and n_t == 0:
        return 1.0, 1.0, 1.0
    if n_p == 0 or n_t == 0:
        return 0.0, 0.0, 0.0
    precision = float(np.count_nonzero(_distance_to(bt)[bp] <= tol)) / n_p
    recall = float(np.count_nonzero(_distance_to(bp)[bt] <= tol)) / n_t
    f = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return f, precision, recall


def boundary_f(pred: np.ndarray, truth: np.ndarray, k: int, tol: float = TOLERANCE) -> float:
    """Boundary F-score of the object (K = 2); the mean over labels 1..K otherwise."""
    labels = (1,) if k == 2 else range(1, k + 1)
    return float(np.mean([boundary_pr(pred == lab, truth == lab, tol)[0] for lab in labels]))


# -- methods --------------------------------------------------------------------------------------

#: λ of segapp's model in every segapp method (None: the app's default); ``--lam`` sets it
LAM: float | None = None
#: re-estimation rounds of segapp and min-cut (None: the model's own for the input); ``--rounds``
ROUNDS: int | None = None
#: changes to the model of segapp and min-cut (:class:`solver.mrf.ModelOptions` fields);
#: ``--model-option NAME=VALUE``
MODEL_CHANGES: dict = {}


def _model():
    """The model of segapp and min-cut: the default with :data:`MODEL_CHANGES`."""
    from dataclasses import replace  # noqa: PLC0415

    from solver.mrf import DEFAULT_MODEL  # noqa: PLC0415
    return replace(DEFAULT_MODEL, **MODEL_CHANGES)


def _model_option(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` of a :class:`solver.mrf.ModelOptions` field, the value in its type."""
    from dataclasses import fields  # noqa: PLC0415

    from solver.mrf import DEFAULT_MODEL  # noqa: PLC0415
    name, _, value = text.partition("=")
    known = {f.name: type(getattr(DEFAULT_MODEL, f.name)) for f in fields(DEFAULT_MODEL)}
    if name not in known or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of "
                                         f"{', '.join(sorted(known))}, got {text!r}")
    kind = known[name]
    if kind is bool:
        return name, value.lower() in ("1", "true", "yes", "on")
    return name, None if value == "None" else (int(value) if kind is int else kind(value))

def segapp(image: np.ndarray, inp: data.Input, k: int) -> np.ndarray:
    """segapp as the app runs it: ``run_segmentation`` with the default ``SegmentParams(k=K)``,
    the strokes as drawn (they keep their label and train the colour models) and the
    rectangle."""
    from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415

    return run_segmentation(image, inp.strokes,
                            SegmentParams(k=k, lam=LAM, rounds=ROUNDS, model=_model()),
                            rect=inp.rect, reference=False).labels


def segapp_once(image: np.ndarray, inp: data.Input, k: int) -> np.ndarray:
    """segapp with the colour models fitted once, each to its own strokes (and the rectangle's
    inside and outside), the strokes only training them: the model before re-estimation."""
    from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415
    from solver.mrf import ONE_SHOT_MODEL  # noqa: PLC0415

    return run_segmentation(image, inp.strokes, SegmentParams(k=k, lam=LAM, model=ONE_SHOT_MODEL),
                            rect=inp.rect, reference=False).labels


def segapp_hard(image: np.ndarray, inp: data.Input, k: int) -> np.ndarray:
    """segapp with the strokes drawn with the app's hard-constraint tool instead (``hard=``:
    the pixels are fixed to their label, and train its colour model)."""
    from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415

    hard = None if inp.strokes is None else inp.strokes.astype(np.int32)
    return run_segmentation(image, None, SegmentParams(k=k, lam=LAM), rect=inp.rect, hard=hard,
                            reference=False).labels


def mincut(image: np.ndarray, inp: data.Input, k: int) -> np.ndarray:
    """segapp's model solved exactly by min-cut (K = 3: by its yardstick, α-expansion)."""
    from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415

    params = SegmentParams(k=k, lam=LAM, rounds=ROUNDS, model=_model(),
                           solver="mincut" if k == 2 else "expansion")
    return run_segmentation(image, inp.strokes, params, rect=inp.rect, reference=False).labels


GRABCUT_ITERS = 5


def _grabcut(image: np.ndarray, mask: np.ndarray, rect: data.Box | None, models: tuple,
             mode: int) -> None:
    cv2.setRNGSeed(0)  # (its k-means start: deterministic)
    cv2.grabCut(image, mask, rect, models[0], models[1], GRABCUT_ITERS, mode)


def _hints(mask: np.ndarray, strokes: np.ndarray | None) -> None:
    if strokes is not None:
        mask[strokes == 1] = cv2.GC_FGD
        mask[strokes == 2] = cv2.GC_BGD


def _grabcut_labels(mask: np.ndarray) -> np.ndarray:
    return np.where((mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD), 1, 2).astype(np.int32)


def grabcut(image: np.ndarray, inp: data.Input, k: int) -> np.ndarray:
    """OpenCV's GrabCut as its documentation uses it, 5 iterations a call. ``rect``:
    GC_INIT_WITH_RECT. ``rect+strokes``: GC_INIT_WITH_RECT, then the strokes written into its
    mask as GC_FGD / GC_BGD and a second call GC_INIT_WITH_MASK (the tutorial's order; both calls
    timed). ``strokes``: the mask GC_PR_BGD everywhere with the strokes as GC_FGD / GC_BGD, one
    call GC_INIT_WITH_MASK. K = 2 only."""
    img = np.ascontiguousarray(image[:, :, :3] if image.ndim == 3 else
                               np.repeat(image[:, :, None], 3, axis=2))
    models = (np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64))
    mask = np.zeros(img.shape[:2], np.uint8)
    if inp.rect is not None:
        _grabcut(img, mask, tuple(int(v) for v in inp.rect), models, cv2.GC_INIT_WITH_RECT)
        if inp.strokes is not None and inp.strokes.any():
            _hints(mask, inp.strokes)
            _grabcut(img, mask, None, models, cv2.GC_INIT_WITH_MASK)
    else:
        mask[:] = cv2.GC_PR_BGD
        _hints(mask, inp.strokes)
        _grabcut(img, mask, None, models, cv2.GC_INIT_WITH_MASK)
    return _grabcut_labels(mask)


def _downscale_seeds(strokes: np.ndarray, shape: tuple[int, int], k: int) -> np.ndarray:
    """Strokes on a smaller grid: each small pixel takes the label covering most of it, where a
    label covers any of it (thin strokes survive)."""
    cover = np.stack([cv2.resize((strokes == lab).astype(np.float32), shape[::-1],
                                 interpolation=cv2.INTER_AREA) for lab in range(1, k + 1)])
    return np.where(cover.max(0) > 0.1, cover.argmax(0) + 1, 0).astype(np.int32)


def random_walker(image: np.ndarray, inp: data.Input, k: int) -> np.ndarray:
    """scikit-image's ``random_walker`` with the strokes as seeds: the RGB image in [0, 1],
    beta :data:`RW_BETA`, mode ``bf`` (a direct sparse solve: exact, and faster than ``cg_j``
    here, which stops with probabilities above 1). Above :data:`RW_MAX_PIXELS` it solves on a
    copy down-scaled to that size (30 s at 1 MP here) and its probabilities are scaled back up
    (bilinear) before the argmax; the seeds keep their labels at full size."""
    from skimage.segmentation import random_walker as rw  # noqa: PLC0415

    h, w = image.shape[:2]
    img = image.astype(np.float64) / 255.0
    seeds = inp.strokes.astype(np.int32)
    s = min(1.0, math.sqrt(RW_MAX_PIXELS / (h * w)))
    if s < 1.0:
        small = (max(8, round(h * s)), max(8, round(w * s)))
        img = cv2.resize(img, small[::-1], interpolation=cv2.INTER_AREA)
        seeds = _downscale_seeds(inp.strokes, small, k)
    prob = rw(img, seeds, beta=RW_BETA, mode="bf", channel_axis=-1, return_full_prob=True)
    if s < 1.0:
        prob = np.stack([cv2.resize(p.astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)
                         for p in prob])
    labels = (np.argmax(prob, axis=0) + 1).astype(np.int32)
    labels[inp.strokes > 0] = inp.strokes[inp.strokes > 0]
    return labels


@dataclass(frozen=True)
class Method:
    """A method: its function ``(image, input, K) -> labels 1..K`` and which inputs it takes."""

    name: str
    fn: Callable[[np.ndarray, data.Input, int], np.ndarray]
    applies: Callable[[data.Input, int], bool]


METHODS = {
    "segapp": Method("segapp", segapp, lambda inp, k: True),
    "segapp-once": Method("segapp-once", segapp_once, lambda inp, k: True),
    "mincut": Method("mincut", mincut, lambda inp, k: True),
    "grabcut": Method("grabcut", grabcut, lambda inp, k: k == 2),
    "random_walker": Method("random_walker", random_walker,
                            lambda inp, k: inp.kind == "strokes"),
    "segapp-hard": Method("segapp-hard", segapp_hard, lambda inp, k: inp.strokes is not None),
}
DEFAULT_METHODS = ("segapp", "segapp-once", "mincut", "grabcut", "random_walker")


# -- the simulated user ---------------------------------------------------------------------------

def next_click(pred_fg: np.ndarray, true_fg: np.ndarray) -> tuple[int, int, int] | None:
    """The robot user's next click ``(x, y, label)``: in the largest 8-connected error region
    (false negatives or false positives; a tie goes to the false negatives), at its pixel
    farthest from the region's boundary (the image border counts as boundary; a tie goes to the
    first in row order), labelled as the truth says there (1 object, 2 background). None: no
    error left."""
    best = None
    for wrong, label in ((true_fg & ~pred_fg, 1), (pred_fg & ~true_fg, 2)):
        if not wrong.any():
            continue
        n, comp, stats, _ = cv2.connectedComponentsWithStats(wrong.astype(np.uint8),
                                                             connectivity=8)
        biggest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
        area = int(stats[biggest, cv2.CC_STAT_AREA])
        if best is None or area > best[0]:
            best = (area, comp == biggest, label)
    if best is None:
        return None
    _, region, label = best
    dist = cv2.distanceTransform(np.pad(region.astype(np.uint8), 1), cv2.DIST_L2,
                                 cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
    y, x = np.unravel_index(int(np.argmax(dist)), dist.shape)
    return int(x), int(y), label


def click_radius(shape: tuple[int, int]) -> int:
    """The user's disk radius: 4 px up to 1 MP, growing with the image diagonal above."""
    return int(round(4 * data.stroke_scale(shape)))


def disk(shape: tuple[int, int], x: int, y: int, radius: int) -> np.ndarray:
    out = np.zeros(shape, np.uint8)
    cv2.circle(out, (x, y), radius, 1, -1)
    return out > 0


class SegappUser:
    """segapp driven by the user: the rectangle, then every correction drawn with the app's
    stroke tool (``hard=False``: the stroke keeps its label and trains the colour models) or
    its hard-constraint tool (``hard=True``: the pixels are fixed), and the run repeated with
    all of them as the app does: a correction (``warm``, the app's default) refits the colour
    models to the last answer with the strokes and solves from it; ``warm=False`` re-runs
    from the input alone, re-estimation rounds included."""

    def __init__(self, image: np.ndarray, rect: data.Box, k: int = 2, solver: str = "admm",
                 hard: bool = False, warm: bool = True):
        self.image, self.rect, self.k, self.solver, self.hard = image, rect, k, solver, hard
        self.strokes = np.zeros(image.shape[:2], np.uint8)
        self.warm, self.last = warm, None

    def _run(self) -> np.ndarray:
        from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415

        params = SegmentParams(k=self.k, lam=LAM, solver=self.solver, model=_model())
        drawn = self.strokes.astype(np.int32) if self.strokes.any() else None
        strokes, hard = (None, drawn) if self.hard else (drawn, None)
        self.last = run_segmentation(
            self.image, strokes, params, rect=self.rect, hard=hard, reference=False,
            previous=self.last if self.warm else None).labels
        return self.last

    def start(self) -> np.ndarray:
        self.last = None
        return self._run()

    def unchanged_by(self, where: np.ndarray, label: int) -> bool:
        """Whether this stroke adds nothing (drawn over itself): the run's input, and so its
        answer, would be the last one again (the run is a function of its input alone)."""
        return bool(np.all(self.strokes[where] == label))

    def correct(self, where: np.ndarray, label: int) -> np.ndarray:
        self.strokes[where] = label
        return self._run()


class GrabCutUser:
    """GrabCut driven by the user the standard way: GC_INIT_WITH_RECT, then for each correction
    its own last mask with the new stroke as GC_FGD / GC_BGD and GC_INIT_WITH_MASK, its
    bgd/fgd model arrays carried from call to call (OpenCV refits them from the mask in this
    mode, so the mask carries its state), 5 iterations a call."""

    def __init__(self, image: np.ndarray, rect: data.Box, k: int = 2):
        self.image = np.ascontiguousarray(image)
        self.rect = tuple(int(v) for v in rect)
        self.models = (np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64))
        self.mask = np.zeros(image.shape[:2], np.uint8)

    def start(self) -> np.ndarray:
        _grabcut(self.image, self.mask, self.rect, self.models, cv2.GC_INIT_WITH_RECT)
        return _grabcut_labels(self.mask)

    def correct(self, where: np.ndarray, label: int) -> np.ndarray:
        self.mask[where] = cv2.GC_FGD if label == 1 else cv2.GC_BGD
        _grabcut(self.image, self.mask, None, self.models, cv2.GC_INIT_WITH_MASK)
        return _grabcut_labels(self.mask)


USERS: dict[str, Callable] = {
    "segapp": SegappUser,
    "segapp-hard": lambda image, rect, k=2: SegappUser(image, rect, k, hard=True),
    "segapp-cold": lambda image, rect, k=2: SegappUser(image, rect, k, warm=False),
    "mincut": lambda image, rect, k=2: SegappUser(image, rect, k, solver="mincut"),
    "grabcut": GrabCutUser,
}
DEFAULT_USERS = ("segapp", "grabcut")


def noc(ious: list[float], level: float, cap: int = USER_STROKES) -> int:
    """Strokes needed to first reach IoU >= ``level`` (``ious[0]`` is the rectangle's result,
    ``ious[i]`` that after ``i`` strokes); ``cap`` when never reached."""
    for i, v in enumerate(ious):
        if v >= level:
            return i
    return cap


def simulate(session, truth: np.ndarray, max_strokes: int = USER_STROKES,
             stop: float = USER_STOP) -> dict:
    """Run the robot user on a session (``start()``, ``correct(where, label)``, each returning
    labels): after each result, a disk of :func:`click_radius` at :func:`next_click`, clipped to
    the pixels the truth gives that label (a careful person), until IoU >= ``stop`` or
    ``max_strokes`` strokes. Returns the IoU after each step, each call's time and the clicks.

    A session whose answer depends on its input alone (``unchanged_by``: segapp, which re-runs
    from scratch) and whose next stroke adds no pixel has stalled: its answer, hence the next
    click, would repeat for every stroke left, so the session ends there with ``stalled`` set
    to the stroke count (its NoC is the cap unless reached); GrabCut carries its own state, so
    it always runs."""
    true_fg = truth == 1
    radius = click_radius(truth.shape)
    t0 = time.perf_counter()
    labels = session.start()
    times = [time.perf_counter() - t0]
    ious = [iou(labels, truth, 2)]
    clicks = []
    stalled = None
    while ious[-1] < stop and len(clicks) < max_strokes:
        click = next_click(labels == 1, true_fg)
        if click is None:
            break
        x, y, label = click
        where = disk(truth.shape, x, y, radius) & (true_fg if label == 1 else ~true_fg)
        if hasattr(session, "unchanged_by") and session.unchanged_by(where, label):
            stalled = len(clicks)
            break
        clicks.append([x, y, label])
        t0 = time.perf_counter()
        labels = session.correct(where, label)
        times.append(time.perf_counter() - t0)
        ious.append(iou(labels, truth, 2))
    return {"ious": ious, "times": times, "clicks": clicks, "radius": radius, "stalled": stalled,
            "final_bf": boundary_f(labels, truth, 2),
            **{f"noc{round(100 * lv)}": noc(ious, lv, max_strokes) for lv in NOC_LEVELS}}


# -- the run --------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """The records of a run, and small pictures for the figure (not written to JSON)."""

    cases: list[dict] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)
    user: list[dict] = field(default_factory=list)
    thumbs: dict = field(default_factory=dict)


def _thumb_shape(shape: tuple[int, int]) -> tuple[int, int]:
    s = min(1.0, THUMB_SIDE / max(shape))
    return max(1, round(shape[0] * s)), max(1, round(shape[1] * s))


def _small_labels(labels: np.ndarray) -> np.ndarray:
    h, w = _thumb_shape(labels.shape)
    return cv2.resize(labels.astype(np.uint8), (w, h), interpolation=cv2.INTER_NEAREST)


def _small_input(image: np.ndarray, inp: data.Input) -> np.ndarray:
    """The photo with the input drawn on it, at thumbnail size: the rectangle in yellow, the
    strokes in red (object), blue (background or second object), green (K = 3 background)."""
    h, w = _thumb_shape(image.shape[:2])
    out = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA).copy()
    s = w / image.shape[1]
    if inp.rect is not None:
        x, y, rw, rh = (round(v * s) for v in inp.rect)
        cv2.rectangle(out, (x, y), (x + rw - 1, y + rh - 1), (255, 230, 0), 2)
    if inp.strokes is not None:
        colours = {1: (255, 40, 40), 2: (40, 120, 255), 3: (40, 220, 40)}
        for lab, col in colours.items():
            cover = cv2.resize((inp.strokes == lab).astype(np.float32), (w, h),
                               interpolation=cv2.INTER_AREA)
            out[cover > 0.05] = col
    return out


def warm_up(methods: list[str]) -> None:
    """Compile and load every method's kernels (numba's cache) before anything is timed: the
    solver's own warm-up, then each method on a tiny K = 2 and K = 3 case, and segapp once on a
    case large enough for its coarse-to-fine path."""
    from solver.mrf import warm_up as solver_warm_up  # noqa: PLC0415

    solver_warm_up(3)
    quick = data.cases("tuning", quick=True)
    for case in quick[:3:2]:  # (a K = 2 and a K = 3 case)
        comp = data.render(data.recipe_for(case), 4000)
        for inp in data.make_inputs(case, comp, 0):
            for name in methods:
                if METHODS[name].applies(inp, comp.k):
                    METHODS[name].fn(comp.image, inp, comp.k)
    comp = data.render(data.recipe_for(quick[0]), 60_000)
    inp = data.make_inputs(quick[0], comp, 0)[0]
    segapp(comp.image, inp, 2)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_case(case: data.Case, methods: list[str], seed: int, user_methods: list[str],
             user_max_pixels: float, out: Outcome, user_strokes: int = USER_STROKES) -> None:
    """One composite: every input with every method that takes it, then the simulated user."""
    comp = data.composite(case)
    recipe = data.recipe_for(case)
    inputs = data.make_inputs(case, comp, seed)
    h, w = comp.truth.shape
    rec = {"case": case.name, "split": case.split, "kind": case.kind, "k": case.k,
           "pixels": comp.pixels, "height": h, "width": w, "target": case.target,
           "tier": data.tier_of(comp.overlap), "overlap": round(comp.overlap, 4),
           "overlap_near": round(comp.overlap_near, 4), **data.describe(recipe),
           "object_fraction": round(float(np.mean(comp.truth < comp.k)), 4),
           "inputs": {inp.kind: {"rect": list(inp.rect) if inp.rect else None,
                                 "stroke_pixels": int(np.count_nonzero(inp.strokes))
                                 if inp.strokes is not None else 0} for inp in inputs}}
    out.cases.append(rec)
    out.thumbs[(case.name, "truth")] = _small_labels(comp.truth)
    for inp in inputs:
        out.thumbs[(case.name, inp.kind, "input")] = _small_input(comp.image, inp)
        line = []
        for name in methods:
            method = METHODS[name]
            if not method.applies(inp, comp.k):
                continue
            t0 = time.perf_counter()
            try:
                labels = method.fn(comp.image, inp, comp.k)
                error = None
            except Exception as exc:  # (a baseline that fails on a case is a result too)
                labels, error = np.full(comp.truth.shape, comp.k, np.int32), \
                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            elapsed = time.perf_counter() - t0
            r = {"case": case.name, "split": case.split, "input": inp.kind, "method": name,
                 "k": comp.k, "pixels": comp.pixels, "tier": rec["tier"],
                 "iou": round(iou(labels, comp.truth, comp.k), 5),
                 "bf": round(boundary_f(labels, comp.truth, comp.k), 5),
                 "time_s": round(elapsed, 4)}
            if error:
                r["error"] = error
            out.runs.append(r)
            out.thumbs[(case.name, inp.kind, name)] = _small_labels(labels)
            line.append(f"{name} {r['iou']:.3f}/{r['bf']:.3f} {elapsed:.1f}s")
        _log(f"  {case.name} {inp.kind}: " + ", ".join(line))
    if case.k != 2 or case.pixels > user_max_pixels * 1.0001:
        return
    rect = next(inp.rect for inp in inputs if inp.kind == "rect")
    for name in user_methods:
        session = USERS[name](comp.image, rect, 2)
        try:
            res = simulate(session, comp.truth, max_strokes=user_strokes)
        except Exception as exc:  # (recorded; the run goes on)
            out.user.append({"case": case.name, "split": case.split, "method": name,
                             "error": f"{type(exc).__name__}: {exc}"})
            _log(f"  {case.name} user {name}: failed ({type(exc).__name__}: {exc})")
            continue
        out.user.append({"case": case.name, "split": case.split, "method": name,
                         "pixels": comp.pixels, "tier": rec["tier"],
                         "ious": [round(v, 5) for v in res["ious"]],
                         "times": [round(v, 4) for v in res["times"]],
                         "clicks": res["clicks"], "radius": res["radius"],
                         "stalled": res["stalled"],
                         "noc85": res["noc85"], "noc90": res["noc90"],
                         "final_iou": round(res["ious"][-1], 5),
                         "final_bf": round(res["final_bf"], 5)})
        _log(f"  {case.name} user {name}: NoC@85 {res['noc85']}, NoC@90 {res['noc90']}, "
             f"IoU {res['ious'][0]:.3f} -> {res['ious'][-1]:.3f} in {len(res['clicks'])} "
             f"strokes{' (stalled)' if res['stalled'] is not None else ''}, "
             f"{sum(res['times']):.1f}s")


def run(cases: list[data.Case], methods: list[str], *, seed: int = 0,
        user_methods: list[str] | None = None, user_max_pixels: float = USER_MAX_PIXELS,
        user_strokes: int = USER_STROKES,
        after: Callable[[Outcome], None] | None = None) -> Outcome:
    """The benchmark's core: every case with every method (and the simulated user);
    ``after(outcome)`` is called after each case (the script saves what it has)."""
    out = Outcome()
    for i, case in enumerate(cases, 1):
        t0 = time.perf_counter()
        _log(f"[{i}/{len(cases)}] {case.name} ({case.split}, {case.kind}, K={case.k}, "
             f"{case.pixels / 1e6:.2f} MP, target {case.target})")
        run_case(case, methods, seed, user_methods or [], user_max_pixels, out, user_strokes)
        _log(f"  ({time.perf_counter() - t0:.1f} s)")
        if after is not None:
            after(out)
    return out


# -- report ---------------------------------------------------------------------------------------

def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def summarise(out: Outcome, methods: list[str]) -> dict:
    """Means per half, input kind and K (and over all K = 2 inputs), per method; the user's
    NoC per half and method; mean IoU per half, tier and method (K = 2)."""
    summ: dict = {"runs": [], "user": [], "tiers": []}
    groups = [(inp, k) for inp in data.INPUT_KINDS for k in (2, 3)] + [("all", 2)]
    for half in data.HALVES:
        for inp, k in groups:
            for m in methods:
                rs = [r for r in out.runs if r["split"] == half and r["method"] == m
                      and r["k"] == k and (inp == "all" or r["input"] == inp)]
                if rs:
                    summ["runs"].append({
                        "split": half, "input": inp, "k": k, "method": m, "n": len(rs),
                        "iou": _mean([r["iou"] for r in rs]), "bf": _mean([r["bf"] for r in rs]),
                        "time_s": _mean([r["time_s"] for r in rs]),
                        "median_time_s": float(np.median([r["time_s"] for r in rs]))})
        for m in dict.fromkeys(u["method"] for u in out.user):
            us = [u for u in out.user if u["split"] == half and u["method"] == m
                  and "error" not in u]
            if us:
                corr = [t for u in us for t in u["times"][1:]]
                summ["user"].append({
                    "split": half, "method": m, "n": len(us),
                    "noc85": _mean([u["noc85"] for u in us]),
                    "noc90": _mean([u["noc90"] for u in us]),
                    "reached90": sum(u["final_iou"] >= USER_STOP for u in us),
                    "start_iou": _mean([u["ious"][0] for u in us]),
                    "final_iou": _mean([u["final_iou"] for u in us]),
                    "correction_s": _mean(corr), "strokes": sum(len(u["clicks"]) for u in us),
                    "stalled": sum(u.get("stalled") is not None for u in us)})
        for tier in data.TIERS:
            for m in methods:
                rs = [r for r in out.runs if r["split"] == half and r["method"] == m
                      and r["k"] == 2 and r["tier"] == tier]
                if rs:
                    summ["tiers"].append({"split": half, "tier": tier, "method": m,
                                          "n": len(rs), "iou": _mean([r["iou"] for r in rs]),
                                          "bf": _mean([r["bf"] for r in rs])})
    return summ


def worst_against(out: Outcome, a: str = "segapp", b: str = "grabcut",
                  count: int = 6) -> list[dict]:
    """The inputs where ``a`` falls furthest below ``b`` in IoU (then, to fill ``count``, the
    lowest of ``a``'s IoUs), as ``{case, input, split, a, b, deficit}``."""
    by = {(r["case"], r["input"], r["method"]): r for r in out.runs}
    pairs = []
    for (case, inp, m), r in by.items():
        if m == a and (case, inp, b) in by:
            other = by[(case, inp, b)]
            pairs.append({"case": case, "input": inp, "split": r["split"], a: r["iou"],
                          b: other["iou"], "deficit": other["iou"] - r["iou"]})
    pairs.sort(key=lambda p: (-p["deficit"], p[a]))
    picked = [p for p in pairs if p["deficit"] > 0][:count]
    rest = sorted((p for p in pairs if p not in picked), key=lambda p: p[a])
    return picked + rest[:count - len(picked)]


def _fmt(v: float | None, spec: str = ".3f") -> str:
    return "—" if v is None else format(v, spec)


def markdown(out: Outcome, summ: dict, settings: dict, methods: list[str]) -> str:
    """The Markdown report."""
    L = ["# Accuracy against ground truth: segapp, min-cut, GrabCut, random walker\n",
         *([] if settings.get("complete", True) else
           ["**Incomplete: the run is still going (or stopped); the tables hold the composites "
            "done so far.**\n"]),
         f"`{('python benchmarks/accuracy.py ' + settings['argv']).strip()}` — "
         f"{settings['date']}, "
         f"{len(out.cases)} composites, {len(out.runs)} runs, {len(out.user)} simulated-user "
         f"sessions, {settings['wall_s']:.0f} s on {settings['machine']}; product: commit "
         f"{(settings['product']['commit'] or '?')[:10]}, sources "
         f"{settings['product']['source_sha256']}.\n",
         "IoU: of the object (K = 3: mean over the three labels); BF: boundary F-score, 2 px "
         "tolerance; s: wall time of the method's whole call (model build included), mean. "
         "Cells: IoU / BF / s. K = 3 `mincut` is α-expansion (its yardstick); GrabCut is K = 2 "
         "only; the random walker (beta "
         f"{RW_BETA}, chosen on the tuning half) runs on the `strokes` inputs (down-scaled to "
         f"{RW_MAX_PIXELS / 1e6:g} MP above it). `segapp` is the app's default model: strokes "
         "keep their label and train the colour models, which GrabCut-style rounds re-estimate "
         "(as GrabCut takes its hints); `segapp-once` fits them once, the strokes only "
         "training (the model before re-estimation); `segapp-hard` gets the strokes as the "
         "hard-constraint tool draws them.\n",
         f"Held-out sources: {', '.join(settings['split']['held-out'])}. Tuning sources: "
         f"{', '.join(settings['split']['tuning'])}. Blobs are in both. Tune on the tuning "
         "half only.\n"]
    L.append("## Dataset\n")
    L.append("| half | composites | K = 2 | K = 3 | 0.1 / 0.3 / 1 / 3 MP | easy / medium / hard "
             "| inputs (runs of segapp) |")
    L.append("|---|---|---|---|---|---|---|")
    for half in data.HALVES:
        cs = [c for c in out.cases if c["split"] == half]
        if not cs:
            continue
        sizes = [sum(abs(c["pixels"] - mp * 1e6) < 0.2 * mp * 1e6 for c in cs)
                 for mp in (0.1, 0.3, 1, 3)]
        tiers = [sum(c["tier"] == t for c in cs) for t in data.TIERS]
        n_in = sum(len(c["inputs"]) for c in cs)
        L.append(f"| {half} | {len(cs)} | {sum(c['k'] == 2 for c in cs)} | "
                 f"{sum(c['k'] == 3 for c in cs)} | {' / '.join(map(str, sizes))} | "
                 f"{' / '.join(map(str, tiers))} | {n_in} |")
    L.append("\nTier: the measured colour overlap (Bhattacharyya coefficient of the labels' "
             f"RGB histograms, the largest pair), < {data.TIER_EDGES[0]} easy, < "
             f"{data.TIER_EDGES[1]} medium, else hard.\n")
    L.append("## Summary\n")
    L.append("`all`: every K = 2 input the method takes (the random walker: `strokes` only, so "
             "compare it on the `strokes` rows).\n")
    L.append("| half | input | K | n | " + " | ".join(methods) + " |")
    L.append("|---|---|---|---|" + "---|" * len(methods))
    rows = {}
    for s in summ["runs"]:
        rows.setdefault((s["split"], s["input"], s["k"]), {})[s["method"]] = s
    for (half, inp, k), cells in rows.items():
        n = max(c["n"] for c in cells.values())
        L.append(f"| {half} | {inp} | {k} | {n} | " + " | ".join(
            f"{_fmt(cells[m]['iou'])} / {_fmt(cells[m]['bf'])} / {_fmt(cells[m]['time_s'], '.2f')}"
            if m in cells else "—" for m in methods) + " |")
    if summ["user"]:
        L.append("\n## Simulated user (from the rectangle, K = 2)\n")
        L.append(f"Robot user: after each result, a disk stroke (radius 4 px up to 1 MP, growing "
                 f"with the diagonal) at the point of the largest error region farthest from its "
                 f"boundary, labelled by the truth; all strokes so far re-run; until IoU ≥ "
                 f"{USER_STOP} or {settings['user_strokes']} strokes. NoC@x: strokes to first "
                 f"reach IoU ≥ x (0: the rectangle alone does; {settings['user_strokes']}: "
                 f"never). Composites up to {settings['user_max_pixels'] / 1e6:g} MP.\n")
        L.append("A segapp session stalls when its next stroke would add no pixel (drawn over "
                 "itself): it re-runs from its input alone, so nothing would change again; it "
                 "counts as never reaching the level.\n")
        L.append("| half | method | cases | NoC@85 | NoC@90 | reached 0.90 | stalled | "
                 "IoU at start | IoU at end | s per correction | strokes |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for u in summ["user"]:
            L.append(f"| {u['split']} | {u['method']} | {u['n']} | {_fmt(u['noc85'], '.2f')} | "
                     f"{_fmt(u['noc90'], '.2f')} | {u['reached90']}/{u['n']} | {u['stalled']} | "
                     f"{_fmt(u['start_iou'])} | {_fmt(u['final_iou'])} | "
                     f"{_fmt(u['correction_s'], '.2f')} | {u['strokes']} |")
    if summ["tiers"]:
        L.append("\n## By colour overlap (K = 2, all inputs): IoU / BF\n")
        L.append("| half | tier | n | " + " | ".join(methods) + " |")
        L.append("|---|---|---|" + "---|" * len(methods))
        rows = {}
        for s in summ["tiers"]:
            rows.setdefault((s["split"], s["tier"]), {})[s["method"]] = s
        for (half, tier), cells in rows.items():
            n = max(c["n"] for c in cells.values())
            L.append(f"| {half} | {tier} | {n} | " + " | ".join(
                f"{_fmt(cells[m]['iou'])} / {_fmt(cells[m]['bf'])}" if m in cells else "—"
                for m in methods) + " |")
    worst = worst_against(out)
    if worst:
        L.append("\n## Worst inputs for segapp against GrabCut (IoU)\n")
        L.append("| case | half | input | segapp | GrabCut | deficit |")
        L.append("|---|---|---|---|---|---|")
        for w in worst:
            L.append(f"| {w['case']} | {w['split']} | {w['input']} | {w['segapp']:.3f} | "
                     f"{w['grabcut']:.3f} | {w['deficit']:+.3f} |")
    L.append("\n## Composites\n")
    L.append("| case | half | kind | K | size | overlap (near) | tier | background | objects "
             "(textures) |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for c in out.cases:
        objs = ", ".join(f"{o}" + (f" ({t})" if t else "")
                         for o, t in zip(c["objects"], c["textures"]))
        L.append(f"| {c['case']} | {c['split']} | {c['kind']} | {c['k']} | {c['width']}×"
                 f"{c['height']} | {c['overlap']:.2f} ({c['overlap_near']:.2f}) | {c['tier']} | "
                 f"{c['background']}{' (grey)' if c['grey'] else ''} | {objs} |")
    L.append("\n## Runs (IoU / BF / s)\n")
    L.append("| case | input | " + " | ".join(methods) + " | user NoC@90 |")
    L.append("|---|---|" + "---|" * len(methods) + "---|")
    by = {(r["case"], r["input"], r["method"]): r for r in out.runs}
    users = {}
    for u in out.user:
        users.setdefault(u["case"], []).append(f"{u['method']} {u.get('noc90', 'failed')}")
    for c in out.cases:
        for inp in c["inputs"]:
            cells = []
            for m in methods:
                r = by.get((c["case"], inp, m))
                cells.append("—" if r is None else
                             f"{r['iou']:.3f} / {r['bf']:.3f} / {r['time_s']:.2f}"
                             + (" ⚠" if "error" in r else ""))
            note = ", ".join(users.get(c["case"], [])) if inp == "rect" else ""
            L.append(f"| {c['case']} | {inp} | " + " | ".join(cells) + f" | {note} |")
    return "\n".join(L) + "\n"


def _error_view(labels: np.ndarray, truth: np.ndarray, k: int) -> np.ndarray:
    """Labels as colours with the errors marked: K = 2 object white, background black, false
    positives red, false negatives blue; K = 3 the palette, wrong pixels red."""
    h, w = truth.shape
    out = np.zeros((h, w, 3), np.uint8)
    if k == 2:
        out[labels == 1] = (235, 235, 235)
        out[(labels == 1) & (truth != 1)] = (230, 40, 40)
        out[(labels != 1) & (truth == 1)] = (40, 90, 230)
    else:
        palette = {1: (235, 235, 235), 2: (150, 150, 150), 3: (0, 0, 0)}
        for lab, col in palette.items():
            out[labels == lab] = col
        out[labels != truth] = (230, 40, 40)
    return out


def figure(out: Outcome, path: Path, rows: int = 6) -> list[dict]:
    """PNG: the worst inputs for segapp against GrabCut, a row each: the photo with the input,
    the ground truth, segapp's result and GrabCut's (errors: red false positives, blue false
    negatives). Returns the rows drawn."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    worst = worst_against(out, count=rows)
    if not worst:
        return []
    fig, axes = plt.subplots(len(worst), 4, figsize=(13, 2.9 * len(worst)), squeeze=False)
    ks = {c["case"]: c for c in out.cases}
    for row, w in zip(axes, worst):
        truth = out.thumbs[(w["case"], "truth")]
        c = ks[w["case"]]
        panels = [
            (out.thumbs[(w["case"], w["input"], "input")],
             f"{w['case']} {w['input']} ({c['tier']}, {c['overlap']:.2f}, "
             f"{c['pixels'] / 1e6:.2g} MP)"),
            (_error_view(truth, truth, 2), "ground truth"),
            (_error_view(out.thumbs[(w["case"], w["input"], "segapp")], truth, 2),
             f"segapp IoU {w['segapp']:.3f}"),
            (_error_view(out.thumbs[(w["case"], w["input"], "grabcut")], truth, 2),
             f"GrabCut IoU {w['grabcut']:.3f}"),
        ]
        for ax, (img, title) in zip(row, panels):
            ax.imshow(img, interpolation="nearest")
            ax.set_title(title, fontsize=9)
            ax.axis("off")
    fig.suptitle("Worst inputs for segapp against GrabCut (red: false object, blue: missed "
                 "object)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return worst


def draw_cases(cases: list[data.Case], folder: Path, seed: int) -> None:
    """Each composite with its ground-truth outline and inputs, for a look (PNG)."""
    from segapp.core.io import save_image  # noqa: PLC0415

    folder.mkdir(parents=True, exist_ok=True)
    for case in cases:
        comp = data.composite(case)
        outline = comp.image.copy()
        for lab, col in ((1, (255, 0, 0)), (2, (0, 90, 255))):
            if lab < comp.k:
                cs, _ = cv2.findContours((comp.truth == lab).astype(np.uint8), cv2.RETR_LIST,
                                         cv2.CHAIN_APPROX_NONE)
                cv2.drawContours(outline, cs, -1, col, 1)
        tiles = [comp.image, outline]
        for inp in data.make_inputs(case, comp, seed):
            tile = comp.image.copy()
            if inp.rect is not None:
                x, y, w, h = inp.rect
                cv2.rectangle(tile, (x, y), (x + w - 1, y + h - 1), (255, 230, 0), 2)
            if inp.strokes is not None:
                for lab, col in ((1, (255, 40, 40)), (2, (40, 120, 255)), (3, (40, 220, 40))):
                    tile[inp.strokes == lab] = col
            tiles.append(tile)
        save_image(folder / f"{case.name}.png", np.concatenate(tiles, axis=1))


# -- command line ---------------------------------------------------------------------------------

def product_version() -> dict:
    """Which product the numbers belong to: the commit checked out (read from ``.git``, no git
    command) and a hash of every ``.py`` file of ``segapp`` and ``solver`` as they are on disk
    (the working tree may differ from the commit)."""
    import hashlib  # noqa: PLC0415

    digest = hashlib.sha256()
    for path in sorted(p for pkg in ("segapp", "solver") for p in (ROOT / pkg).rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    head = None
    try:
        ref = (ROOT / ".git" / "HEAD").read_text().strip()
        if ref.startswith("ref: "):
            name = ref[5:]
            loose = ROOT / ".git" / name
            if loose.exists():
                head = loose.read_text().strip()
            else:
                packed = (ROOT / ".git" / "packed-refs").read_text().splitlines()
                head = next((ln.split()[0] for ln in packed if ln.endswith(" " + name)), None)
        else:
            head = ref
    except OSError:
        pass
    return {"commit": head, "source_sha256": digest.hexdigest()[:16]}


def _names(text: str, choices: dict | tuple, what: str) -> list[str]:
    if text.strip().lower() in ("", "none"):
        return []
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in choices]
    if bad:
        raise SystemExit(f"accuracy.py: unknown {what} {', '.join(bad)} "
                         f"(expected {', '.join(choices)})")
    return names


def main(argv: list[str] | None = None) -> int:
    """Build the cases, run every method and the simulated user, write JSON, Markdown, PNG."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="Tune only on --split tuning; the held-out half is for "
                                        "checking what was kept.")
    ap.add_argument("--split", default="both", choices=("tuning", "held-out", "heldout", "both"),
                    help="which half to run (default both)")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help=f"comma-separated, of {', '.join(METHODS)} (default "
                         f"{','.join(DEFAULT_METHODS)})")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: three composites a half at 0.02 MP")
    ap.add_argument("--max-pixels", type=float, default=3e6,
                    help="leave out composites above this size (default 3e6: all)")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the inputs (rectangle margins, strokes); the composites are "
                         "fixed (default 0)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"),
                    help="folder for accuracy.json, .md, .png (default benchmarks/results)")
    ap.add_argument("--user-methods", default=",".join(DEFAULT_USERS),
                    help=f"methods the simulated user drives, of {', '.join(USERS)}, or none "
                         f"(default {','.join(DEFAULT_USERS)})")
    ap.add_argument("--user-max-pixels", type=float, default=USER_MAX_PIXELS,
                    help="the simulated user runs on the K = 2 composites up to this size "
                         f"(default {USER_MAX_PIXELS:g}: 13 a half; 1e6 adds the 1 MP ones, "
                         "hours more on two cores)")
    ap.add_argument("--user-strokes", type=int, default=USER_STROKES,
                    help=f"the user's most strokes (default {USER_STROKES})")
    ap.add_argument("--figure-rows", type=int, default=6, help="rows of the figure (default 6)")
    ap.add_argument("--no-warm-up", action="store_true",
                    help="skip compiling the kernels first (the first runs' times then include "
                         "it: for smoke tests)")
    ap.add_argument("--draw", help="also write each composite with its truth and inputs here")
    ap.add_argument("--cases", help="only these composites (comma-separated names, e.g. "
                                    "T11-blob,H02-shape)")
    ap.add_argument("--lam", type=float, default=None,
                    help="λ of segapp's model in its methods and users (default: the app's)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="re-estimation rounds of segapp and min-cut (default: the model's)")
    ap.add_argument("--model-option", action="append", type=_model_option, default=[],
                    metavar="NAME=VALUE",
                    help="a change to segapp's model in segapp and min-cut, a field of "
                         "solver.mrf.ModelOptions (repeatable), e.g. rect_rounds=5")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    args = ap.parse_args(argv)
    global LAM, ROUNDS, MODEL_CHANGES  # noqa: PLW0603 - one setting for every method of this run
    LAM, ROUNDS, MODEL_CHANGES = args.lam, args.rounds, dict(args.model_option)
    split = "held-out" if args.split == "heldout" else args.split
    methods = _names(args.methods, METHODS, "method")
    user_methods = _names(args.user_methods, USERS, "user method")
    todo = data.cases(split, args.max_pixels, args.quick)
    if args.cases:
        wanted = set(_names(args.cases, {c.name: c for c in todo}, "case"))
        todo = [c for c in todo if c.name in wanted]
    if args.list:
        for c in todo:
            print(c.split, c.name, f"K={c.k}", c.pixels, c.target)
        return 0
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.draw:
        draw_cases(todo, Path(args.draw), args.seed)
    version = product_version()  # (before the run: the files may change while it runs)
    t_start = time.perf_counter()
    if not args.no_warm_up:
        warm_up(sorted(set(methods) | ({"segapp", "mincut"} & set(user_methods))))

    def save(outcome: Outcome, done: bool) -> None:
        wall = time.perf_counter() - t_start
        settings = _settings(args, argv, split, methods, user_methods, version, wall, done)
        summ = summarise(outcome, methods)
        drawn = []
        if done and "segapp" in methods and "grabcut" in methods:
            drawn = figure(outcome, out_dir / "accuracy.png", args.figure_rows)
        doc = {"settings": settings, "summary": summ, "worst": drawn, "cases": outcome.cases,
               "runs": outcome.runs, "user": outcome.user}
        _write(out_dir / "accuracy.json", json.dumps(doc, indent=1) + "\n")
        _write(out_dir / "accuracy.md", markdown(outcome, summ, settings, methods))
        if done:
            _log(f"wrote {out_dir / 'accuracy.json'}, .md{', .png' if drawn else ''} in "
                 f"{wall:.0f} s")

    outcome = run(todo, methods, seed=args.seed, user_methods=user_methods,
                  user_max_pixels=args.user_max_pixels, user_strokes=args.user_strokes,
                  after=lambda o: save(o, done=False))
    save(outcome, done=True)
    return 0


def _write(path: Path, text: str) -> None:
    """Write whole or not at all (a reader never sees half a file)."""
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(text)
    os.replace(tmp, path)


def _settings(args: argparse.Namespace, argv: list[str] | None, split: str, methods: list[str],
              user_methods: list[str], version: dict, wall: float, done: bool) -> dict:
    which = data.split_of()
    return {
        "argv": " ".join(argv if argv is not None else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M"), "split_run": split, "methods": methods,
        "user_methods": user_methods, "quick": args.quick, "max_pixels": args.max_pixels,
        "seed": args.seed, "lam": LAM, "rounds": ROUNDS, "model_changes": MODEL_CHANGES,
        "user_max_pixels": args.user_max_pixels,
        "user_strokes": args.user_strokes, "user_stop": USER_STOP, "tolerance_px": TOLERANCE,
        "grabcut_iterations": GRABCUT_ITERS, "rw_max_pixels": RW_MAX_PIXELS, "rw_beta": RW_BETA,
        "warm_up": not args.no_warm_up, "wall_s": round(wall, 1), "complete": done, "split_salt": data.SPLIT_SALT,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load "
                   f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else platform.machine(),
        "cv2_threads": cv2.getNumThreads(), "product": version,
        "split": {h: [n for n in which if which[n] == h] for h in data.HALVES},
        "tiers": {"targets": data.TIER_TARGET, "edges": list(data.TIER_EDGES)},
    }


if __name__ == "__main__":
    sys.exit(main())
