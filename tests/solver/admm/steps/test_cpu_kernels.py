"""The compiled CPU kernels must give what the numpy reference (also the GPU path) gives."""

import numpy as np
import pytest
import scipy.sparse as sp

from solver.admm.pcg import pcg
from solver.admm.steps import cpu_kernels
from solver.admm.systems import GenericSystem, OneHotKronSystem, _CompiledCSR, onehot_operator
from solver.backend import CPU


def _laplacian(n, seed):
    R = sp.random(n, n, density=0.02, random_state=seed)
    return sp.csgraph.laplacian((R + R.T).tocsr()).tocsr()


@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("maxiter", [3, 200])
def test_compiled_pcg_gives_the_reference_iterates(m, maxiter):
    L = _laplacian(400, 1)
    rng = np.random.default_rng(2)
    B, X0 = rng.normal(size=(400, m)), rng.normal(size=(400, m))
    shift = np.array([0.3, 2.0, 9.0][:m])
    ref = pcg(lambda V: 2.0 * (L @ V) + V * shift, B, x0=X0, tol=1e-8, maxiter=maxiter,
              inv_diag=1.0 / (2.0 * L.diagonal()[:, None] + shift))
    got = _CompiledCSR(L).pcg(2.0, shift, B.T, X0.T, 1e-8, maxiter)
    assert got.iterations == ref.iterations
    assert got.residual == pytest.approx(ref.residual, rel=1e-6)
    np.testing.assert_allclose(got.x.T, ref.x, rtol=1e-9, atol=1e-12)
    # the columns are solved, not just reproduced: the residual says so
    if maxiter == 200:
        assert got.converged
        np.testing.assert_allclose(2.0 * (L @ got.x.T) + got.x.T * shift, B, atol=1e-6)


def test_compiled_pcg_at_the_solution_takes_no_iteration():
    L = _laplacian(200, 3)
    x = np.random.default_rng(4).normal(size=(1, 200))
    b = 2.0 * (L @ x[0]) + 1.5 * x[0]
    res = _CompiledCSR(L).pcg(2.0, np.array([1.5]), b[None, :], x, 1e-8, 50)
    assert res.iterations == 0


def _without_kernels(system):
    system._compiled = None
    return system


@pytest.mark.parametrize("with_eq", [False, True])
def test_onehot_system_solve_matches_the_numpy_path(with_eq):
    k, n = 3, 300
    L = _laplacian(n, 5)
    rng = np.random.default_rng(6)
    rhs, x0 = rng.normal(size=n * k), rng.random(n * k)
    eq = onehot_operator(n, k, CPU) if with_eq else None
    args = (rhs, x0, 0.7, eq, 0.4, None, 0.0, 1e-9, 100)
    fast = OneHotKronSystem(L, k, CPU).solve(*args)
    slow = _without_kernels(OneHotKronSystem(L, k, CPU)).solve(*args)
    assert fast.iterations == slow.iterations
    np.testing.assert_allclose(fast.x, slow.x, rtol=1e-9, atol=1e-12)


def test_generic_system_solve_matches_the_numpy_path():
    L = _laplacian(300, 7)
    rng = np.random.default_rng(8)
    args = (rng.normal(size=300), rng.random(300), 1.3, None, 0.0, None, 0.0, 1e-9, 100)
    fast = GenericSystem(L, CPU).solve(*args)
    slow = _without_kernels(GenericSystem(L, CPU)).solve(*args)
    assert fast.iterations == slow.iterations
    np.testing.assert_allclose(fast.x, slow.x, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("k", [1, 3])
def test_quadratic_form_matches_the_product(k):
    L = _laplacian(250, 9)
    x = np.random.default_rng(10).normal(size=250 * k)
    system = GenericSystem(L, CPU) if k == 1 else OneHotKronSystem(L, k, CPU)
    expected = float(x @ system.apply_A(x))
    assert system.quad(x) == pytest.approx(expected, rel=1e-12)


def test_onehot_rounding_and_group_sums_match_numpy():
    from solver.admm.steps import cpu_kernels

    x = np.random.default_rng(11).random(40 * 4)
    x[4:8] = 0.5  # a tie: the first label wins, as numpy's argmax
    X = x.reshape(-1, 4)
    expected = np.zeros_like(X)
    expected[np.arange(40), X.argmax(axis=1)] = 1.0
    np.testing.assert_array_equal(cpu_kernels.group_argmax_onehot(x, 4), expected.ravel())
    np.testing.assert_allclose(cpu_kernels.group_sums(x, 4), X.sum(axis=1))


def test_warm_up_compiles_the_kernels_of_both_label_counts():
    from solver.admm.steps import cpu_kernels, fused_kernels
    from solver.mrf import warm_up
    from solver.mrf.build import grid_kernels, pyramid_kernels, stencil
    from solver.mrf.polish import descent_kernels, morphology, region_kernels, watershed
    from solver.mrf.polish import icm_kernels as kernels
    from solver.mrf.solve import early_fixing as freeze
    from solver.mrf.solve import reduction_kernels

    assert warm_up(3) > 0
    # the kernels a segmentation solve calls (quad_form is for LpBoxADMM.objective only: the
    # solve takes x'Ax from the CG residual; grid_laplacian_csr only where something reads a
    # photo's Laplacian, which a solve does not)
    for kernel in (cpu_kernels.block_pcg, fused_kernels.onehot_rhs, fused_kernels.onehot_post,
                   fused_kernels.plain_rhs, fused_kernels.plain_post,
                   cpu_kernels.quad_update,
                   kernels.icm_sweeps, region_kernels.fuse_level_sets,
                   region_kernels.move_regions,
                   region_kernels.split_regions, reduction_kernels.split_by_fixed,
                   kernels.around_changes,
                   kernels.pair_moves,
                   pyramid_kernels.coarsen_grid_edges, pyramid_kernels.cell_laplacian_csr,
                   grid_kernels.coarsen_edges,
                   grid_kernels.potts_energy, grid_kernels.cheapest_labels,
                   cpu_kernels.padded_split,
                   descent_kernels.fuse_descents, morphology._square, watershed.flood_zone,
                   stencil.weights_from_csr, freeze._settled_groups, freeze._group_vertices,
                   reduction_kernels.label_weights):
        assert kernel.signatures, kernel.py_func.__name__


@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_cheapest_labels_are_numpys_argmin_ties_included(k):
    """Each row's first smallest entry, as numpy's argmin: small integers make many ties."""
    from solver.mrf.build.grid_kernels import cheapest_labels
    rng = np.random.default_rng(k)
    unary = rng.integers(0, 3, (5000, k)).astype(np.float64)
    unary[::7] = rng.random((len(unary[::7]), k))
    got = cheapest_labels(unary)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.argmin(unary, axis=1))


