"""Yardsticks: min-cut (exact, K = 2), alpha-expansion, LP relaxation."""

import itertools

import numpy as np
import pytest

from solver.mrf import build_problem
from solver.reference import alpha_expansion, lp_relaxation, mincut
from solver.reference.lp import project_simplex_rows
from tests.solver._mrf_helpers import brute_force, random_problem, shapes_image


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (1, 5)])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("hard_fraction", [0.0, 0.3])
def test_mincut_equals_brute_force(shape, seed, hard_fraction):
    problem = random_problem(shape, 2, seed, hard_fraction)
    best, _ = brute_force(problem)
    labels = mincut(problem)
    assert labels.shape == shape and labels.dtype == np.int32
    problem.check_hard(labels)
    assert problem.energy(labels) == pytest.approx(best, abs=1e-9)


def _data_and_smoothness(problem, labels):
    """The energy's two parts: the unaries, and the Potts pairs (2 λ W_ij per cut pair)."""
    flat = np.asarray(labels).ravel()
    data = float(problem.unary[np.arange(problem.n), flat - 1].sum())
    return data, problem.energy(labels) - data


@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("seed", range(6))
def test_expansion_within_the_potts_bound_of_brute_force(k, seed):
    """Boykov, Veksler and Zabih (PAMI 2001, Theorem 6.1): a labelling f that no expansion move
    improves has E(f) <= 2c E(f*), c = 1 for Potts. Its proof sums, over α, the expansion of f
    onto f*'s α-pixels, and gives the per-term form E(f) <= E_data(f*) + 2 E_smooth(f*), which
    needs no sign on the unaries (the form 2 E(f*) needs non-negative ones; these are
    N(0, 1)). On problems this small the bound has little slack: an α-expansion that never
    expands some label breaks it."""
    shape = (3, 3) if k == 3 else (2, 3)
    problem = random_problem(shape, k, seed, 0.2)
    best, arg = brute_force(problem)
    labels = alpha_expansion(problem, max_sweeps=100)
    problem.check_hard(labels)
    data, smooth = _data_and_smoothness(problem, arg)
    assert data + smooth == pytest.approx(best)
    energy = problem.energy(labels)
    assert best - 1e-9 <= energy <= data + 2.0 * smooth + 1e-9


@pytest.mark.parametrize("shape", [(3, 3), (2, 4)])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("hard_fraction", [0.0, 0.3])
def test_expansion_is_exact_for_two_labels_from_any_start(shape, seed, hard_fraction):
    """K = 2 without a start is one min-cut; from a start it is expansion moves, and a labelling
    no expansion move improves is then a global minimum: with S its label-1 set and S* an
    optimal one, submodularity gives E(S ∪ S*) + E(S ∩ S*) <= E(S) + E(S*), and S ∪ S*
    (expanding 1) and S ∩ S* (expanding 2) are moves, so each is >= E(S), hence E(S) <= E(S*)."""
    problem = random_problem(shape, 2, seed, hard_fraction)
    best, _ = brute_force(problem)
    assert problem.energy(alpha_expansion(problem)) == pytest.approx(best, abs=1e-9)
    rng = np.random.default_rng(seed)
    for init in (rng.integers(1, 3, shape), np.ones(shape, int), np.full(shape, 2)):
        labels = alpha_expansion(problem, init=init)
        problem.check_hard(labels)
        assert problem.energy(labels) == pytest.approx(best, abs=1e-9)


def _best_expansion_energy(problem, labels, alpha):
    """Lowest energy over every labelling that moves any set of pixels of ``labels`` to
    ``alpha`` (hard pixels keep their label), by enumeration."""
    flat = np.asarray(labels).ravel()
    movable = np.flatnonzero((flat != alpha) & ((problem.hard == 0) | (problem.hard == alpha)))
    best = problem.energy(flat)
    for mask in itertools.product((False, True), repeat=movable.size):
        moved = flat.copy()
        moved[movable[np.array(mask, bool)]] = alpha
        best = min(best, problem.energy(moved))
    return best


@pytest.mark.parametrize("shape, k, seed, init", [
    ((3, 4), 3, 12, None), ((3, 3), 3, 32, "random"), ((3, 3), 4, 18, None),
])
def test_expansion_ends_where_no_expansion_move_helps(shape, k, seed, init):
    """α-expansion stops only when no expansion move lowers the energy (what the factor-2 bound
    rests on), checked by enumerating every move. On these problems a single sweep over the
    labels is not enough (a single sweep ends 0.12, 0.99 and 0.31 above the converged energy)."""
    problem = random_problem(shape, k, seed)
    if init == "random":
        init = np.random.default_rng(seed).integers(1, k + 1, shape)
    labels = alpha_expansion(problem, init=init)
    energy = problem.energy(labels)
    for alpha in range(1, k + 1):
        assert _best_expansion_energy(problem, labels, alpha) >= energy - 1e-9, alpha


