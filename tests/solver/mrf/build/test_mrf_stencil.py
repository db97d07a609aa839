"""The grid view of the Laplacian (its entries read from the graph's weights, without a matrix):
its entries against the CSR's bit for bit, its fallback to the CSR arrays, the kernels' answers
through it and through the CSR arrays, and a photo's solve that never makes the matrix."""

import pickle
from dataclasses import replace

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from solver.mrf import solve_mrf
from solver.mrf.build.graph import laplacian
from solver.mrf.build.problem import MRFProblem, replace_problem
from solver.mrf.build.stencil import (
    best_label_grid,
    column_at,
    csr_arrays,
    degree,
    graph_arrays,
    grid_geometry,
    grid_offsets,
    grid_view,
    link_at,
    place,
    row_length,
    row_value_at,
)
from solver.mrf.polish import descent_kernels
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish.fusion import Snapshot
from solver.mrf.polish.icm import icm
from solver.mrf.solve import reduction_kernels
from solver.mrf.solve.pyramid import coarsen
from tests.solver._mrf_helpers import random_problem

DIRECTIONS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


@numba.njit
def _links(indptr, indices, data, gw, geom, n):
    """Every pixel's neighbour slots as rows ``(i, j, L_ij)`` (j = -1 for none)."""
    out = []
    for i in range(n):
        r, flags = place(gw, geom, i)
        for t in range(degree(indptr, gw, i)):
            j, v = link_at(indptr, indices, data, gw, geom, i, r, flags, t)
            out.append((i, j, v))
    return out


@numba.njit
def _row_entries(indptr, indices, data, gw, geom, n):
    """Every pixel's row, diagonal included, as ``(i, j, L_ij)`` (j = -1 for none)."""
    out = []
    for i in range(n):
        r, flags = place(gw, geom, i)
        for t in range(row_length(indptr, gw, i)):
            j = column_at(indptr, indices, gw, geom, i, flags, t)
            out.append((i, j, row_value_at(indptr, data, gw, geom, i, r, flags, t)
                        if j >= 0 else 0.0))
    return out


def _ways(p):
    """The graph arrays through the grid view and through the CSR arrays alone."""
    grid = graph_arrays(p)
    assert grid[3].size > 0 and grid[0].size == 1  # (the grid view, no matrix)
    return grid, (*csr_arrays(p), np.empty(0), grid[4])


def _present(rows):
    return [(i, j, v) for i, j, v in rows if j >= 0]


def _bits(rows):
    return [(i, j, np.float64(v).tobytes()) for i, j, v in rows]


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(7, 9), (3, 3), (1, 5), (6, 4), (2, 3), (5, 1000)])
def test_the_grid_view_gives_each_rows_entries_as_the_csr_bit_for_bit(shape):
    p = random_problem(shape, k=2, seed=1)
    grid, csr = _ways(p)
    assert np.shares_memory(grid[3], p.graph.weights)  # (the graph's own weights, no copy)
    np.testing.assert_array_equal(grid[4][:8], [r * shape[1] + c for r, c in DIRECTIONS])
    L = p.laplacian
    want = [(i, j, L.data[q]) for i in range(p.n)
            for q, j in zip(range(L.indptr[i], L.indptr[i + 1]),
                            L.indices[L.indptr[i]:L.indptr[i + 1]])]
    for arrays in (grid, csr):
        assert _bits(_present(_row_entries(*arrays, p.n))) == _bits(want)
        assert _bits(_present(_links(*arrays, p.n))) == _bits([e for e in want if e[0] != e[1]])


def test_a_coarse_level_reads_a_copy_of_its_weights_in_the_grids_order():
    coarse, _ = coarsen(random_problem((8, 10), k=3, seed=2))
    gw, geom = grid_view(coarse)
    assert gw.size == 4 * coarse.n - 3 * (coarse.shape[0] + coarse.shape[1]) + 2
    assert grid_view(coarse)[0] is gw  # made once per matrix
    L = coarse.laplacian
    csr = (L.indptr, L.indices, L.data, np.empty(0), geom)
    assert (_bits(_present(_links(*graph_arrays(coarse), coarse.n)))
            == _bits(_present(_links(*csr, coarse.n))))


