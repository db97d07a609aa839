"""``solve_bqp`` and ``ADMMParams`` on bad or extreme inputs: scale, parameter types, infeasible rows, large dense matrices, singular matrices."""

import importlib
import logging
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from solver import ADMMParams, solve_bqp
from solver.admm import systems
from solver.admm.params import CHOSEN_FIELDS, INTEGER_FIELDS
from solver.admm.systems import as_matrix, min_eigenvalue
from solver.bqp import one_flip_descent
from tests.solver.conftest import brute_force


def _indefinite(seed, n=6):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n))
    return (M + M.T) / 2, rng.normal(size=n)


# --------------------------------------------------------------- item 6: scale
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_solution_and_scaled_objective_at_every_scale(seed):
    A, b = _indefinite(seed)
    ref = solve_bqp(A, b)
    if seed < 2:  # seed 1 is the example (all ones, "converged", at 1e-28 before)
        assert ref.x @ A @ ref.x + b @ ref.x == pytest.approx(brute_force(A, b), rel=1e-12)
    for k in (-30, -28, -24, -20, -12, -6, 6, 12, 20, 24, 30):
        s = 10.0 ** k
        seen = []
        res = solve_bqp(A * s, b * s, callback=lambda st: seen.append(st.objective_rounded))
        f = float(res.x @ A @ res.x + b @ res.x)
        assert np.array_equal(res.x, ref.x), k
        assert res.status == "converged"
        assert res.objective == pytest.approx(s * f, rel=1e-12), k
        # the history and the callback report at the caller's scale too
        assert res.history[res.best_iteration - 1].objective_rounded == pytest.approx(
            s * f, rel=1e-9, abs=1e-9 * s)
        assert seen == [r.objective_rounded for r in res.history]


def test_flip_descent_threshold_is_relative():
    # one flip lowers the objective by 1e-20: a real improvement at this scale
    x, change, flips = one_flip_descent(sp.csr_matrix((1, 1)), np.array([-1e-20]), np.zeros(1))
    assert flips == 1 and x[0] == 1 and change == pytest.approx(-1e-20)


def test_symmetry_check_is_relative():
    with pytest.raises(ValueError, match="symmetric"):
        as_matrix(np.array([[1.0, 2.0], [0.0, 1.0]]) * 1e-20)
    with pytest.raises(ValueError, match="symmetric"):
        as_matrix(sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 1.0]]) * 1e-20))


# --------------------------------------------------------------- item 7: parameters
@pytest.mark.parametrize("name", INTEGER_FIELDS)
@pytest.mark.parametrize("value", [10.0, 5.5, True, "5", None, 0, -3])
def test_integer_parameters_must_be_integers(name, value):
    if value is None and name in CHOSEN_FIELDS:
        assert ADMMParams.from_kwargs(**{name: value}) == ADMMParams()  # chosen for the problem
        return
    with pytest.raises(ValueError, match=name) as err:
        ADMMParams.from_kwargs(**{name: value})
    assert "integer" in str(err.value)


@pytest.mark.parametrize("name", ["rho_max", "gamma", "tol", "rho_constraints"])
def test_only_the_fields_chosen_for_the_problem_may_be_none(name):
    with pytest.raises(ValueError, match=f"{name} must be a finite number"):
        ADMMParams.from_kwargs(**{name: None})


def test_integer_parameters_accept_numpy_integers():
    p = ADMMParams.from_kwargs(max_iter=np.int64(10), stagnation_window=np.int32(3))
    assert p.max_iter == 10 and p.stagnation_window == 3


def test_float_max_iter_is_a_value_error_in_solve_bqp():
    A, b = _indefinite(0)
    for name, value in (("max_iter", 10.0), ("stagnation_window", 5.0)):
        with pytest.raises(ValueError, match=name):
            solve_bqp(A, b, **{name: value})


@pytest.mark.parametrize("name, value", [
    ("rho0", 0.0), ("rho0", "1"), ("rho0", float("inf")), ("rho_growth", 0.5),
    ("rho_max", -1.0), ("rho_constraints", 0.0), ("gamma", 2.0), ("tol", 0.0),
    ("stagnation_tol", -1e-9), ("pcg_tol", 0.0), ("pcg_tol", 1.0), ("p", 3.0), ("fused", 1),
])
def test_every_parameter_message_names_the_parameter(name, value):
    with pytest.raises(ValueError, match=name):
        ADMMParams.from_kwargs(**{name: value})


