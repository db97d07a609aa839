import numpy as np
import pytest
import scipy.sparse as sp

from solver import ADMMParams, solve_bqp
from solver.admm.params import CHOSEN_FIELDS, FALLBACKS
from tests.solver.conftest import brute_force, random_psd_bqp


@pytest.mark.slow
def test_finds_global_optimum_on_random_psd_bqps(backend):
    hits = 0
    for seed in range(30):
        A, b = random_psd_bqp(seed)
        res = solve_bqp(A, b, backend=backend)
        assert set(np.unique(res.x)) <= {0, 1}
        assert res.x.shape == b.shape
        assert np.isclose(res.objective, res.x @ A @ res.x + b @ res.x)
        hits += res.objective <= brute_force(A, b) + 1e-9
    assert hits >= 27


@pytest.mark.slow
def test_admm_alone_does_most_of_the_work():
    """Without the final flip descent, ADMM's own best point is still usually optimal."""
    hits = sum(
        solve_bqp(*random_psd_bqp(seed), polish=False).objective <= brute_force(*random_psd_bqp(seed)) + 1e-9
        for seed in range(30)
    )
    assert hits >= 24


def test_sparse_and_dense_inputs_agree():
    A, b = random_psd_bqp(3)
    dense = solve_bqp(A, b)
    sparse = solve_bqp(sp.csr_matrix(A), b)
    np.testing.assert_array_equal(dense.x, sparse.x)


def test_indefinite_matrix_is_handled_by_the_binary_shift():
    rng = np.random.default_rng(11)
    M = rng.normal(size=(10, 10))
    A = (M + M.T) / 2
    b = rng.normal(size=10)
    res = solve_bqp(A, b)
    assert np.isclose(res.objective, res.x @ A @ res.x + b @ res.x)
    assert res.objective <= brute_force(A, b) + 0.05 * abs(brute_force(A, b))


def _onehot(groups, k):
    rows = np.repeat(np.arange(groups), k)
    return sp.csr_matrix((np.ones(groups * k), (rows, np.arange(groups * k))), shape=(groups, groups * k))


@pytest.mark.parametrize("k", [3, 4])
def test_one_hot_equalities_hold_exactly(backend, k):
    groups = 12 // k
    solved = 0
    for seed in range(8):
        A, b = random_psd_bqp(seed, n_range=(12, 13))
        C = _onehot(groups, k)
        res = solve_bqp(A, b, eq=(C, np.ones(groups)), backend=backend)
        assert res.feasible
        np.testing.assert_array_equal(C @ res.x, np.ones(groups))
        best = brute_force(A, b, feasible=lambda X: np.all(X @ C.T.toarray() == 1, axis=1))
        assert res.objective >= best - 1e-9
        solved += res.objective <= best + 1e-9
    assert solved >= 6


def test_inequality_constraints_hold(backend):
    rng = np.random.default_rng(5)
    n = 12
    M = rng.normal(size=(n, n))
    A = M.T @ M / n
    b = -3.0 - rng.random(n)  # unconstrained optimum switches many variables on
    C2 = sp.csr_matrix(np.ones((1, n)))
    res = solve_bqp(A, b, ineq=(C2, [3.0]), backend=backend)
    assert res.feasible
    assert res.x.sum() <= 3
    best = brute_force(A, b, feasible=lambda X: X.sum(axis=1) <= 3)
    assert res.objective <= best + 0.02 * abs(best)


def test_fixed_variables_keep_their_values(backend):
    A, b = random_psd_bqp(7)
    n = len(b)
    idx = np.array([0, 3, n - 1])
    val = np.array([1, 0, 1])
    res = solve_bqp(A, b, fixed=(idx, val), backend=backend)
    np.testing.assert_array_equal(res.x[idx], val)
    free = np.setdiff1d(np.arange(n), idx)
    best = brute_force(A, b, feasible=lambda X: np.all(X[:, idx] == val, axis=1))
    assert res.objective <= best + 1e-9
    assert np.allclose(res.x_continuous[idx], val)
    assert res.x_continuous.shape == (n,)
    assert free.size == n - 3


def test_fixed_variables_with_one_hot_constraints():
    A, b = random_psd_bqp(2, n_range=(12, 13))
    C = _onehot(4, 3)
    res = solve_bqp(A, b, eq=(C, np.ones(4)), fixed=([0, 4], [1, 1]))
    assert res.x[0] == 1 and res.x[4] == 1 and res.x[1] == 0 and res.x[2] == 0
    np.testing.assert_array_equal(C @ res.x, np.ones(4))


def test_all_variables_fixed():
    A, b = random_psd_bqp(1)
    n = len(b)
    x = np.arange(n) % 2
    res = solve_bqp(A, b, fixed=(np.arange(n), x))
    np.testing.assert_array_equal(res.x, x)
    assert np.isclose(res.objective, x @ A @ x + b @ x)


def test_callback_sees_every_iteration_and_can_stop(backend):
    A, b = random_psd_bqp(4)
    seen = []

    def cb(state):
        seen.append(state.iteration)
        assert state.x.shape == b.shape
        assert state.residual_box >= 0 and state.rho > 0
        return state.iteration == 5

    res = solve_bqp(A, b, callback=cb, backend=backend)
    assert seen == [1, 2, 3, 4, 5]
    assert res.iterations == 5 and len(res.history) == 5
    assert res.status == "cancelled" and not res.converged
    assert set(np.unique(res.x)) <= {0, 1}


