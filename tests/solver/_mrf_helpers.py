"""Shared builders for the MRF and yardstick tests: tiny seeded synthetic images."""

from __future__ import annotations

import itertools

import numba
import numpy as np

from solver.mrf import MRFProblem, SolveOptions, problem_from_unary, solve_mrf
from solver.mrf.polish.icm import icm


def shapes_image(seed: int = 0, k: int = 3, size: int = 48, noise: float = 0.08):
    """Grey image with ``k - 1`` rectangles on a background, plus noise.

    Returns (image, ground truth labels 1..k, strokes with a short line inside each region).
    """
    rng = np.random.default_rng(seed)
    truth = np.ones((size, size), dtype=np.int32)
    boxes = [
        (size // 6, size // 6, size * 5 // 12, size * 3 // 8),
        (size * 13 // 24, size * 7 // 12, size // 3, size * 7 // 24),
    ][: k - 1]
    for label, (y, x, h, w) in enumerate(boxes, start=2):
        truth[y : y + h, x : x + w] = label
    levels = np.linspace(0.15, 0.85, k)
    image = np.clip(levels[truth - 1] + rng.normal(0.0, noise, truth.shape), 0.0, 1.0)
    strokes = np.zeros_like(truth)
    strokes[2, 2 : size // 2] = 1
    strokes[size - 3, size // 5 : size * 5 // 6] = 1
    for label, (y, x, h, w) in enumerate(boxes, start=2):
        strokes[y + h // 2, x + 2 : x + w - 2] = label
    return image, truth, strokes


def admm_gaps(problem: MRFProblem, yardstick: str, off: SolveOptions) -> tuple[float, float]:
    """ADMM's (seed 0) relative gaps to ``yardstick``'s energy: with the defaults, with ``off``."""
    ref = solve_mrf(problem, yardstick).energy
    on_energy = solve_mrf(problem, "admm", seed=0).energy
    off_energy = solve_mrf(problem, "admm", seed=0, options=off).energy
    return (on_energy - ref) / abs(ref), (off_energy - ref) / abs(ref)


def random_problem(shape, k: int = 2, seed: int = 0, hard_fraction: float = 0.0) -> MRFProblem:
    """Random tiny problem: random RGB image, random unaries, random lambda, optional hard pixels."""
    rng = np.random.default_rng(seed)
    image = rng.random((*shape, 3))
    n = shape[0] * shape[1]
    unary = rng.normal(0.0, 1.0, (n, k))
    hard = np.zeros(shape, dtype=np.int32)
    mask = rng.random(shape) < hard_fraction
    hard[mask] = rng.integers(1, k + 1, mask.sum())
    return problem_from_unary(image, unary, lam=float(rng.uniform(0.2, 1.5)), hard=hard)


def brute_force(problem: MRFProblem) -> tuple[float, np.ndarray]:
    """Minimum energy and a minimiser over all labellings that honour the hard constraints."""
    best, arg = np.inf, None
    for combo in itertools.product(range(1, problem.k + 1), repeat=problem.n):
        labels = np.array(combo)
        if np.any((problem.hard > 0) & (labels != problem.hard)):
            continue
        e = problem.energy(labels)
        if e < best:
            best, arg = e, labels
    return best, arg.reshape(problem.shape)


def perturbed_fixed_point(problem: MRFProblem, seed: int, changes: int):
    """An ICM fixed point of ``problem`` and a copy with ``changes`` random pixels relabelled
    (hard pixels kept): the input of the tests of ``since=`` (ICM from a fixed point)."""
    k = problem.k
    rng = np.random.default_rng(seed)
    base = icm(problem, rng.integers(1, k + 1, size=problem.shape), max_sweeps=1000)
    moved = base.copy().ravel()
    spots = rng.choice(problem.n, size=changes, replace=False)
    moved[spots] = rng.integers(1, k + 1, size=changes)
    hard = problem.hard.ravel()
    moved[hard > 0] = hard[hard > 0]
    return base, moved


def on_threads(count: int, fn, *args):
    """``fn(*args)`` with numba limited to ``count`` threads (restored afterwards)."""
    before = numba.get_num_threads()
    numba.set_num_threads(count)
    try:
        return fn(*args)
    finally:
        numba.set_num_threads(before)