def test_a_matrix_off_the_grid_gets_no_grid_view():
    p = random_problem((5, 6), k=2, seed=0)
    geom = grid_geometry(5, 6)

    def view(matrix):  # (a problem whose graph is not the grid's own list: read from its matrix)
        q = replace(p, laplacian=sp.csr_matrix(matrix), graph=coarsen(p)[0].graph)
        return grid_view(replace(q, shape=(5, 6)))[0]

    assert view(p.laplacian).size == p.graph.weights.size
    zero = p.laplacian.copy()
    zero.data[zero.indices[zero.indptr[7]:zero.indptr[8]].argmin() + zero.indptr[7]] = 0.0
    assert view(zero).size == 0  # (no longer symmetric)
    far = sp.lil_matrix(p.laplacian)
    far[0, p.n - 1] = far[p.n - 1, 0] = -0.5  # an edge between opposite corners
    assert view(far).size == 0
    wrap = sp.lil_matrix(p.laplacian)
    wrap[5, 6] = wrap[6, 5] = -0.5  # the end of row 0 and the start of row 1: offset 1, no edge
    assert view(wrap).size == 0
    missing = sp.lil_matrix(p.laplacian)
    missing[0, 1] = missing[1, 0] = 0.0
    missing = sp.csr_matrix(missing)
    missing.eliminate_zeros()
    assert view(missing).size == 0
    assert grid_view(random_problem((6, 2), k=2, seed=0))[0].size == 0  # too narrow
    assert grid_offsets(4).tolist() == [-5, -4, -3, -1, 1, 3, 4, 5]
    assert geom[8:13].tolist() == [5, 6, 25, 49, 69]


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3, 4])
def test_best_label_through_the_grid_is_the_csrs_for_every_pixel(k):
    @numba.njit
    def both(indptr, indices, data, gw, geom, unary, two_lam, lab, agree):
        out = np.empty((lab.size, 2), np.int64)
        none = np.empty(0)
        for i in range(lab.size):
            out[i, 0] = kernels.best_label(indptr, indices, data, none, geom, unary, two_lam,
                                           lab, i, agree)
            out[i, 1] = best_label_grid(gw, geom, unary, two_lam, lab, i, agree)
        return out

    for seed in range(3):
        p = random_problem((11, 13), k=k, seed=seed)
        lab = np.random.default_rng(seed).integers(0, k, p.n)
        gw, geom = grid_view(p)
        got = both(*csr_arrays(p), gw, geom, p.unary, 2.0 * p.lam, lab, np.zeros(k))
        np.testing.assert_array_equal(got[:, 1], got[:, 0])
        assert (got[:, 0] != lab).any()  # (the labels are far from a fixed point)


@pytest.mark.parametrize("shape", [(9, 11), (1, 7), (12, 3)])
def test_the_split_by_fixed_pixels_reads_the_grid_as_the_csr_bit_for_bit(shape):
    """ADMM's system on the free pixels (L_ff, the coupling to the fixed labels and their own
    term), made from the grid's weights, is the one made from the matrix."""
    p = random_problem(shape, k=3, seed=3, hard_fraction=0.3)
    hard = p.hard.ravel().astype(np.int64)
    L = p.laplacian
    from_csr = reduction_kernels.split_fixed(L.indptr, L.indices, L.data, hard, 3)
    from_grid = reduction_kernels.split_fixed(*graph_arrays(p)[:3], hard, 3,
                                              grid=grid_view(p))
    for a, b in zip(from_csr, from_grid):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert from_csr[3].any() and (hard > 0).any() and (hard == 0).any()


def test_a_problem_makes_its_laplacian_only_when_asked_and_does_not_pickle_it():
    p = random_problem((6, 7), k=2, seed=5)
    assert "_laplacian_made" not in p.__dict__
    q = replace_problem(p, hard=p.hard.copy())
    assert "_laplacian_made" not in p.__dict__ and "_laplacian_made" not in q.__dict__
    L = p.laplacian
    assert p.laplacian is L and (L != laplacian(p.graph)).nnz == 0
    back = pickle.loads(pickle.dumps(p))
    assert "_laplacian_made" not in back.__dict__ and (back.laplacian != L).nnz == 0
    p.forget_laplacian()
    assert p.laplacian is not L
    stored = replace(p, laplacian=L)
    assert stored.laplacian is L  # (a matrix given is the one read)
    with pytest.raises(TypeError, match="hard labels and beta"):
        MRFProblem(shape=p.shape, k=2, lam=1.0, unary=p.unary, graph=p.graph)


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_a_segmentation_never_makes_the_laplacian(k):
    """ADMM coarse to fine with its polish reads the grid's weights: the problem's matrix (108
    bytes a pixel) is never made."""
    p = random_problem((60, 70), k=k, seed=6, hard_fraction=0.05)
    res = solve_mrf(p, "admm")
    assert "_laplacian_made" not in p.__dict__
    assert np.isfinite(res.energy)
    assert res.energy == pytest.approx(p.energy(res.labels))


