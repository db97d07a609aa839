import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from solver import get_backend
from solver.admm.pcg import pcg


def _spd(n, seed):
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=0.05, random_state=seed)
    L = sp.csgraph.laplacian((R + R.T).tocsr())
    return (L + sp.diags(rng.uniform(0.5, 3.0, n))).tocsr()


@pytest.mark.parametrize("nrhs", [1, 4])
def test_pcg_matches_spsolve(backend, nrhs):
    be = get_backend(backend)
    A = _spd(300, 1)
    rng = np.random.default_rng(2)
    B = rng.normal(size=(300, nrhs)) if nrhs > 1 else rng.normal(size=300)
    exact = spla.spsolve(A.tocsc(), B)
    Ab = be.as_sparse(A)
    res = pcg(lambda v: Ab @ v, be.asarray(B), inv_diag=be.asarray(1.0 / A.diagonal()),
              tol=1e-10, maxiter=1000, backend=be)
    assert res.converged
    assert res.residual <= 1e-10
    assert res.iterations > 0
    np.testing.assert_allclose(be.to_numpy(res.x), exact, rtol=1e-7, atol=1e-8)


def test_warm_start_from_solution_takes_no_iterations():
    A = _spd(200, 3)
    b = np.ones(200)
    x = spla.spsolve(A.tocsc(), b)
    res = pcg(lambda v: A @ v, b, x0=x, tol=1e-8)
    assert res.iterations == 0
    assert res.converged


def test_preconditioner_reduces_iterations_on_badly_scaled_system():
    A = _spd(400, 4)
    s = sp.diags(np.logspace(0, 3, 400))
    A = (s @ A @ s).tocsr()
    b = np.ones(400)
    plain = pcg(lambda v: A @ v, b, tol=1e-8, maxiter=5000)
    jac = pcg(lambda v: A @ v, b, inv_diag=1.0 / A.diagonal(), tol=1e-8, maxiter=5000)
    assert jac.converged
    assert jac.iterations < plain.iterations


def test_per_column_preconditioner_for_shifted_block():
    A = _spd(150, 5)
    shifts = np.array([0.0, 1.0, 10.0])
    B = np.random.default_rng(6).normal(size=(150, 3))
    res = pcg(lambda V: A @ V + V * shifts, B,
              inv_diag=1.0 / (A.diagonal()[:, None] + shifts), tol=1e-10, maxiter=1000)
    for j, s in enumerate(shifts):
        exact = spla.spsolve((A + s * sp.identity(150)).tocsc(), B[:, j])
        np.testing.assert_allclose(res.x[:, j], exact, rtol=1e-7, atol=1e-8)


def test_iteration_limit_reports_not_converged():
    A = _spd(300, 7)
    res = pcg(lambda v: A @ v, np.ones(300), tol=1e-14, maxiter=2)
    assert res.iterations == 2
    assert not res.converged
    assert res.residual > 1e-14