# --------------------------------------------------------------- item 8: infeasible constraints
@pytest.mark.parametrize("kwargs, match", [
    (dict(eq=(np.ones((1, 6)), [7.0])), r"eq row 0 is infeasible.*values in \[0, 6\]"),
    (dict(eq=(-np.ones((1, 6)), [1.0])), r"eq row 0 is infeasible"),
    (dict(eq=(np.vstack([np.ones(6), 2 * np.ones(6)]), [2.0, 3.0])),
     r"eq row 1 is infeasible.*multiples of 2"),
    (dict(eq=(np.array([[3.0, 5.0, 0, 0, 0, 0]]), [4.0])), r"eq row 0 .*not the sum of any subset"),
    (dict(eq=(np.ones((1, 6)), [2.5])), r"eq row 0 .*integers, so C x is one"),
    (dict(eq=(np.array([[0.5, 0.25, 0, 0, 0, 0]]), [0.5 + 0.125])), r"eq row 0 .*subset"),
    (dict(ineq=(np.array([[1.0, 1, 0, 0, 0, 0], [1.0, -1, 0, 0, 0, 0]]), [1.0, -1.5])),
     r"ineq row 1 is infeasible.*smallest value C\[1\] x takes is -1"),
    (dict(eq=(np.ones((1, 6)), [1.0]), fixed=([0, 1], [1, 1])),
     r"eq row 0 is infeasible once the fixed"),
])
def test_rows_no_binary_point_meets_are_refused_up_front(kwargs, match):
    A, b = _indefinite(0)
    with pytest.raises(ValueError, match=match):
        solve_bqp(A, b, max_iter=100000, **kwargs)


def test_rows_that_binary_points_meet_are_accepted(caplog):
    A, b = _indefinite(0)
    C = np.array([[1.0, -1, 0, 0, 0, 0], [2.0, 2, 2, 0, 0, 0], [0.5, 0.25, 0.125, 0, 0, 0]])
    with caplog.at_level(logging.WARNING, logger="solver.bqp.solve"):
        res = solve_bqp(A, b, eq=(C, [0.0, 4.0, 0.75]),
                        ineq=(np.array([[-1.0, 0, 0, 1, 1, 1]]), [-1.0]))
    assert res.feasible
    assert not caplog.records


def test_jointly_infeasible_rows_warn(caplog):
    A, b = _indefinite(0)
    C = np.array([[1.0, 1, 0, 0, 0, 0], [1.0, 1, 0, 0, 0, 0]])  # x0 + x1 = 1 and = 2
    with caplog.at_level(logging.WARNING, logger="solver.bqp.solve"):
        res = solve_bqp(A, b, eq=(C, [1.0, 2.0]), max_iter=30)
    assert not res.feasible
    assert any("no feasible point" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)


# --------------------------------------------------------------- item 9: large dense inputs
def _householder_matrix(eigs, seed=0):
    """Dense symmetric ``H diag(eigs) H`` with a Householder ``H``, built in O(n^2)."""
    w = np.random.default_rng(seed).normal(size=eigs.size)
    w /= np.linalg.norm(w)
    dw = eigs * w
    A = np.diag(eigs)
    A -= 2.0 * np.outer(w, dw) + 2.0 * np.outer(dw, w)
    A += 4.0 * (w @ dw) * np.outer(w, w)
    return (A + A.T) / 2


@pytest.mark.slow
def test_large_dense_matrix_skips_the_full_eigendecomposition(monkeypatch):
    n = systems.DENSE_EXACT_EIGEN_MAX_N + 100
    A = _householder_matrix(np.linspace(-3.0, 5.0, n))

    def refuse(*_a, **_k):
        raise AssertionError("full eigendecomposition of a large dense matrix")

    monkeypatch.setattr(np.linalg, "eigvalsh", refuse)
    low = min_eigenvalue(A)
    assert -3.0 * (1 + 1e-2) <= low <= -3.0
    res = solve_bqp(A, np.ones(n), max_iter=3, polish=False)
    assert res.x.shape == (n,)


@pytest.mark.slow
def test_the_bound_on_a_large_sparse_matrix_is_the_same_on_every_call():
    """Beyond the exact size, a sparse matrix whose Gershgorin bound is negative gets ARPACK's
    smallest eigenvalue from a seeded start: the same bits on every call (and so the same
    shift and iterates of solve_bqp in every process)."""
    n = systems.SPARSE_EXACT_EIGEN_MAX_N + 500
    rng = np.random.default_rng(3)
    R = sp.random(n, n, density=4.0 / n, random_state=rng)
    A = sp.csr_matrix(R + R.T - sp.identity(n))
    values = {min_eigenvalue(A) for _ in range(4)}
    assert len(values) == 1
    low = values.pop()
    exact = np.linalg.eigvalsh(A.toarray())[0]
    assert exact * (1 + 2e-3) - 1e-6 <= low <= exact


