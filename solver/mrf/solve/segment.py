"""From a photo and a person's drawing to the final model and its answer: the one recipe the
library, the command line and the app share.

:func:`prepare` makes the model (:class:`solver.mrf.options.ModelOptions`): strokes as seeds,
the colour models, GrabCut-style re-estimation rounds (on a reduced copy of a large photo) and
the warm start their answer gives the full image. :func:`segment` is :func:`prepare` then
:func:`solver.mrf.solve_mrf` on the final model.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import cv2
import numpy as np

from solver.mrf.build.checks import RECT_BACKGROUND
from solver.mrf.build.colour import fit_colour_models
from solver.mrf.build.constraints import Constraints
from solver.mrf.build.graph import image_to_float
from solver.mrf.build.problem import MRFProblem, build_problem
from solver.mrf.options import DEFAULT_LAMBDA, DEFAULT_MODEL, ModelOptions
from solver.mrf.solve.dispatch import solve_mrf
from solver.mrf.solve.grabcut import reestimate
from solver.mrf.result import MRFResult

log = logging.getLogger(__name__)

Rect = tuple[int, int, int, int]


def strokes_as_hard(strokes: np.ndarray, hard: np.ndarray | None,
                    rect: Rect | None) -> np.ndarray:
    """The hard layer with the stroke pixels added (hard pixels win where both are), but for
    strokes of labels other than 2 outside ``rect`` (its outside is label 2: they only train).

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32, 0 = free.
    """
    st = np.asarray(strokes).astype(np.int32)
    if rect is not None:
        x, y, rw, rh = (int(v) for v in rect)
        inside = np.zeros(st.shape, bool)
        inside[max(0, y):y + rh, max(0, x):x + rw] = True
        st = np.where(inside | (st == RECT_BACKGROUND), st, 0)
    if hard is None:
        return st
    hd = np.asarray(hard).astype(np.int32)
    return np.where(hd > 0, hd, st)


def reduced_copy(image: np.ndarray, strokes: np.ndarray | None, rect: Rect | None,
                 hard: np.ndarray | None, max_pixels: int
                 ) -> tuple[np.ndarray, np.ndarray | None, Rect | None, np.ndarray | None, int]:
    """The photo and the drawing reduced by a whole factor ``f`` to at most ``max_pixels``
    pixels: the photo averaged over ``f × f`` blocks, each label of the strokes and hard pixels
    kept on every block it touches (a thin stroke survives; a later label wins a shared
    block), the rectangle's edges rounded outwards.

    Returns
    -------
    image, strokes, rect, hard, f
        ``f = 1`` returns the inputs themselves.
    """
    h, w = np.shape(image)[:2]
    f = max(1, math.ceil(math.sqrt(h * w / max_pixels)))
    if f == 1:
        return image, strokes, rect, hard, 1
    hs, ws = -(-h // f), -(-w // f)
    small = cv2.resize(np.asarray(image), (ws, hs), interpolation=cv2.INTER_AREA)

    def labels(layer: np.ndarray | None) -> np.ndarray | None:
        if layer is None:
            return None
        lab = np.asarray(layer)
        out = np.zeros((hs, ws), np.int32)
        padded = np.zeros((hs * f, ws * f), lab.dtype)
        padded[:h, :w] = lab
        blocks = padded.reshape(hs, f, ws, f)
        for k in np.unique(lab[lab > 0]):
            out[(blocks == k).any(axis=(1, 3))] = int(k)
        return out

    rect_s = None
    if rect is not None:
        x, y, rw, rh = (int(v) for v in rect)
        x0, y0 = x // f, y // f
        x1, y1 = min(ws, -(-(x + rw) // f)), min(hs, -(-(y + rh) // f))
        rect_s = (x0, y0, max(1, x1 - x0), max(1, y1 - y0))
    return small, labels(strokes), rect_s, labels(hard), f


def enlarged_labels(labels: np.ndarray, f: int, shape: tuple[int, int]) -> np.ndarray:
    """A reduced copy's ``(h, w)`` labels on the full ``shape``, each block's label repeated."""
    lab = np.asarray(labels)
    return np.repeat(np.repeat(lab, f, 0), f, 1)[:shape[0], :shape[1]]


@dataclass
class Prepared:
    """The final model of a drawing, and where to start solving it.

    Attributes
    ----------
    problem : MRFProblem
        The problem on the final colour models (the one the answer solves).
    x0 : numpy.ndarray or None
        ``(n, K)`` warm start from the rounds' last answer (None without rounds).
    rounds : int
        Refits of the colour models made (on the copy or the full image).
    copy_factor : int
        The reduced copy's factor (1: the rounds ran on the full image, or none ran).
    results : list of MRFResult
        The full image's round solves (empty when the rounds ran on a copy).
    stopped : bool
        ``stop`` ended the rounds (the last of ``results`` may be a cancelled solve).
    time_s : float
        Seconds of the whole preparation (builds, fits and round solves).
    """

    problem: MRFProblem
    x0: np.ndarray | None
    rounds: int = 0
    copy_factor: int = 1
    results: list = field(default_factory=list)
    stopped: bool = False
    time_s: float = 0.0


def prepare(image: np.ndarray, strokes: np.ndarray | None = None, k: int = 2, *,
            rect: Rect | None = None, hard: np.ndarray | None = None,
            lam: float = DEFAULT_LAMBDA, beta: float | None = None,
            colour_model: str = "gmm", seed: int | None = None,
            constraints: Constraints | None = None, model: ModelOptions = DEFAULT_MODEL,
            rounds: int | None = None, method: str = "admm",
            previous: np.ndarray | None = None,
            solve: Callable[[MRFProblem, MRFResult | None], MRFResult] | None = None,
            callback: Callable[[Any], bool | None] | None = None,
            step: Callable[[str], None] | None = None,
            models: Sequence[Any] | None = None, **params: Any) -> Prepared:
    """The final model of a drawing (:class:`solver.mrf.options.ModelOptions`).

    Stroke pixels become seeds (``model.fix_strokes``); the colour models are fitted (the
    unlabelled pixels also training ``model.unlabelled`` for K = 2 strokes alone) and then
    re-estimated ``rounds`` times (:func:`solver.mrf.reestimate`): above ``model.copy_pixels``
    pixels on a reduced copy (:func:`reduced_copy`, the constraints carried over by
    :meth:`solver.mrf.Constraints.resized`), whose final models the full image takes.

    Parameters
    ----------
    image, strokes, k, rect, hard, lam, beta, colour_model, constraints
        As for :func:`solver.mrf.build_problem`.
    seed : int, optional
        Seed of the colour-model fits (None: 0) and of ADMM's random start (None: ½).
    model : ModelOptions
    rounds : int, optional
        Re-estimation rounds (default ``model.rounds_for(rect)``).
    method : str
        The solver of the rounds (:func:`solver.mrf.solve_mrf`'s ``method``).
    previous : numpy.ndarray, optional
        A correction: the last answer's ``(H, W)`` labels for the same photo, K and rectangle.
        The colour models are fitted once to it (the new strokes and hard pixels at their
        labels) and the final solve starts from it; no rounds are solved.
    solve : callable, optional
        ``solve(problem, previous) -> MRFResult`` for the full image's rounds (default
        :func:`solver.mrf.solve_mrf` with ``method``, ADMM warm-started from ``previous``).
        A copy's rounds always use the default. A round whose result is ``"cancelled"`` ends
        the rounds (``Prepared.stopped``).
    callback : callable, optional
        The default rounds' :func:`solver.mrf.solve_mrf` callback (True stops them); a reduced
        copy's states have their phase prefixed ``"model:"`` (``"model:admm"``, ...): they
        are the copy's, not the image's.
    step : callable, optional
        Called with a sentence as each round starts (a front end's progress text).
    models : sequence of colour models, optional
        K colour models fitted elsewhere (on another photo of the same kind: ``segapp batch
        --model``), taken as they are: nothing is fitted and no rounds are solved.
    **params
        ADMM parameters of the rounds (and ``polish``, ``backend``).

    Returns
    -------
    Prepared
    """
    t0 = time.perf_counter()
    fit_seed = 0 if seed is None else int(seed)
    if model.fix_strokes and strokes is not None:
        hard = strokes_as_hard(strokes, hard, rect)
    unlabelled = model.unlabelled if (rect is None and int(k) == 2) else None
    build = dict(lam=lam, beta=beta, colour_model=colour_model, seed=fit_seed,
                 unlabelled=unlabelled)
    n_rounds = model.rounds_for(rect) if rounds is None else int(rounds)

    def default_solve(prob: MRFProblem, previous: MRFResult | None,
                      live: Callable[[Any], bool | None] | None = callback) -> MRFResult:
        if method != "admm":
            return solve_mrf(prob, method)
        start = None if previous is None else previous.x_continuous
        return solve_mrf(prob, "admm", seed=seed, x0=start, callback=live, **params)

    copy_live = None  # (a reduced copy's states: their phase says so, "model:admm", ...)
    if callback is not None:
        def copy_live(state: Any) -> bool | None:
            return callback(replace(state, phase=f"model:{state.phase}"))

    def copy_solve(prob: MRFProblem, previous: MRFResult | None) -> MRFResult:
        return default_solve(prob, previous, copy_live)

    counter = {"n": 0}

    def announced(inner):
        def run(prob: MRFProblem, previous: MRFResult | None) -> MRFResult:
            counter["n"] += 1
            if step is not None:
                step(f"colour models, round {counter['n']} of {n_rounds}")
            return inner(prob, previous)
        return run

    if models is not None:
        problem = build_problem(image, strokes, k, rect=rect, hard=hard, constraints=constraints,
                                models=models, **build)
        return Prepared(problem, None, time_s=time.perf_counter() - t0)
    h, w = np.shape(image)[:2]
    if previous is not None and np.shape(previous) == (h, w):
        return _correction(image, strokes, k, rect, hard, constraints, np.asarray(previous),
                           colour_model, fit_seed, build, t0)
    models = start_labels = None
    copy_rounds, f = None, 1
    if n_rounds and h * w > model.copy_pixels:
        small_image, small_strokes, small_rect, small_hard, f = reduced_copy(
            image, strokes, rect, hard, model.copy_pixels)
        small_n = int(np.shape(small_image)[0]) * int(np.shape(small_image)[1])
        try:
            small = build_problem(small_image, small_strokes, k, rect=small_rect,
                                  hard=small_hard, constraints=(
                                      constraints.resized(small_n / (h * w)) if constraints
                                      else None), **build)
        except ValueError as exc:  # (a label's strokes lost to a later label's on every block,
            # or strokes the constraints refuse once reduced)
            log.info("re-estimation on the full image: the reduced copy %s", exc)
            small = None
        if small is not None:
            copy_rounds = reestimate(small, small_image, announced(copy_solve), n_rounds,
                                     tol=model.tol, seed=fit_seed)
            models = copy_rounds.problem.models
            if copy_rounds.result is not None:
                start_labels = enlarged_labels(
                    np.asarray(copy_rounds.result.labels).reshape(small.shape), f, (h, w))
            log.info("re-estimation on a 1/%d copy (%dx%d): %d refits", f, small.shape[1],
                     small.shape[0], copy_rounds.rounds)
    problem = build_problem(image, strokes, k, rect=rect, hard=hard, constraints=constraints,
                            models=models, **build)
    if copy_rounds is not None:
        x0 = None
        if start_labels is not None:
            fixed = problem.hard.reshape(h, w)  # (the full image's own seeds and outside)
            start_labels = np.where(fixed > 0, fixed, start_labels)
            x0 = np.eye(problem.k)[start_labels.ravel() - 1]
        return Prepared(problem, x0, copy_rounds.rounds, f, [], _cancelled(copy_rounds.result),
                        time.perf_counter() - t0)
    if not n_rounds:
        return Prepared(problem, None, time_s=time.perf_counter() - t0)
    out = reestimate(problem, image, announced(solve or default_solve), n_rounds,
                     tol=model.tol, seed=fit_seed)
    last = out.result
    x0 = None if last is None else last.x_continuous
    return Prepared(out.problem, x0, out.rounds, 1, list(out.results), _cancelled(last),
                    time.perf_counter() - t0)


def _cancelled(result: MRFResult | None) -> bool:
    """Whether a round's result says its solve was stopped."""
    return result is not None and getattr(result, "status", "") == "cancelled"


def _correction(image: np.ndarray, strokes: np.ndarray | None, k: int, rect: Rect | None,
                hard: np.ndarray | None, constraints: Constraints | None,
                previous: np.ndarray, colour_model: str, fit_seed: int, build: dict,
                t0: float) -> Prepared:
    """:func:`prepare` for a correction: one fit of the colour models to ``previous`` with the
    drawing's seeds (strokes, hard pixels, a rectangle's outside) at their labels, and
    ``previous`` (seeds forced) as the final solve's start."""
    h, w = previous.shape
    seeds = np.zeros((h, w), np.int32)
    if strokes is not None:
        seeds = np.asarray(strokes).astype(np.int32)
    if hard is not None:
        hd = np.asarray(hard).astype(np.int32)
        seeds = np.where(hd > 0, hd, seeds)
    if rect is not None:
        x, y, rw, rh = (int(v) for v in rect)
        inside = np.zeros((h, w), bool)
        inside[max(0, y):y + rh, max(0, x):x + rw] = True
        seeds = np.where(inside, seeds, RECT_BACKGROUND)
    start = np.where(seeds > 0, seeds, previous.astype(np.int32))
    if start.min() < 1 or start.max() > k or np.unique(start).size < k:
        log.info("correction: the last answer does not hold every label; models from the "
                 "drawing")
        return Prepared(build_problem(image, strokes, k, rect=rect, hard=hard,
                                      constraints=constraints, **build), None,
                        time_s=time.perf_counter() - t0)
    models = fit_colour_models(image_to_float(image), start, k, model=colour_model,
                               seed=fit_seed)
    problem = build_problem(image, strokes, k, rect=rect, hard=hard, constraints=constraints,
                            models=models, **build)
    fixed = problem.hard.reshape(h, w)
    start = np.where(fixed > 0, fixed, start)
    x0 = np.eye(problem.k)[start.ravel() - 1]
    return Prepared(problem, x0, 1, 1, [], False, time.perf_counter() - t0)


def segment(image: np.ndarray, strokes: np.ndarray | None = None, k: int = 2, *,
            rect: Rect | None = None, hard: np.ndarray | None = None,
            method: str = "admm", backend: str = "cpu", seed: int | None = None,
            x0: np.ndarray | None = None,
            callback: Callable[[Any], bool | None] | None = None, polish: bool | None = None,
            lam: float = DEFAULT_LAMBDA, beta: float | None = None, colour_model: str = "gmm",
            constraints: Constraints | None = None, model: ModelOptions = DEFAULT_MODEL,
            rounds: int | None = None, previous: np.ndarray | None = None,
            **params: Any) -> tuple[MRFResult, MRFProblem]:
    """Segment a photo from a drawing as the app and the command line do: :func:`prepare`,
    then :func:`solver.mrf.solve_mrf` on the final model, warm-started from the rounds.

    Parameters
    ----------
    image, strokes, k, rect, hard, lam, beta, colour_model, constraints, model, rounds, previous
        As for :func:`prepare` (``previous``: a correction, warm from the last answer).
    method, backend, seed, callback, polish, **params
        As for :func:`solver.mrf.solve_mrf`. ``callback`` sees the rounds' solves too (their
        iterations numbered from 1 each; a reduced copy's with phase ``"model:..."``, as for
        :func:`prepare`); its True ends the rounds and the run, the result then the stopped
        solve's (status ``"cancelled"``).
    x0 : numpy.ndarray, optional
        A warm start of the final solve (a previous answer's ``x_continuous``); it takes the
        place of the rounds' own.

    Returns
    -------
    result : MRFResult
        The final solve, its ``iterations`` and ``time_s`` counting the full image's rounds
        too, and its ``history`` theirs before its own, numbered on.
    problem : MRFProblem
        The final model (``result.energy`` is ``problem.energy(result.labels)``).
    """
    admm = dict(polish=polish, backend=backend, **params) if method == "admm" else {}
    prep = prepare(image, strokes, k, rect=rect, hard=hard, lam=lam, beta=beta,
                   colour_model=colour_model, seed=seed, constraints=constraints, model=model,
                   rounds=rounds, method=method, previous=previous, callback=callback, **admm)
    rounds_done = prep.results
    if prep.stopped and rounds_done:
        res, rounds_done = rounds_done[-1], rounds_done[:-1]
    elif method == "admm":
        res = solve_mrf(prep.problem, "admm", backend=backend, seed=seed,
                        x0=prep.x0 if x0 is None else x0, callback=callback, polish=polish,
                        **params)
    else:
        res = solve_mrf(prep.problem, method)
    history, offset = [], 0
    for r in (*rounds_done, res):
        history.extend(replace(rec, iteration=rec.iteration + offset) for rec in r.history)
        offset = history[-1].iteration if history else offset
    return replace(res, iterations=res.iterations + sum(r.iterations for r in rounds_done),
                   time_s=res.time_s + sum(r.time_s for r in rounds_done),
                   history=history), prep.problem