def _both_ways(kernel, k, shape, scratch):
    """Run a fusion kernel through the grid view and through the CSR arrays on four random
    problems (ICM fixed points, random snapshots); assert the same regions and labels, and that
    some were taken."""
    taken_any = 0
    for seed in range(4):
        p = random_problem(shape, k=k, seed=seed, hard_fraction=0.05)
        rng = np.random.default_rng(seed)
        lab = icm(p, np.where(p.hard > 0, p.hard, rng.integers(1, k + 1, p.n)).reshape(p.shape))
        snap = Snapshot.from_dense(rng.dirichlet(np.ones(k), p.n))
        out = []
        for arrays in _ways(p):
            lab0 = lab.ravel().astype(np.int64) - 1
            work = scratch(p)
            if len(work) > 9:
                work[1][:] = lab0  # descent fusion's copy of the labels
            taken = kernel((*arrays, p.unary, 2.0 * p.lam), lab0, p.hard.ravel() == 0, snap.pixels, snap.weights,
                           snap.fixed, np.zeros(0, np.int64), np.array([0.2, 0.5, 0.8]), p.n,
                           work)
            out.append((taken, lab0))
        assert out[0][0] == out[1][0]
        np.testing.assert_array_equal(out[0][1], out[1][1])
        taken_any += out[1][0]
    assert taken_any > 0  # (the comparison saw regions taken)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_descent_fusion_is_the_same_through_the_grid_and_the_csr(k):
    _both_ways(descent_kernels.fuse_descents, k, (19, 23),
               lambda p: descent_kernels.descent_scratch(p.n, p.k))


@pytest.mark.parametrize("k", [2, 4])
def test_level_set_fusion_is_the_same_through_the_grid_and_the_csr(k):
    from solver.mrf.polish import region_kernels
    _both_ways(region_kernels.fuse_level_sets, k, (17, 21),
               lambda p: region_kernels.fusion_scratch(p.n))


def _moves_both_ways(moves, k, shape, seeds):
    """Run ``moves(arrays, problem, labels)`` (0-based labels changed in place; returns the
    moves) through the grid view and through the CSR arrays on random problems from random
    labels; assert the same moves and labels, and that some were made."""
    moved_any = 0
    for seed in range(seeds):
        p = random_problem(shape, k=k, seed=seed, hard_fraction=0.02)
        lab = np.random.default_rng(seed).integers(0, k, p.n)
        out = []
        for arrays in _ways(p):
            lab0 = lab.copy()
            out.append((moves(arrays, p, lab0), lab0))
        assert out[0][0] == out[1][0]
        np.testing.assert_array_equal(out[0][1], out[1][1])
        moved_any += out[1][0]
    assert moved_any > 0


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_region_moves_are_the_same_through_the_grid_and_the_csr(k):
    from solver.mrf.polish import region_kernels

    def moves(arrays, p, lab0):  # the regions of each label in turn, as settle_regions does
        return sum(region_kernels.move_regions(
            (*arrays, p.unary, 2.0 * p.lam), lab0, a, np.empty(0, bool), p.hard.ravel(),
            np.arange(p.n), 50, region_kernels.region_scratch(p.n)) for a in range(k))

    _moves_both_ways(moves, k, (18, 20), 4)


@pytest.mark.slow
@pytest.mark.parametrize("k", [3, 4])
def test_pair_and_split_moves_are_the_same_through_the_grid_and_the_csr(k):
    from solver.mrf.polish import region_kernels

    def moves(arrays, p, lab0):
        moved = kernels.pair_moves((*arrays, p.unary, 2.0 * p.lam), lab0, p.hard.ravel() == 0, 10)
        for a in range(k):
            moved += region_kernels.split_regions((*arrays, p.unary, 2.0 * p.lam), lab0,
                                                  lab0 == a, a, p.hard.ravel(), 4, 10)
        return moved

    _moves_both_ways(moves, k, (16, 19), 3)