def test_symmetry_check_makes_no_full_size_temporary():
    n = 2000
    A = np.random.default_rng(0).normal(size=(n, n))
    A = A + A.T
    tracemalloc.start()
    try:
        as_matrix(A)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < A.nbytes / 3  # blocks of at most 8 MB


def test_a_singular_psd_matrix_is_not_shifted_by_its_rounding_error():
    """A graph Laplacian's zero eigenvalue comes back a rounding error below zero; shifting by
    that left b (and with it the penalties' scale) a rounding error, and ADMM never met the
    constraints: 30 nodes, b = 0, exactly 10 ones."""
    import scipy.sparse as sp
    n = 30
    W = sp.random(n, n, density=0.3, random_state=1)
    W = W + W.T
    L = (sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W).tocsr()
    res = solve_bqp(L, np.zeros(n), eq=(np.ones((1, n)), np.array([10.0])))
    assert res.feasible and int(res.x.sum()) == 10
    x = res.x.astype(float)
    assert res.objective == pytest.approx(x @ (L @ x))


# --------------------------------------------------------------- argument types
def _refuse_to_iterate(monkeypatch):
    """Make any ADMM run in solve_bqp an AssertionError, so a test sees errors raised up front."""
    module = importlib.import_module("solver.bqp.solve")

    def refuse(*_a, **_k):
        raise AssertionError("solve_bqp went on to ADMM with a bad argument")

    monkeypatch.setattr(module, "LpBoxADMM", refuse)


def _complex_symmetric(A):
    Z = A.astype(np.complex128)
    Z[0, 1], Z[1, 0] = Z[0, 1] + 1j, Z[1, 0] - 1j  # Hermitian, not real
    return Z


_A0, _B0 = _indefinite(0)