@pytest.mark.parametrize("k", [1, 3])
def test_quad_tracker_follows_a_sequence_of_sparse_changes(k):
    L = _laplacian(200, 12)
    system = GenericSystem(L, CPU) if k == 1 else OneHotKronSystem(L, k, CPU)
    track = system.quad_tracker()
    rng = np.random.default_rng(13)
    x = (rng.random(200 * k) > 0.5).astype(float)
    for step in range(6):
        assert track(x) == pytest.approx(float(x @ system.apply_A(x)), rel=1e-10, abs=1e-9)
        flip = rng.choice(x.size, size=1 + 7 * step, replace=False)
        x = x.copy()
        x[flip] = 1.0 - x[flip]


@pytest.mark.parametrize("k", [1, 3, 4])
def test_solve_reports_the_quadratic_form_of_its_solution(k):
    L = _laplacian(300, 14)
    rng = np.random.default_rng(15)
    system = GenericSystem(L, CPU) if k == 1 else OneHotKronSystem(L, k, CPU)
    eq = None if k == 1 else onehot_operator(300, k, CPU)
    sol = system.solve(rng.normal(size=300 * k), rng.random(300 * k), 0.9, eq, 0.5, None, 0.0,
                       1e-6, 5)
    assert sol.quad == pytest.approx(float(sol.x @ system.apply_A(sol.x)), rel=1e-8)


def test_fused_box_sphere_step_matches_the_projections():
    from solver.admm.projections import project_box, project_lp_sphere
    from solver.admm.steps import cpu_kernels

    rng = np.random.default_rng(16)
    x, y1, y2 = rng.normal(0.5, 0.6, 500), rng.normal(size=500), rng.normal(size=500)
    rho, gamma = 2.5, 1.3
    z1, z2 = project_box(x + y1 / rho), project_lp_sphere(x + y2 / rho)
    y1_ref, y2_ref = y1 + gamma * rho * (x - z1), y2 + gamma * rho * (x - z2)
    f1, f2, d1, d2, xx = cpu_kernels.box_sphere_update(x, y1, y2, rho, gamma)
    np.testing.assert_allclose(f1, z1, atol=1e-12)
    np.testing.assert_allclose(f2, z2, atol=1e-12)
    np.testing.assert_allclose(y1, y1_ref, atol=1e-12)   # the duals step in place
    np.testing.assert_allclose(y2, y2_ref, atol=1e-12)
    assert (d1, d2, xx) == pytest.approx(
        (np.sum((x - z1) ** 2), np.sum((x - z2) ** 2), np.sum(x * x)), rel=1e-12)
    rhs = cpu_kernels.admm_rhs(z1, z2, y1, y2, x, rho)
    np.testing.assert_allclose(rhs, rho * (z1 + z2) - x - y1 - y2, atol=1e-12)