def _hard_against_unaries(k, seed=0):
    """A problem whose hard pixels all contradict the strongly preferred unary label."""
    image, truth, strokes = shapes_image(seed=seed, k=k, size=24)
    problem = build_problem(image, strokes, k)
    rng = np.random.default_rng(seed)
    pick = rng.choice(problem.n, 40, replace=False)
    hard = np.zeros(problem.n, np.int32)
    hard[pick] = (problem.unary[pick].argmax(axis=1) + 1).astype(np.int32)
    return build_problem(image, strokes, k, hard=hard.reshape(image.shape))


@pytest.mark.parametrize("k", [2, 3])
def test_hard_constraints_honoured(k):
    problem = _hard_against_unaries(k)
    if k == 2:
        problem.check_hard(mincut(problem))
    problem.check_hard(alpha_expansion(problem))
    init = np.random.default_rng(1).integers(1, k + 1, problem.shape)
    problem.check_hard(alpha_expansion(problem, init=init))
    labels, x = lp_relaxation(problem)
    problem.check_hard(labels)
    fixed = problem.hard > 0
    np.testing.assert_allclose(x[fixed, problem.hard[fixed] - 1], 1.0)


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("seed", range(2))
def test_expansion_never_worse_than_init(k, seed):
    problem = random_problem((6, 7), k, seed, 0.1)
    init = np.random.default_rng(seed).integers(1, k + 1, problem.shape)
    init = np.where(problem.hard.reshape(problem.shape) > 0, problem.hard.reshape(problem.shape), init)
    labels = alpha_expansion(problem, init=init, max_sweeps=20)
    assert problem.energy(labels) <= problem.energy(init) + 1e-9
    one_sweep = alpha_expansion(problem, init=init, max_sweeps=1)
    assert problem.energy(labels) <= problem.energy(one_sweep) + 1e-9
    if k == 2:
        assert problem.energy(labels) >= problem.energy(mincut(problem)) - 1e-9


def test_expansion_equals_mincut_for_k2():
    image, truth, strokes = shapes_image(k=2)
    problem = build_problem(image, strokes, 2)
    a, b = alpha_expansion(problem), mincut(problem)
    np.testing.assert_array_equal(a, b)
    started = alpha_expansion(problem, init=np.ones(problem.shape, int))
    assert problem.energy(started) == pytest.approx(problem.energy(b), rel=1e-9, abs=1e-6)


@pytest.mark.parametrize("k", [2, 3])
def test_synthetic_ground_truth(k):
    image, truth, strokes = shapes_image(seed=7, k=k, noise=0.1)
    problem = build_problem(image, strokes, k, seed=7)
    labels = mincut(problem) if k == 2 else alpha_expansion(problem)
    assert np.mean(labels == truth) > 0.95
    lp_labels, _ = lp_relaxation(problem)
    assert np.mean(lp_labels == truth) > 0.9


@pytest.mark.parametrize("k", [2, 3])
def test_lp_relaxation_is_a_lower_bound(k):
    problem = random_problem((5, 6), k, 3)
    labels, x = lp_relaxation(problem, max_iter=20000, tol=1e-9)
    assert x.shape == (problem.n, k)
    assert np.all(x >= -1e-12) and np.all(x <= 1 + 1e-12)
    np.testing.assert_allclose(x.sum(axis=1), 1.0)
    best = problem.energy(mincut(problem) if k == 2 else alpha_expansion(problem))
    assert problem.continuous_energy(x) <= best + 1e-6
    np.testing.assert_array_equal(labels.ravel(), x.argmax(axis=1) + 1)


def test_simplex_projection():
    rng = np.random.default_rng(0)
    v = rng.normal(0, 2, (200, 5))
    p = project_simplex_rows(v)
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(project_simplex_rows(p), p, atol=1e-12)
    # optimality: any other simplex point is no closer
    q = project_simplex_rows(rng.normal(0, 1, (200, 5)))
    assert np.all(((v - p) ** 2).sum(1) <= ((v - q) ** 2).sum(1) + 1e-12)


def test_mincut_rejects_k3():
    problem = random_problem((3, 3), 3, 0)
    with pytest.raises(ValueError, match="k = 2"):
        mincut(problem)
    with pytest.raises(ValueError, match="max_sweeps"):
        alpha_expansion(problem, max_sweeps=0)
