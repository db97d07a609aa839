"""Early fixing: pausing and resuming ADMM, restricting the objective, and whole solves."""

import numpy as np
import pytest

from solver import ADMMParams
from solver.mrf import MRFADMM, EarlyFixingOptions, SolveOptions, build_problem, solve_mrf
from solver.mrf.solve import early_fixing as freeze
from tests.solver._mrf_helpers import random_problem, shapes_image


@pytest.mark.parametrize("k", [2, 3])
def test_pause_and_resume_give_the_same_iterates_as_one_run(backend, k):
    p = random_problem((12, 13), k=k, seed=4, hard_fraction=0.1)
    params = ADMMParams(max_iter=60, tol=1e-12)  # no early stop: both runs do all 60
    straight = MRFADMM(p, backend, params, early_fixing=False).admm.run(seed=1)
    solver = MRFADMM(p, backend, params, early_fixing=False)
    first = solver.admm.run(seed=1, pause_at=17)
    assert first.status == "paused" and first.iterations == 17 and first.state.iteration == 17
    rest = solver.admm.run(resume=first.state)
    records = first.history + rest.history
    assert [r.iteration for r in records] == list(range(1, 61))
    np.testing.assert_allclose([r.objective for r in records],
                               [r.objective for r in straight.history], rtol=1e-10)
    np.testing.assert_allclose(rest.x_continuous, straight.x_continuous, atol=1e-10)
    assert rest.state is None and straight.state is None  # finished runs keep no solver arrays


def _solver_and_piece(k, shape, seed, hard_fraction, rng, share):
    """A solver of a random problem and the piece of it that early fixing makes when it keeps
    ``share`` of the free pixels (the rest fixed where a random iterate rounds)."""
    p = random_problem(shape, k=k, seed=seed, hard_fraction=hard_fraction)
    solver = MRFADMM(p, "cpu", early_fixing=False)
    m = solver.free.size
    x = rng.random(solver.admm.n)
    keep = np.sort(rng.choice(m, size=int(m * share), replace=False))
    return p, solver, x, keep, solver._restricted(keep, x)


@pytest.mark.parametrize("k", [2, 3])
def test_restricted_objective_equals_the_whole_one_with_the_fixed_pixels(k):
    rng = np.random.default_rng(0)
    p, solver, x, keep, child = _solver_and_piece(k, (9, 11), 7, 0.15, rng, 0.5)
    m = solver.free.size
    assert np.array_equal(child.free, solver.free[keep])
    labels, _ = freeze.one_hot_distance(x, k)
    gone = np.setdiff1d(np.arange(m), keep)
    assert np.array_equal(child.problem.hard.ravel()[solver.free[gone]], labels[gone] + 1)
    for trial in range(3):
        y = rng.random(child.admm.n)  # any point of the smaller problem, not only binary ones
        full = np.zeros((m, k))
        full[gone, labels[gone]] = 1.0
        full[keep] = y.reshape(keep.size, -1) if k > 2 else np.c_[y, 1 - y]
        x_full = full[:, 0] if k == 2 else full.ravel()
        assert child.admm.objective(y) == pytest.approx(solver.admm.objective(x_full),
                                                        rel=1e-10, abs=1e-9)
    binary = rng.integers(0, k, size=keep.size)
    y = np.eye(k)[binary]
    y = y[:, 0] if k == 2 else y.ravel()
    assert child.admm.objective(y) == pytest.approx(p.energy(child.labels(y)), rel=1e-10)


def test_settled_needs_the_same_label_near_its_corner_at_both_checks():
    x_prev = np.array([0.98, 0.97, 0.02, 0.5, 0.99])
    x_now = np.array([0.99, 0.90, 0.01, 0.99, 0.01])
    np.testing.assert_array_equal(freeze.settled(x_now, x_prev, 2, 0.05),
                                  [True, False, True, False, False])
    X_prev = np.array([[0.97, 0.02, 0.01], [0.5, 0.3, 0.2], [0.0, 0.02, 0.98]])
    X_now = np.array([[0.99, 0.0, 0.01], [0.99, 0.0, 0.01], [0.0, 0.06, 0.94]])
    np.testing.assert_array_equal(freeze.settled(X_now.ravel(), X_prev.ravel(), 3, 0.05),
                                  [True, False, False])


def _numpy_vertices(x, k):
    X = x.reshape(-1, k)
    lab = np.argmax(X, axis=1)
    d = np.abs(X)
    d[np.arange(X.shape[0]), lab] = np.abs(1.0 - X[np.arange(X.shape[0]), lab])
    return lab, d.max(axis=1)