@pytest.mark.parametrize("k", [1, 3])
def test_warm_start_from_the_last_solution_reuses_its_residual_exactly(k):
    L = _laplacian(300, 17)
    rng = np.random.default_rng(18)

    def system():
        return GenericSystem(L, CPU) if k == 1 else OneHotKronSystem(L, k, CPU)
    reusing, fresh = system(), system()
    eq = None if k == 1 else onehot_operator(300, k, CPU)
    x = rng.random(300 * k)
    for step in range(5):  # an ADMM-like sequence: new right-hand side and shift, same start
        rhs, shift = rng.normal(size=300 * k), 0.5 * 1.3 ** step
        a = reusing.solve(rhs, x, shift, eq, 0.2, None, 0.0, 1e-10, 3)
        fresh._compiled._last = fresh._compiled._onehot_last = None  # residual by a product
        b = fresh.solve(rhs, x, shift, eq, 0.2, None, 0.0, 1e-10, 3)
        assert a.iterations == b.iterations
        np.testing.assert_allclose(a.x, b.x, rtol=1e-9, atol=1e-11)
        assert a.quad == pytest.approx(float(a.x @ reusing.apply_A(a.x)), rel=1e-8)
        x = a.x
    assert reusing._compiled._reused == 4


def test_split_diagonal_matches_scipy_and_drops_explicit_zeros():
    L = _laplacian(120, 21)
    L.data[::7] = 0.0  # explicit zeros, on and off the diagonal
    indptr, indices, diag, off_indptr, off_indices, off_data = cpu_kernels.split_diagonal(
        L.indptr, L.indices, L.data)
    assert indptr.dtype == np.int64 and indices.dtype == np.uint32
    np.testing.assert_array_equal(indptr, L.indptr)
    np.testing.assert_array_equal(indices, L.indices)
    np.testing.assert_array_equal(diag, L.diagonal())
    off = (L - sp.diags(L.diagonal())).tocsr()
    off.eliminate_zeros()
    np.testing.assert_array_equal(off_indptr, off.indptr)
    np.testing.assert_array_equal(off_indices, off.indices)
    np.testing.assert_array_equal(off_data, off.data)


def _grid_laplacian(h, w, seed):
    """An 8-neighbour grid Laplacian with random weights, some pixels left out (a band)."""
    from solver.mrf.build.graph import grid_edges  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    i, j, _ = grid_edges((h, w))
    W = sp.coo_matrix((rng.random(i.size) + 0.1, (i, j)), shape=(h * w, h * w))
    L = sp.csgraph.laplacian((W + W.T).tocsr()).tocsr()
    keep = np.flatnonzero(rng.random(h * w) > 0.3)
    return L[keep][:, keep].tocsr()


def test_padded_rows_hold_each_row_in_order_and_refuse_wide_rows():
    L = _grid_laplacian(9, 11, 5)
    L.data[::7] = 0.0  # explicit zeros, on and off the diagonal
    diag, cols, vals = cpu_kernels.padded_split(L.indptr, L.indices, L.data)
    _, _, diag2, off_indptr, off_indices, off_data = cpu_kernels.split_diagonal(
        L.indptr, L.indices, L.data)
    np.testing.assert_array_equal(diag, diag2)
    assert cols.shape == vals.shape == (L.shape[0], 8) and cols.dtype == np.uint32
    for r in range(L.shape[0]):
        lo, hi = off_indptr[r], off_indptr[r + 1]
        np.testing.assert_array_equal(cols[r, :hi - lo], off_indices[lo:hi])
        np.testing.assert_array_equal(vals[r, :hi - lo], off_data[lo:hi])
        assert np.all(cols[r, hi - lo:] == r) and np.all(vals[r, hi - lo:] == 0.0)
    C = _CompiledCSR(L)
    np.testing.assert_array_equal(C.cols, cols)
    x = np.random.default_rng(2).normal(size=L.shape[0])
    assert C.quad(x) == pytest.approx(float(x @ (L @ x)), rel=1e-12)
    wide = _laplacian(400, 1)  # rows of about 16 entries: the CG keeps the CSR rows
    assert np.diff(wide.indptr).max() > 9
    assert cpu_kernels.padded_split(wide.indptr, wide.indices, wide.data)[1].shape == (0, 8)
    C = _CompiledCSR(wide)
    assert C.cols.shape == (0, 8) and C.off_indptr.size == wide.shape[0] + 1
    np.testing.assert_array_equal(C.diag, wide.diagonal())


@pytest.mark.parametrize("m", [1, 3])
def test_padded_rows_give_the_csr_iterates_exactly(m):

    L = _grid_laplacian(30, 40, 6)
    rng = np.random.default_rng(7)
    n = L.shape[0]
    B, X0 = rng.normal(size=(m, n)), rng.normal(size=(m, n))
    shift = np.array([0.3, 2.0, 9.0][:m])
    got = {}
    for padded in (False, True):
        C = _CompiledCSR(L, padded=padded)
        assert C.cols.shape[0] == (n if padded else 0)
        got[padded] = C.pcg(2.0, shift, B, X0, 1e-10, 60)
    assert got[True].iterations == got[False].iterations > 5
    np.testing.assert_array_equal(got[True].x, got[False].x)
    np.testing.assert_allclose(2.0 * (L @ got[True].x.T) + got[True].x.T * shift, B.T, atol=1e-7)