def _one_line_value_error(match, A, b, **kwargs):
    """``solve_bqp(A, b, **kwargs)`` raises a one-line ValueError matching ``match``, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=match) as err:
            solve_bqp(A, b, **kwargs)
    assert "\n" not in str(err.value)


_NON_REAL = [  # (keyword arguments, the message's start)
    (dict(A=_A0.astype(object)), r"A must be a real numeric matrix, got object entries"),
    (dict(A=_complex_symmetric(_A0).astype(object)),
     r"A must be a real numeric matrix, got object entries"),
    (dict(A=np.where(np.eye(6) > 0, None, 1.0)), r"A must be a real numeric matrix, got object"),
    (dict(A=_complex_symmetric(_A0)), r"A must be a real numeric matrix, got complex128 entries"),
    (dict(A=_A0.astype(np.complex64)), r"A must be a real numeric matrix, got complex64 entries"),
    (dict(A=sp.csr_matrix(_complex_symmetric(_A0))),
     r"A must be a real numeric matrix, got complex128 entries"),
    (dict(A=_A0.astype(str)), r"A must be a real numeric matrix, got string entries"),
    (dict(A={"a": 1}), r"A must be a real numeric matrix, got \{'a': 1\}"),
    (dict(A=[[1.0, 2.0], [2.0]]), r"A must be a real numeric matrix: "),
    (dict(b=_B0.astype(complex)), r"b must be a real numeric vector, got complex128 entries"),
    (dict(b=_B0.astype(object)), r"b must be a real numeric vector, got object entries"),
    (dict(b=["x"] * 6), r"b must be a real numeric vector, got string entries"),
    (dict(x0=np.full(6, 0.5 + 0j)), r"x0 must be a real numeric vector, got complex128 entries"),
    (dict(x0=[0.5, None, 0.5, 0.5, 0.5, 0.5]), r"x0 must be a real numeric vector, got object"),
    (dict(x0="abcdef"), r"x0 must be a real numeric vector, got 'abcdef'"),
    (dict(eq=(np.ones((1, 6), dtype=complex), [3.0])),
     r"eq: C must be a real numeric matrix, got complex128 entries"),
    # (today None entries of an object C are dropped as zeros, silently)
    (dict(eq=(np.array([[1, None, 1, 1, 1, 1]], dtype=object), [3.0])),
     r"eq: C must be a real numeric matrix, got object entries"),
    (dict(eq=(np.ones((1, 6)), np.array([3 + 0j]))),
     r"eq: d must be a real numeric vector, got complex128 entries"),
    (dict(eq=(np.ones((1, 6)), ["three"])), r"eq: d must be a real numeric vector, got string"),
    (dict(ineq=(sp.csr_matrix(np.ones((1, 6), dtype=complex)), [3.0])),
     r"ineq: C must be a real numeric matrix, got complex128 entries"),
    (dict(ineq=(np.ones((1, 6)), np.array([None], dtype=object))),
     r"ineq: d must be a real numeric vector, got object entries"),
    (dict(fixed=([0], np.array([1 + 0j]))),
     r"fixed values must be a real numeric vector, got complex128 entries"),
    (dict(fixed=([0], ["one"])), r"fixed values must be a real numeric vector, got string"),
    (dict(fixed=([0], np.array([1], dtype=object))),
     r"fixed values must be a real numeric vector, got object entries"),
    (dict(fixed=([[0], [1, 2]], [1, 0, 1])), r"fixed indices must be integers: "),
    (dict(fixed=(np.array([0j]), [1])), r"fixed indices must be integers, got complex128 entries"),
    (dict(fixed=(["0"], [1])), r"fixed indices must be integers, got string entries"),
    (dict(l1=(np.ones((1, 6), dtype=complex), 1.0)),
     r"l1: C must be a real numeric matrix, got complex128 entries"),
    (dict(l1=(np.ones((1, 6)), 1 + 0j)),
     r"l1: weight must be a real number or vector, got \(1\+0j\)"),
    (dict(l1=(np.ones((1, 6)), "big")), r"l1: weight must be a real number or vector, got 'big'"),
]


@pytest.mark.parametrize("kwargs, match", _NON_REAL,
                         ids=[f"{next(iter(k))}-{i}" for i, (k, _) in enumerate(_NON_REAL)])
def test_a_non_real_argument_is_a_one_line_value_error_naming_it(kwargs, match, monkeypatch):
    """Object, complex and string entries: a ValueError naming the argument, before any
    iteration and with no warning (complex values were cast with a ComplexWarning only)."""
    _refuse_to_iterate(monkeypatch)
    kwargs = dict(kwargs)
    A, b = kwargs.pop("A", _A0), kwargs.pop("b", _B0)
    _one_line_value_error("^" + match, A, b, **kwargs)


def test_integer_and_boolean_arrays_are_numbers_but_digit_strings_are_not():
    A, b = _indefinite(0)
    Ai = np.round(4 * A).astype(np.int64)
    C = np.array([[True, True, False, False, False, False]])
    ref = solve_bqp(Ai.astype(float), np.round(b), eq=(C.astype(float), [1.0]), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_bqp(Ai, np.round(b).astype(np.int32), eq=(C, np.array([1], dtype=np.uint8)),
                        x0=None, seed=0)
        assert np.array_equal(res.x, ref.x) and res.objective == ref.objective
        # numpy would read "1" as 1.0; a string is no number here
        with pytest.raises(ValueError, match="^b must be a real numeric vector, got string"):
            solve_bqp(Ai, [str(int(v)) for v in np.round(b)])


@pytest.mark.parametrize("seed", [1.5, 1.0, np.float64(2.0), "x", True, np.True_, -1,
                                  np.int64(-2), [1, 2], np.random.default_rng(0)])
def test_seed_must_be_none_or_a_non_negative_integer(seed, monkeypatch):
    _refuse_to_iterate(monkeypatch)
    A, b = _indefinite(0)
    _one_line_value_error(r"^seed must be None or an integer >= 0, got ", A, b, seed=seed)


def test_numpy_integer_seeds_are_seeds_but_bools_are_not():
    A, b = _indefinite(0)
    ref = solve_bqp(A, b, seed=1, max_iter=20, polish=False)
    for seed in (np.int64(1), np.uint8(1)):
        res = solve_bqp(A, b, seed=seed, max_iter=20, polish=False)
        assert np.array_equal(res.x_continuous, ref.x_continuous)
    with pytest.raises(ValueError, match=r"^seed must be None or an integer >= 0, got True"):
        solve_bqp(A, b, seed=True, max_iter=20)


@pytest.mark.parametrize("callback", [5, "print", [print], True])
def test_callback_must_be_none_or_callable(callback, monkeypatch):
    _refuse_to_iterate(monkeypatch)
    A, b = _indefinite(0)
    _one_line_value_error(r"^callback must be None or callable, got ", A, b, callback=callback)