@pytest.mark.parametrize("k", [3, 4, 8])
def test_compiled_vertices_and_settledness_equal_numpys(k):
    rng = np.random.default_rng(k)
    m = 500
    X = np.eye(k)[rng.integers(0, k, m)] + rng.normal(0, 0.04, (m, k))
    X[:40] = rng.random((40, k))  # undecided pixels
    X[40:60, :2] = 0.5  # ties: the first label wins
    X[60, 1] = np.nan  # a NaN is never settled
    X[61, 0] = X[61, 2] = np.nan
    prev = X + rng.normal(0, 0.01, X.shape)
    prev[70:90] = np.roll(prev[70:90], 1, axis=1)  # another label at the previous check
    lab, dist = freeze.one_hot_distance(X.ravel(), k)
    ref_lab, ref_dist = _numpy_vertices(X.ravel(), k)
    np.testing.assert_array_equal(lab, ref_lab)  # (a NaN is the largest, as for numpy)
    np.testing.assert_array_equal(dist, ref_dist)
    ref_lab0, ref_dist0 = _numpy_vertices(prev.ravel(), k)
    expected = (ref_lab == ref_lab0) & (ref_dist < 0.05) & (ref_dist0 < 0.05)
    got = freeze.settled(X.ravel(), prev.ravel(), k, 0.05)
    np.testing.assert_array_equal(got, expected)
    assert 0 < got.sum() < m - 100 and not got[60] and not got[70:90].any()


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_early_fixing_shrinks_the_system_and_keeps_the_answer(backend, k):
    image, _, strokes = shapes_image(seed=2, k=k, size=96, noise=0.15)
    p = build_problem(image, strokes, k)
    sizes, weights = [], []

    def watch(state):
        sizes.append(state.inner.x.size)
        if state.iteration % 25 == 0:
            weights.append(state.probabilities())
    fixed = MRFADMM(p, backend, early_fixing=True).run(seed=0, callback=watch)
    whole = MRFADMM(p, backend, early_fixing=False).run(seed=0)
    assert sizes[0] == MRFADMM(p, backend).admm.n
    assert sizes[-1] < sizes[0] / 2                      # most pixels left the system
    assert all(a >= b for a, b in zip(sizes, sizes[1:]))  # and never came back
    assert all(w.shape == (*p.shape, k) for w in weights)  # the live view still sees every pixel
    assert fixed.iterations == len(fixed.history) == len(sizes)
    assert fixed.admm.objective == pytest.approx(min(r.energy_rounded for r in fixed.history))
    assert fixed.energy_admm == pytest.approx(fixed.admm.objective)
    assert fixed.energy <= whole.energy + 0.001 * abs(whole.energy)


@pytest.mark.parametrize("k", [2, 3])
def test_labels_and_weights_of_a_piece_match_the_whole_image_arrays(k):
    rng = np.random.default_rng(3)
    p, solver, _, _, child = _solver_and_piece(k, (10, 12), 11, 0.2, rng, 1 / 3)
    for owner in (solver, child):
        x = rng.random(owner.admm.n)
        probs = owner.probabilities(x).reshape(p.n, k)  # the whole image's weights
        np.testing.assert_array_equal(owner.labels(x).ravel(), np.argmax(probs, axis=1) + 1)
        rows = probs[solver.free].astype(np.float64)
        expected = rows[:, 0] if k == 2 else rows.ravel()
        got = solver._weights_on_free(owner, x)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("k", [2, 3])
def test_a_one_hot_warm_start_counts_as_the_first_check(k):
    image, _, strokes = shapes_image(seed=5, k=k, size=64, noise=0.15)
    p = build_problem(image, strokes, k)
    good = solve_mrf(p, "admm", seed=0).labels
    params = ADMMParams(rho0=5.0)  # (K = 3's iterates stay near a start only under a firm pull)
    interval = freeze.check_interval(params)

    def sizes_from(x0, options=SolveOptions()):
        sizes = []
        MRFADMM(p, params=params, options=options, early_fixing=True).run(
            x0=x0, polish=False, callback=lambda s: sizes.append(s.inner.x.size))
        return sizes
    one_hot = np.eye(k)[good.ravel() - 1]
    warm = sizes_from(one_hot)
    assert warm[interval] < warm[0] / 2  # fixed at the first pause: the start was a check
    soft = sizes_from(np.full((p.n, k), 1.0 / k))
    assert soft[interval] == soft[0]  # a start that is not one-hot settles nothing
    later = sizes_from(one_hot, SolveOptions(early_fixing=EarlyFixingOptions(
        warm_start_check=False)))
    assert later[interval] == later[0] and later[2 * interval] < later[0] / 2


@pytest.mark.parametrize("k", [2, 3])
def test_k_above_two_stops_once_few_pixels_are_left_unsettled(k):
    """K > 2: the run ends at the pause where at most ``tail_fraction`` of the free pixels would
    stay free, and the polish decides them; K = 2 runs on (its band tails cost little)."""
    image, _, strokes = shapes_image(seed=2, k=k, size=96, noise=0.15)
    p = build_problem(image, strokes, k)

    def run(tail):
        sizes = []
        options = SolveOptions(early_fixing=EarlyFixingOptions(tail_fraction=tail))
        res = MRFADMM(p, options=options, early_fixing=True).run(
            seed=0, polish=False, callback=lambda s: sizes.append(s.inner.x.size))
        return res, sizes
    short, sizes = run(0.1)
    full, full_sizes = run(0.0)
    if k == 2:
        assert short.iterations == full.iterations
        return
    stop = short.iterations
    assert stop < full.iterations and stop % freeze.check_interval(ADMMParams()) == 0
    assert sizes == full_sizes[:stop]  # the same run up to the stop
    assert full_sizes[stop] <= 0.1 * full_sizes[0] < sizes[-1]  # the piece it did not build
    assert short.x_continuous.shape == (p.n, k)  # weights for every pixel still
    np.testing.assert_allclose(short.x_continuous.sum(axis=1), 1.0, atol=1e-5)
