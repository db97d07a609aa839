"""The TV-relaxation proposals of the K = 2 polish (solver.mrf.polish.tv).

The TV relaxation of a two-label energy is tight, so after enough steps its level sets hold a
minimiser (checked against brute force); fused into a poor labelling they reach the optimum and
never raise the energy; and in the default pipeline they take a weak-data input (a GrabCut
rectangle alone) to min-cut's energy, which the polish without them misses.
"""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from segapp.core.io import ASSETS_DIR, load_image
from solver.mrf import SolveOptions, build_problem, solve_mrf
from solver.mrf.options import ConstrainedOptions, PolishOptions, TVOptions
from solver.mrf.polish.pipeline import polish_labels
from solver.mrf.polish.tv import fuse_tv_into, tv_relaxation
from tests.solver._mrf_helpers import admm_gaps, brute_force, random_problem


def _level_set_best(problem, s):
    return min(problem.energy((s > t).astype(np.int64) + 1) for t in np.linspace(0.05, 0.95, 19))


@pytest.mark.parametrize("seed", range(6))
def test_level_sets_of_the_converged_relaxation_are_optimal(seed):
    problem = random_problem((3, 4), k=2, seed=seed, hard_fraction=0.15 if seed % 2 else 0.0)
    best, _ = brute_force(problem)
    start = np.zeros(problem.n, np.int32)
    hard = problem.hard.ravel()
    start[hard > 0] = hard[hard > 0] - 1
    s, steps = tv_relaxation(problem, start, 20000, 1.0, tol=1e-9)
    assert steps >= 25
    assert s.min() >= 0.0 and s.max() <= 1.0
    assert np.all(s[hard == 1] == 0.0) and np.all(s[hard == 2] == 1.0)
    assert _level_set_best(problem, s) == pytest.approx(best, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_fusing_the_proposals_reaches_the_optimum_from_a_poor_start(seed):
    problem = random_problem((3, 4), k=2, seed=10 + seed)
    best, _ = brute_force(problem)
    for start_label in (0, 1):
        lab = np.full(problem.n, start_label, np.int32)
        before = problem.energy(lab + 1)
        fuse_tv_into(problem, lab, 5000, 1.0, (0.1, 0.3, 0.5, 0.7, 0.9))
        after = problem.energy(lab + 1)
        assert after <= before + 1e-9
        assert after == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_tv_relaxation_refuses_more_than_two_labels():
    with pytest.raises(ValueError, match="two labels"):
        tv_relaxation(random_problem((3, 3), k=3), np.zeros(9, np.int32), 10, 1.0)


def _rectangle_only_cameraman():
    """The cameraman at 100 x 100 with only a GrabCut rectangle round the man (the
    real-input benchmark's rectangle for it): weak data, a flat relaxation."""
    img = load_image(ASSETS_DIR / "cameraman.png")
    img = cv2.resize(img, (100, 100), interpolation=cv2.INTER_AREA)
    rect = (2, 8, 72, 91)
    return build_problem(img, None, 2, rect=rect)


@pytest.mark.slow
def test_default_polish_reaches_min_cut_on_a_rectangle_where_it_did_not_without_them():
    problem = _rectangle_only_cameraman()
    off = SolveOptions(polish=PolishOptions(tv=TVOptions(iterations=0)))
    gap_with, gap_without = admm_gaps(problem, "mincut", off)
    # measured (2026-11-26): +0.000 % with the proposals, +1.22 % without
    assert gap_with <= 1e-3
    assert gap_without > gap_with + 5e-3


@pytest.mark.slow
def test_the_proposals_run_only_where_asked():
    problem = _rectangle_only_cameraman()
    start = solve_mrf(problem, "admm", seed=0,
                      options=SolveOptions(polish=PolishOptions(tv=TVOptions(iterations=0)))
                      ).labels
    small = PolishOptions(tv=TVOptions(max_pixels=problem.n - 1))
    assert np.array_equal(polish_labels(problem, start, options=small),
                          polish_labels(problem, start, options=replace(small, tv=replace(small.tv, iterations=0))))
    assert problem.energy(polish_labels(problem, start)) < problem.energy(start) - 1.0


@pytest.mark.parametrize("seed", range(3))
def test_the_grid_sweep_takes_the_same_steps_as_the_edge_list(seed, monkeypatch):
    """On a grid the relaxation runs a float32 sweep over the stencil; it must give the
    float64 edge-list kernel's iterates (the same steps, summed in another order)."""
    from solver.mrf.polish import tv as tv_module

    problem = random_problem((9, 11), k=2, seed=seed, hard_fraction=0.1)
    start = (np.random.default_rng(seed).random(problem.n) > 0.5).astype(np.int32)
    hard = problem.hard.ravel()
    start[hard > 0] = hard[hard > 0] - 1
    grid, steps = tv_relaxation(problem, start, 60, 1.0, tol=0.0)
    assert 25 <= steps <= 60  # (fewer: a fixed point, where nothing changes)
    monkeypatch.setattr(tv_module, "grid_view",
                        lambda p: (np.empty(0), np.zeros(13, np.int64)))
    listed, _ = tv_relaxation(problem, start, 60, 1.0, tol=0.0)
    assert not np.allclose(grid, start)
    np.testing.assert_allclose(grid, listed, rtol=0, atol=1e-4)
    np.testing.assert_array_equal(grid[hard > 0], start[hard > 0])



def _dense_steps(cost, offsets, u, free, tau, s, sigma, steps, pull=None, w=None):
    """Reference: every edge's dual, then every pixel's value, each step (numpy, float32);
    with ``w``, each gradient gains ``pull w_i``."""
    n = s.size
    s, bar = s.copy(), s.copy()
    p = np.zeros((4, n), np.float32)
    for _ in range(steps):
        for q in range(4):
            o = offsets[4 + q]
            if o >= n:
                continue
            v = p[q, : n - o] + sigma * (bar[: n - o] - bar[o:])
            p[q, : n - o] = np.minimum(np.maximum(v, -cost[q, : n - o]), cost[q, : n - o])
        g = u + p[0] + p[1] + p[2] + p[3]
        if w is not None:
            g += pull * w
        for q in range(4):
            o = offsets[4 + q]
            if o < n:
                g[o:] -= p[q, : n - o]
        t = np.minimum(np.maximum(s - tau * g, np.float32(0)), np.float32(1))
        t[~free] = s[~free]
        bar = 2 * t - s
        s = t
    return s


@pytest.mark.parametrize(("shape", "pulled"), [((9, 11), False), ((9, 11), True),
                                               ((1, 13), False), ((2, 5), True)])
def test_a_step_over_every_pixel_matches_the_reference(shape, pulled):
    """The compiled step over every pixel (a sweep in runs of pixels on the threads, over
    one-dimensional views) gives the numpy reference's values and duals: on a grid split into
    several runs, with an area row's pull, and on grids so small that some directions have no
    edge (a single row)."""
    from solver.mrf.build.stencil import grid_offsets
    from solver.mrf.polish import tv_kernels

    h, w = shape
    n = h * w
    rng = np.random.default_rng(n + pulled)
    offsets = grid_offsets(w)
    cost = rng.random((4, n)).astype(np.float32)
    u = (rng.random(n) - 0.5).astype(np.float32)
    free = rng.random(n) > 0.2
    tau = (0.05 + 0.1 * rng.random(n)).astype(np.float32)
    start = rng.random(n).astype(np.float32)
    sigma, pull = np.float32(0.4), np.float32(0.3)
    weights = rng.random(n).astype(np.float32) if pulled else tv_kernels.NO_WEIGHTS
    want = _dense_steps(cost, offsets, u, free, tau, start, sigma, 12, pull,
                        weights if pulled else None)
    got, bar, p = start.copy(), start.copy(), np.zeros((4, n), np.float32)
    for _ in range(12):
        tv_kernels._dense_step((cost, offsets, u, free, tau), got, bar, p, sigma, pull, weights)
    assert not np.array_equal(want, start)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_the_grid_kernel_visits_few_pixels_and_takes_every_step(seed):
    """The grid kernel visits only pixels where something changed and their neighbours; it
    must give exactly what steps over every pixel give (a labelling that is nearly a fixed
    point, as in the polish, and a random start)."""
    from solver.mrf.polish import tv_kernels
    from tests.solver.mrf.polish.test_tv_expansions import _stencil

    problem = random_problem((23, 31), k=2, seed=seed, hard_fraction=0.05)
    stencil, offsets = _stencil(problem)
    two_lam = 2.0 * problem.lam
    cost = np.ascontiguousarray(np.where(stencil[:, 4:] <= 0, -two_lam * stencil[:, 4:], 0)
                                .astype(np.float32).T)
    tau = (0.5 / two_lam / np.maximum((stencil <= 0).sum(1), 1)).astype(np.float32)
    u = (problem.unary[:, 1] - problem.unary[:, 0]).astype(np.float32)
    free = problem.hard.ravel() == 0
    sigma = np.float32(two_lam)
    rng = np.random.default_rng(seed)
    settled = polish_labels(problem, rng.integers(1, 3, problem.shape)).ravel() - 1
    used = 0
    for start in (settled.astype(np.float32), rng.random(problem.n).astype(np.float32)):
        want = _dense_steps(cost, offsets, u, free, tau, start, sigma, 80)
        assert not np.array_equal(want, start)
        for sparse_below in (0.0, 10.0):  # steps over every pixel only; sparse from step 25
            got = start.copy()
            steps, sparse = tv_kernels.tv_iterate_grid((cost, offsets, u, free, tau), got, sigma,
                                                       80, 0.0, sparse_below)
            assert steps == 80 or (steps < 80 and sparse > 0)  # (fewer: nothing left to move)
            assert sparse == 0 or sparse_below > 0
            used += sparse
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    assert used > 0


def test_area_relaxation_moves_the_area_into_its_bounds():
    """The relaxation under an area bound: its area ends within the bound (approximately, a
    continuous iterate) although the unconstrained relaxation's is far outside it."""
    from solver.mrf.polish.tv import tv_relaxation_area

    problem = random_problem((12, 14), k=2, seed=3)
    free_s, _ = tv_relaxation(problem, np.zeros(problem.n, np.int32), 3000, 1.0, tol=0.0)
    free_area = float(free_s.sum())
    lo = free_area + 0.25 * problem.n if free_area < 0.5 * problem.n else 0.0
    hi = lo + 0.1 * problem.n if lo else free_area - 0.25 * problem.n
    s, _ = tv_relaxation_area(problem, np.zeros(problem.n, np.int32), (lo, hi),
                              np.ones(problem.n), 3000, 3.0)
    assert s.min() >= 0.0 and s.max() <= 1.0
    assert lo - 0.02 * problem.n <= s.sum() <= hi + 0.02 * problem.n
    assert not lo - 0.02 * problem.n <= free_area <= hi + 0.02 * problem.n


def test_a_small_area_relaxation_runs_on_one_thread_and_a_large_one_threaded(monkeypatch):
    """Below ``SERIAL_BELOW`` pixels the steps under an area bound run on one thread (waking
    the threads for each step's two passes costs as much as the passes); from there on,
    numba's setting. The values are the same either way."""
    from solver.mrf.polish import tv, tv_kernels

    assert tv_kernels.SERIAL_BELOW > 10_000  # (a 1e4-pixel photo's relaxation is serial)
    problem = random_problem((12, 14), k=2, seed=3)
    args = (problem, np.zeros(problem.n, np.int32), (0.3 * problem.n, 0.4 * problem.n),
            np.ones(problem.n), 200, 3.0)
    calls = []
    real = tv.threaded

    def spy(kernel, *a, threads=None):
        calls.append((kernel.py_func.__name__, threads))
        return real(kernel, *a, threads=threads)

    monkeypatch.setattr(tv, "threaded", spy)
    serial = tv.tv_relaxation_area(*args)[0]
    monkeypatch.setattr(tv_kernels, "SERIAL_BELOW", problem.n)  # (now exactly at the limit)
    threaded = tv.tv_relaxation_area(*args)[0]
    assert calls == [("tv_iterate_grid_area", 1), ("tv_iterate_grid_area", None)]
    np.testing.assert_array_equal(serial, threaded)


def _cameraman_with_an_area(side, lo, hi):
    """The cameraman at ``side`` x ``side`` with its bundled strokes and the man's label bound
    to ``lo``-``hi`` times its unconstrained min-cut area (as the constraint benchmark's
    cases)."""
    from segapp.core.io import load_label_image
    from solver.mrf import AreaBound, Constraints

    img = load_image(ASSETS_DIR / "cameraman.png")
    strokes = load_label_image(ASSETS_DIR / "cameraman_strokes_k2.png", img.shape[:2])
    img = cv2.resize(img, (side, side), interpolation=cv2.INTER_AREA)
    strokes = cv2.resize(strokes, (side, side), interpolation=cv2.INTER_NEAREST)
    # λ = 10: the λ this input was built and measured at (the default until 2026-12-02)
    lam = 10.0
    share = float((solve_mrf(build_problem(img, strokes, 2, lam=lam), "mincut").labels == 1)
                  .mean())
    bound = Constraints(area=(AreaBound(1, lo * share, hi * share),))
    return build_problem(img, strokes, 2, lam=lam, constraints=bound)


def _cameraman_with_a_raised_area():
    """At 141 x 141, the man's label at 1.2-1.25 times its min-cut area (the "above" case)."""
    return _cameraman_with_an_area(141, 1.2, 1.25)


@pytest.mark.slow
def test_constrained_polish_with_the_area_relaxation_reaches_the_yardstick():
    problem = _cameraman_with_a_raised_area()
    ref = solve_mrf(problem, "mincut").energy  # (the parametric min-cut's best feasible cut)
    with_tv = solve_mrf(problem, "admm")
    off = SolveOptions(polish=PolishOptions(tv=TVOptions(iterations=0)))
    without = solve_mrf(problem, "admm", options=off)
    assert problem.feasible(with_tv.labels) and problem.feasible(without.labels)
    # measured (2026-11-26): -0.20 % with the relaxation, +9.16 % without
    assert (with_tv.energy - ref) / abs(ref) <= 0.005
    assert (without.energy - ref) / abs(ref) > 0.05


@pytest.mark.slow
def test_the_second_area_relaxation_reaches_the_yardstick_on_a_small_image():
    """The constraint benchmark's cameraman at 100 x 100 with the man's label bound to
    0.75-0.8 times its min-cut area: the first relaxation's multiplier swings there, the
    second (``constrained.area_small``) settles."""
    problem = _cameraman_with_an_area(100, 0.75, 0.8)
    ref = solve_mrf(problem, "mincut").energy
    both = solve_mrf(problem, "admm")
    one = solve_mrf(problem, "admm", options=SolveOptions(
        polish=PolishOptions(constrained=ConstrainedOptions(area_small=None))))
    off = solve_mrf(problem, "admm", options=SolveOptions(
        polish=PolishOptions(constrained=ConstrainedOptions(area_small_pixels=problem.n - 1))))
    assert problem.feasible(both.labels)
    # measured (2026-11-27): +0.000 % with the second relaxation, +1.149 % without
    assert (both.energy - ref) / abs(ref) <= 1e-3
    assert (one.energy - ref) / abs(ref) > 5e-3
    assert off.energy == one.energy  # (larger than the limit: the first relaxation only)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_constrained_polish_with_the_relaxation_is_never_worse(seed):
    """The relaxation's polish is a second one, the better end kept: never above the plain
    constrained polish, and feasible."""
    from solver.mrf import AreaBound, Constraints
    from solver.mrf.build.problem import with_constraints
    from solver.mrf.polish.constrained import constrained_polish

    base = random_problem((16, 18), k=2, seed=seed)
    rng = np.random.default_rng(seed)
    lo = float(rng.uniform(0.2, 0.6))
    problem = with_constraints(base, Constraints(area=(AreaBound(1, lo, lo + 0.05),)))
    start = rng.integers(1, 3, problem.shape)
    plain = constrained_polish(problem, start, tv=False)
    both = constrained_polish(problem, start, tv=True)
    assert problem.feasible(plain) and problem.feasible(both)
    assert problem.energy(both) <= problem.energy(plain) + 1e-9 * abs(problem.energy(plain))


def test_level_sets_within_an_exact_area_take_the_largest_values():
    """With an exact area no level set need meet it; the pixels of largest relaxed value up to
    that area are proposed, hard pixels kept to their labels."""
    from solver.mrf.polish.constrained import _level_sets_within

    problem = random_problem((6, 7), k=2, seed=2, hard_fraction=0.2)
    hard = problem.hard.ravel()
    rng = np.random.default_rng(0)
    s = rng.random(problem.n)
    s[hard == 1], s[hard == 2] = 0.0, 1.0
    target = float(np.count_nonzero(hard == 2) + 5)
    found = list(_level_sets_within(problem, s, np.ones(problem.n), (target, target),
                                    (0.5,)))
    assert found
    cands = [make() for _, make in found]
    for (energy, _), cand in zip(found, cands):
        assert energy == pytest.approx(problem.energy(cand + 1), rel=1e-12)
        assert cand.sum() == target
        assert np.all(cand[hard == 2] == 1) and np.all(cand[hard == 1] == 0)
    free = hard == 0
    chosen = cands[-1].astype(bool)
    # every free pixel taken has a value at least that of every free pixel left out
    assert s[chosen & free].min() >= s[~chosen & free].max()


def _grid_args(problem, start):
    """The grid kernel's arguments for the K = 2 relaxation from ``start``."""
    from solver.mrf.polish.tv import grid_terms

    cost, offsets, tau, gamma = grid_terms(problem, 1.0)
    u = (problem.unary[:, 1] - problem.unary[:, 0]).astype(np.float32)
    return cost, offsets, u, problem.movable, tau, np.asarray(start, np.float32).copy(), \
        np.float32(0.5 / gamma)


@pytest.mark.parametrize("seed", range(3))
def test_calls_that_go_on_from_one_another_make_the_steps_of_one_call(seed):
    """The duals and the extrapolation handed from call to call: blocks of 25 and 50 steps end
    where one call of 200 does, bit for bit, sparse steps included (from polished labels)."""
    from solver.mrf.polish import tv_kernels

    problem = random_problem((23, 31), k=2, seed=seed, hard_fraction=0.05)
    settled = polish_labels(problem, np.random.default_rng(seed).integers(1, 3, problem.shape))
    cost, offsets, u, free, tau, s, sigma = _grid_args(problem, settled.ravel() - 1)
    want = s.copy()
    steps, sparse = tv_kernels.tv_iterate_grid((cost, offsets, u, free, tau), want, sigma, 200, 0.0,
                                               10.0)
    assert sparse > 0  # (fewer than 200 steps: nothing left to move)
    for block in (25, 50):
        got = s.copy()
        p, bar = np.zeros((4, problem.n), np.float32), got.copy()
        for _ in range(200 // block):
            tv_kernels.tv_iterate_grid((cost, offsets, u, free, tau), got, sigma, block, 0.0, 10.0,
                                       np.inf, -np.inf, p, bar)
        assert np.array_equal(got, want), block


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_the_dual_value_bounds_every_labelling_from_below(seed):
    """At any duals within their clips (the relaxation's own after some steps, and random
    ones) the dual objective is at most the least energy (less its constant), and after
    enough steps it comes within a hair of it."""
    from solver.mrf.polish import tv_kernels
    from solver.mrf.polish.tv import start_value

    problem = random_problem((3, 4), k=2, seed=seed, hard_fraction=0.15 if seed % 2 else 0.0)
    best, arg = brute_force(problem)
    cost, offsets, u, free, tau, s, sigma = _grid_args(problem, arg.ravel() - 1)
    constant = problem.energy(arg.ravel()) - start_value(cost, offsets, u, s)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        p = (rng.uniform(-1, 1, cost.shape) * cost).astype(np.float32)
        assert tv_kernels.grid_dual_value(offsets, u, free, s, p) + constant <= best + 1e-6
    # an optimal start is proved so: the steps stop at the first test of the gap
    tight = s.copy()
    steps, _ = tv_kernels.tv_iterate_grid((cost, offsets, u, free, tau), tight, sigma, 20000, 0.0,
                                          0.0, start_value(cost, offsets, u, s),
                                          1e-6 * max(1.0, abs(best)))
    assert steps < 20000


def test_the_dual_value_with_an_area_row_adds_nu_w_to_each_gradient():
    """One dual value serves the plain and the area relaxation: an area row with ``nu = 0`` is
    the plain value bit for bit, and a row with ``nu`` is the plain value of the unaries
    ``u + nu w`` (the gradient's only change)."""
    from solver.mrf.polish import tv_kernels

    problem = random_problem((9, 13), k=2, seed=3, hard_fraction=0.1)
    cost, offsets, u, free, _, s, _ = _grid_args(problem, np.zeros(problem.n, np.int64))
    rng = np.random.default_rng(3)
    p = (rng.uniform(-1, 1, cost.shape) * cost).astype(np.float32)
    w = rng.uniform(0.5, 2.0, problem.n)
    plain = tv_kernels.grid_dual_value(offsets, u, free, s, p)
    assert tv_kernels.grid_dual_value(offsets, u, free, s, p, 0.0, w) == plain
    nu = 0.37
    shifted = (u + (nu * w).astype(np.float32)).astype(u.dtype)
    assert tv_kernels.grid_dual_value(offsets, u, free, s, p, nu, w) == pytest.approx(
        tv_kernels.grid_dual_value(offsets, shifted, free, s, p), rel=1e-5, abs=1e-4)
    assert tv_kernels.grid_dual_value(offsets, u, free, s, p, nu, w) != plain


def test_the_gap_test_stops_the_steps_only_once_the_start_is_proved_near_optimal():
    """From the optimum the steps stop early; from a poor labelling, whose gap stays large,
    they run to the end."""
    from solver.mrf.polish import tv_kernels
    from solver.mrf.polish.tv import start_value

    problem = random_problem((23, 31), k=2, seed=4)
    best = solve_mrf(problem, "mincut").labels.ravel() - 1
    tol = 1e-5 * abs(problem.energy(best + 1))
    for start, stops in ((best, True), (1 - best, False)):
        cost, offsets, u, free, tau, s, sigma = _grid_args(problem, start)
        steps, _ = tv_kernels.tv_iterate_grid((cost, offsets, u, free, tau), s, sigma, 400, 0.0,
                                              0.0, start_value(cost, offsets, u, s), tol)
        assert (steps < 400) == stops


def test_the_start_value_is_summed_in_float64():
    """The gap test compares the start's value with the dual objective to about 1e-5 of the
    energy, while the value itself can be several times the energy (its constant left out): on
    a large image a float32 sum of it erred by more than the tolerance, and the steps stopped
    at once on a labelling 6e-5 above the optimum. The value must match an exact sum of the
    same float32 terms to float64's precision, pixel order and thread count aside."""
    import math

    from solver.mrf.polish.tv import start_value

    rng = np.random.default_rng(7)
    n, width = 600_000, 1000
    u = rng.normal(40.0, 30.0, n).astype(np.float32)
    s = (rng.random(n) < 0.5).astype(np.float32)
    cost = rng.uniform(0.0, 20.0, (4, n)).astype(np.float32)
    offsets = np.array([-1, -width + 1, -width, -width - 1, 1, width - 1, width, width + 1],
                       dtype=np.int64)
    half = s.copy()
    half[::3] = 0.5  # values inside the box too
    for values in (s, half):
        terms = [u.astype(np.float64) * values]
        for q in range(4):
            o = int(offsets[4 + q])
            terms.append(cost[q, :n - o].astype(np.float64)
                         * np.abs(values[:n - o] - values[o:]))
        exact = math.fsum(np.concatenate(terms))
        assert abs(start_value(cost, offsets, u, values) - exact) <= 1e-12 * abs(exact)


def test_rounds_of_fusion_stop_once_one_takes_nothing_and_reach_the_optimum():
    """``every``: from a poor start the rounds go on while they take regions and end at the
    optimum; from the optimum the gap test stops the first round and nothing is taken."""
    from solver.mrf.polish.tv import GridRelaxation, grid_terms

    problem = random_problem((23, 31), k=2, seed=6)
    best = solve_mrf(problem, "mincut").labels.ravel() - 1
    lab = np.zeros(problem.n, np.int64)
    fuse_tv_into(problem, lab, 4000, 1.0, (0.1, 0.3, 0.5, 0.7, 0.9), gap=1e-7, every=100)
    assert problem.energy(lab + 1) == pytest.approx(problem.energy(best + 1), rel=1e-9)
    at_best = best.astype(np.int64).copy()
    assert fuse_tv_into(problem, at_best, 4000, 1.0, (0.5,), gap=1e-5, every=100) == 0
    relax = GridRelaxation(problem, best, grid_terms(problem, 1.0), gap=1e-5)
    assert relax.run(2000, 0.0) and relax.steps < 2000


def _rounds_asked(monkeypatch):
    """The steps each ``GridRelaxation.run`` call is asked for, in a list: every step runs (no
    stopping test) and every round's fusion takes a region."""
    from solver.mrf.polish import tv

    asked = []

    def run(self, iterations, tol):
        asked.append(iterations)
        self.steps += iterations
        return False

    monkeypatch.setattr(tv.GridRelaxation, "run", run)
    monkeypatch.setattr(tv, "_fuse_levels", lambda *a: 1)
    return asked


@pytest.mark.parametrize("every, later, want", [
    (100, 50, [100, 50, 50, 50, 50]),
    (100, None, [100, 100, 100]),
    (None, 50, [300]),    # no rounds: one fusion after every step
])
def test_the_first_round_has_every_steps_and_the_later_ones_next_every(monkeypatch, every,
                                                                       later, want):
    """``fuse_tv_into(..., every, next_every)``: the first round runs ``every`` steps and each
    later one ``next_every`` (``every`` when None), up to the most steps."""
    problem = random_problem((23, 31), k=2, seed=6)
    asked = _rounds_asked(monkeypatch)
    lab = np.zeros(problem.n, np.int64)
    fuse_tv_into(problem, lab, 300, 1.0, (0.5,), every=every, next_every=later)
    assert asked == want


def test_the_proven_gap_bounds_the_true_gap_and_closes_at_the_optimum():
    """``GridRelaxation.proven_gap``: never below the labels' true distance from the optimum
    (as a fraction of their energy), and near 0 for the optimum once the steps converge."""
    from solver.mrf.polish.tv import GridRelaxation, grid_terms

    problem = random_problem((23, 31), k=2, seed=4)
    best = solve_mrf(problem, "mincut").labels.ravel() - 1
    e_best = problem.energy(best + 1)
    poor = np.zeros(problem.n, np.int64)
    relax = GridRelaxation(problem, poor, grid_terms(problem, 1.0))
    for _ in range(4):
        relax.run(25, 0.0)
        for lab in (poor, best, 1 - best):
            e = problem.energy(lab + 1)
            assert relax.proven_gap(lab) >= (e - e_best) / max(1.0, abs(e)) - 1e-6
    relax.run(4000, 0.0)
    assert relax.proven_gap(best) == pytest.approx(0.0, abs=1e-5)
    assert relax.proven_gap(poor) > 0.01


def test_after_a_restart_the_gap_test_proves_the_new_labels():
    """The gap test proves the labels it was last (re)started at: started at a poor labelling
    the steps run until the relaxation stops moving; restarted at the optimum
    (``restart_gap``, what a fusion that takes regions does) the gap test stops them sooner."""
    from solver.mrf.polish.tv import GridRelaxation, grid_terms

    problem = random_problem((23, 31), k=2, seed=4)
    best = solve_mrf(problem, "mincut").labels.ravel() - 1
    poor = np.zeros(problem.n, np.int64)
    steps = []
    for restart in (False, True):
        relax = GridRelaxation(problem, poor, grid_terms(problem, 1.0), gap=1e-5)
        if restart:
            relax.restart_gap(best)
        relax.run(4000, 0.0)
        steps.append(relax.steps)
    assert steps[1] < steps[0] < 4000


def _recorded_rounds(monkeypatch, take=None):
    """Each ``GridRelaxation.run`` call's steps asked and stop, in a list; ``take(n, real)``
    (optional) replaces the ``n``-th fusion's result."""
    from solver.mrf.polish import tv

    rounds, run, fuse = [], tv.GridRelaxation.run, tv._fuse_levels

    def recording(self, iterations, tol):
        stopped = run(self, iterations, tol)
        rounds.append((iterations, stopped))
        return stopped

    def fusing(*args):
        return take(len(rounds), lambda: fuse(*args)) if take else fuse(*args)

    monkeypatch.setattr(tv.GridRelaxation, "run", recording)
    monkeypatch.setattr(tv, "_fuse_levels", fusing)
    return rounds


def test_a_fusion_that_takes_regions_restarts_the_gap_test(monkeypatch):
    """In ``fuse_tv_into`` the labels after a fusion that took regions are what the next
    round's gap test proves: from a poor start the rounds end inside a round, at the optimum,
    not with a whole round more that takes nothing."""
    problem = random_problem((23, 31), k=2, seed=4)
    best = solve_mrf(problem, "mincut").labels.ravel() - 1
    rounds = _recorded_rounds(monkeypatch)
    lab = np.zeros(problem.n, np.int64)
    fuse_tv_into(problem, lab, 4000, 1.0, (0.1, 0.3, 0.5, 0.7, 0.9), gap=1e-5, every=100)
    assert problem.energy(lab + 1) == pytest.approx(problem.energy(best + 1), rel=1e-9)
    assert len(rounds) >= 2 and rounds[-1][1]


@pytest.mark.parametrize("proof", [None, 1e-3])
def test_an_empty_fusion_ends_the_steps_only_once_the_labels_are_proved(monkeypatch, proof):
    """With ``proof``, a round whose fusion takes nothing ends the steps only if the labels are
    proved within ``proof`` of the optimum: here the first fusion is made to take nothing from
    a poor start, and with the test the rounds go on (past ``iterations``, up to
    ``proof_iterations``) to the optimum; without it they end at the poor start."""
    problem = random_problem((23, 31), k=2, seed=4)
    best = solve_mrf(problem, "mincut").labels.ravel() - 1
    rounds = _recorded_rounds(monkeypatch, lambda n, real: 0 if n == 1 else real())
    lab = np.zeros(problem.n, np.int64)
    before = problem.energy(lab + 1)
    fuse_tv_into(problem, lab, 25, 1.0, (0.1, 0.3, 0.5, 0.7, 0.9), gap=1e-5, every=25,
                 proof=proof, proof_iterations=4000)
    if proof is None:
        assert len(rounds) == 1 and problem.energy(lab + 1) == before
    else:
        assert len(rounds) > 1
        assert problem.energy(lab + 1) == pytest.approx(problem.energy(best + 1), rel=1e-9)


def test_a_stop_ends_the_tv_rounds_and_the_expansion_sweep(monkeypatch):
    """``stop``: polled after each K = 2 round's fusion and before each K > 2 label's move; True
    ends them there (here every fusion is made to take a region, so only the stop ends them)."""
    from solver.mrf.polish import tv
    from solver.mrf.polish.tv import fuse_tv_expansions_into

    problem = random_problem((23, 31), k=2, seed=4)
    for stop, want in ((None, 4), (lambda: True, 1)):
        rounds = _recorded_rounds(monkeypatch, lambda n, real: 1)
        lab = np.zeros(problem.n, np.int64)
        fuse_tv_into(problem, lab, 100, 1.0, (0.5,), every=25, stop=stop)
        assert len(rounds) == want
    moves = []
    monkeypatch.setattr(tv, "_fuse_expansion", lambda p, lab, alpha, *a: moves.append(alpha) or 0)
    calls = []
    fuse_tv_expansions_into(random_problem((9, 11), k=4, seed=1), np.zeros(99, np.int64), 25,
                            1.0, (0.5,), stop=lambda: calls.append(1) or len(calls) > 2)
    assert moves == [0, 1]


def test_with_the_proof_the_rounds_still_end_at_iterations_once_proved(monkeypatch):
    """A round never runs past ``iterations`` while that count is not reached (its check
    comes there), with the proof as without it; proved, the steps end there."""
    problem = random_problem((23, 31), k=2, seed=6)
    asked = _rounds_asked(monkeypatch)
    for proof in (None, 1e9):
        asked.clear()
        fuse_tv_into(problem, np.zeros(problem.n, np.int64), 300, 1.0, (0.5,), every=200,
                     proof=proof, proof_iterations=1200)
        assert asked == [200, 100], proof


def _rectangle_problem(seed: int, shape=(40, 57), box=(9, 31, 12, 44)):
    """A K = 2 problem whose pixels outside ``box`` (rows y0..y1-1, columns x0..x1-1) are hard
    at label 1, as a rectangle's outside is, with a few hard pixels inside too."""
    from solver.mrf.build.problem import replace_problem

    problem = random_problem(shape, k=2, seed=seed, hard_fraction=0.03)
    hard = problem.hard.reshape(shape).copy()
    y0, y1, x0, x1 = box
    inside = np.zeros(shape, bool)
    inside[y0:y1, x0:x1] = True
    hard[~inside] = 1
    return replace_problem(problem, hard=hard.ravel().astype(np.int32))


@pytest.mark.parametrize("seed", range(3))
def test_the_relaxation_on_the_free_pixels_box_is_the_whole_grids_bit_for_bit(seed):
    """With a rectangle's outside hard, the TV steps run on the box of the free pixels alone
    (a grid a third of the image here), and give every pixel the value the steps on the whole
    grid give it, sparse steps and the gap test included. (Where the values stop changing a
    sparse step sees it at once and ends the call; a step over every pixel goes on unchanged,
    so the counts of steps may differ, never the values.)"""
    from solver.mrf.polish.tv import GridRelaxation, grid_terms, movable_box

    problem = _rectangle_problem(seed)
    box = movable_box(problem)
    assert box == (8, 32, 11, 45)  # (the free pixels' box, grown by one)
    guess = np.random.default_rng(seed).integers(1, 3, problem.n)
    lab = np.where(problem.hard > 0, problem.hard, guess).astype(np.int64) - 1
    whole = GridRelaxation(problem, lab, grid_terms(problem, 1.0), gap=1e-9)
    boxed = GridRelaxation(problem, lab, grid_terms(problem, 1.0, box=box), gap=1e-9, box=box)
    assert boxed.inner.size == (32 - 8) * (45 - 11) < problem.n / 2
    for block in (25, 100, 75):
        whole.run(block, 0.0)
        boxed.run(block, 0.0)
        assert np.array_equal(whole.s, boxed.s)
    assert not np.array_equal(whole.s, lab)  # (the steps did move values)
    assert abs(whole.proven_gap(lab) - boxed.proven_gap(lab)) <= 1e-6


def test_the_tv_proposals_take_the_same_regions_on_the_box_as_on_the_whole_grid(monkeypatch):
    """:func:`fuse_tv_into` on a rectangle problem: the same labels whether its steps run on
    the free pixels' box (the default) or on the whole grid (the box turned off)."""
    from solver.mrf.polish import tv

    problem = _rectangle_problem(7, shape=(60, 80), box=(10, 50, 15, 70))
    start = np.where(problem.hard > 0, problem.hard, 2).astype(np.int64) - 1
    got = start.copy()
    tv.fuse_tv_into(problem, got, 300, 1.0, (0.5,), every=100)
    monkeypatch.setattr(tv, "BOX_BELOW", 0.0)  # (no box is small enough: the whole grid)
    assert tv.movable_box(problem) is None
    want = start.copy()
    tv.fuse_tv_into(problem, want, 300, 1.0, (0.5,), every=100)
    assert np.array_equal(got, want)
    assert not np.array_equal(got, start)  # (the steps did take regions)


def test_no_box_where_the_free_pixels_span_the_image_or_none_is_free():
    """The box is only for free pixels that leave most of the image hard."""
    from solver.mrf.build.problem import replace_problem
    from solver.mrf.polish.tv import movable_box

    problem = random_problem((20, 30), k=2, seed=1, hard_fraction=0.1)
    assert movable_box(problem) is None  # (free pixels at the corners)
    assert movable_box(replace_problem(problem, hard=np.ones(problem.n, np.int32))) is None
    one = np.ones(problem.n, np.int32)
    one[5 * 30 + 7] = 0  # a single free pixel: a box of 3 x 3 round it
    assert movable_box(replace_problem(problem, hard=one)) == (4, 7, 6, 9)


def _best_within(problem, lo: int, hi: int) -> tuple[float, np.ndarray]:
    """The least energy, and a labelling (0-based, flat) that has it, among all labellings
    whose label-2 area is within ``[lo, hi]`` pixels (hard pixels kept)."""
    best, arg = np.inf, None
    hard = problem.hard.ravel()
    for bits in range(2 ** problem.n):
        lab = (bits >> np.arange(problem.n)) & 1
        if not lo <= lab.sum() <= hi or np.any((hard > 0) & (lab + 1 != hard)):
            continue
        e = problem.energy(lab + 1)
        if e < best:
            best, arg = e, lab
    return best, arg


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_area_relaxation_gap_bounds_every_labelling_within_the_bounds(seed):
    """The area relaxation's duality gap is a proof: the start's energy less the gap is at most
    the least energy of any labelling within the bounds (enumerated). With bounds that do not
    bind the relaxation is tight, and from the optimum it stops once the gap proves it."""
    from solver.mrf.polish.tv import tv_relaxation_area

    problem = random_problem((3, 5), k=2, seed=seed)
    lo, hi = 5, 7
    best, arg = _best_within(problem, lo, hi)
    start = np.zeros(problem.n, np.int64)
    start[:6] = 1  # (area 6: within the bounds)
    w = np.ones(problem.n)
    _, gap = tv_relaxation_area(problem, start, (lo, hi), w, 3000, 3.0, gap=1e-12)
    e = problem.energy(start + 1)
    scale = max(1.0, abs(e))
    assert np.isfinite(gap) and e - gap * scale <= best + 1e-4 * scale
    assert tv_relaxation_area(problem, start, (lo, hi), w, 400, 3.0)[1] == np.inf  # (no test)
    free_best, free_arg = _best_within(problem, 0, problem.n)
    _, at_best = tv_relaxation_area(problem, free_arg, (0, problem.n), w, 20_000, 3.0,
                                    gap=1e-3)
    assert at_best <= 1e-3


def test_level_sets_within_bounds_come_with_their_own_energies():
    """On the grid's own edge list the level sets' energies come from one pass over all levels:
    each is the energy of the set it builds, and only the sets within the bounds come."""
    from solver.mrf.polish.constrained import _level_sets_within

    problem = random_problem((8, 9), k=2, seed=4, hard_fraction=0.1)
    s = np.random.default_rng(1).random(problem.n)
    hard = problem.hard.ravel()
    s[hard == 1], s[hard == 2] = 0.0, 1.0
    levels = tuple(round(0.1 * i, 1) for i in range(1, 10))
    area = (0.3 * problem.n, 0.6 * problem.n)
    found = [(e, make()) for e, make in _level_sets_within(problem, s, np.ones(problem.n),
                                                           area, levels)]
    inside = [t for t in levels if area[0] <= np.count_nonzero(s > t) <= area[1]]
    assert len(found) >= len(inside) > 0
    for (e, cand), t in zip(found, inside):
        np.testing.assert_array_equal(cand, (s > t).astype(np.int32))
        assert e == pytest.approx(problem.energy(cand + 1), rel=1e-12)