def test_a_callbacks_true_stops_and_the_history_is_full():
    A, b = random_psd_bqp(4)
    full = solve_bqp(A, b)
    assert full.converged
    assert len(full.history) == full.iterations
    assert [r.iteration for r in full.history] == list(range(1, full.iterations + 1))
    assert full.time_s > 0
    res = solve_bqp(A, b, callback=lambda s: s.iteration == 3)
    assert res.iterations == 3 and res.status == "cancelled"


def test_rho_grows_and_is_capped():
    A, b = random_psd_bqp(4)
    res = solve_bqp(A, b, rho_growth=2.0, rho_max=1.0, max_iter=40)
    rhos = [r.rho for r in res.history]
    assert rhos[1] == pytest.approx(2 * rhos[0])
    assert max(rhos) <= rhos[0] / FALLBACKS["rho0"] * 1.0 + 1e-12


def test_continuous_iterates_become_binary():
    A, b = random_psd_bqp(9)
    res = solve_bqp(A, b)
    xc = res.x_continuous
    assert np.max(np.minimum(np.abs(xc), np.abs(xc - 1))) < 1e-2


def test_warm_start_from_solution_converges_fast():
    A, b = random_psd_bqp(6)
    cold = solve_bqp(A, b)
    scale = cold.history[0].rho / FALLBACKS["rho0"]
    warm = solve_bqp(A, b, x0=cold.x_continuous, rho0=cold.history[-1].rho / scale)
    assert warm.iterations < cold.iterations
    assert warm.objective <= cold.objective + 1e-9


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(A=np.ones((3, 4)), b=np.ones(3)), "square"),
        (dict(A=np.eye(3), b=np.ones(4)), "b must have 3 entries"),
        (dict(A=np.array([[1.0, 2.0], [0.0, 1.0]]), b=np.ones(2)), "symmetric"),
        (dict(A=np.array([[np.nan, 0.0], [0.0, 1.0]]), b=np.ones(2)), "non-finite"),
        (dict(A=np.eye(2), b=np.array([1.0, np.inf])), "non-finite"),
        (dict(A=np.eye(3), b=np.ones(3), fixed=([0], [0.5])), "0 or 1"),
        (dict(A=np.eye(3), b=np.ones(3), fixed=([0, 0], [0, 1])), "conflicting"),
        (dict(A=np.eye(3), b=np.ones(3), fixed=([5], [1])), "fixed indices"),
        (dict(A=np.eye(3), b=np.ones(3), fixed=([0, 1], [1, 1]),
              eq=(np.array([[1.0, 1.0, 0.0]]), [1.0])), "infeasible"),
        (dict(A=np.eye(3), b=np.ones(3), eq=(np.ones((1, 4)), [1.0])), "3 columns"),
        (dict(A=np.eye(3), b=np.ones(3), p=0), "p must be"),
        (dict(A=np.eye(3), b=np.ones(3), p=1.5), "p = 2 only"),
        (dict(A=np.eye(3), b=np.ones(3), backend="tpu"), "unknown backend"),
        (dict(A=np.eye(3), b=np.ones(3), rho0=float("nan")), "rho0 must be a finite"),
        (dict(A=np.eye(3), b=np.ones(3), gamma=3.0), "gamma"),
        (dict(A=np.eye(3), b=np.ones(3), max_iter=0), "max_iter"),
        (dict(A=np.eye(3), b=np.ones(3), bogus=1), "unknown ADMM parameter"),
        (dict(A=np.eye(3), b=np.ones(3), x0=np.ones(2)), "x0 must have 3 entries"),
    ],
)
def test_bad_arguments_raise_clear_value_errors(kwargs, match):
    A = kwargs.pop("A")
    b = kwargs.pop("b")
    with pytest.raises(ValueError, match=match):
        solve_bqp(A, b, **kwargs)


def test_params_dataclass_defaults_are_valid():
    p = ADMMParams().validated()
    assert p.p == 2.0 and p.rho0 is None and p.rho_growth is None and p.pcg_maxiter is None
    r = p.resolved()
    assert (r.rho0, r.rho_growth, r.pcg_maxiter) == tuple(FALLBACKS[f] for f in CHOSEN_FIELDS)


def test_resolved_fills_only_the_fields_left_to_the_problem():
    p = ADMMParams(rho0=0.2)
    r = p.resolved(rho0=9.0, pcg_maxiter=3)
    assert (r.rho0, r.rho_growth, r.pcg_maxiter) == (0.2, FALLBACKS["rho_growth"], 3)
    assert r.resolved() is r  # nothing left to choose
    with pytest.raises(ValueError, match="not max_iter"):
        p.resolved(max_iter=3)


def test_given_names_what_differs_from_the_defaults():
    assert ADMMParams().given() == {}
    p = ADMMParams.from_kwargs(rho0=0.5, max_iter=40)
    # (0.5 is the fallback, but set: a small problem then keeps it instead of the slow schedule)
    assert p.given() == {"rho0": 0.5, "max_iter": 40}
    assert ADMMParams.from_kwargs(**p.given()) == p


def test_a_bqp_run_takes_the_fallbacks_for_the_fields_left_none():
    A, b = random_psd_bqp(5)
    left = solve_bqp(A, b, max_iter=30)
    given = solve_bqp(A, b, max_iter=30, **FALLBACKS)
    assert [r.rho for r in left.history] == [r.rho for r in given.history]
    np.testing.assert_array_equal(left.x, given.x)
