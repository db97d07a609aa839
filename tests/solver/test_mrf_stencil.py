"""The grid stencil of the Laplacian: its entries, its fallback, and kernels that give the same
answers through it as through the CSR arrays."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from solver.mrf.polish import descent_kernels
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish.fusion import Snapshot
from solver.mrf.polish.icm import icm
from solver.mrf.polish.stencil import (
    NO_EDGE,
    best_label_stencil,
    degree,
    grid_offsets,
    grid_stencil,
    neighbour,
)
from solver.mrf.solve.pyramid import coarsen

from ._mrf_helpers import random_problem

DIRECTIONS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


def _expected_stencil(problem):
    """The stencil written out from the dense Laplacian, pixel by pixel."""
    h, w = problem.shape
    dense = problem.laplacian.toarray()
    out = np.full((problem.n, 8), NO_EDGE)
    for r in range(h):
        for c in range(w):
            for d, (dr, dc) in enumerate(DIRECTIONS):
                if 0 <= r + dr < h and 0 <= c + dc < w:
                    out[r * w + c, d] = dense[r * w + c, (r + dr) * w + c + dc]
    return out


@pytest.mark.parametrize("shape", [(7, 9), (3, 3), (1, 5), (6, 4)])
def test_stencil_holds_each_pixels_laplacian_entries_by_direction(shape):
    p = random_problem(shape, k=2, seed=1)
    stencil, offsets = grid_stencil(p)
    np.testing.assert_array_equal(offsets, [r * shape[1] + c for r, c in DIRECTIONS])
    np.testing.assert_array_equal(stencil, _expected_stencil(p))
    assert (stencil[:, :] != NO_EDGE).sum() == p.laplacian.nnz - p.n  # every off-diagonal entry
    assert grid_stencil(p)[0] is stencil  # made once per matrix
    coarse, _ = coarsen(random_problem((8, 10), k=3, seed=2))
    np.testing.assert_array_equal(grid_stencil(coarse)[0], _expected_stencil(coarse))


@pytest.mark.parametrize("shape", [(7, 9), (3, 3), (1, 5), (6, 4)])
def test_neighbours_through_the_stencil_and_the_csr_are_each_rows_columns_in_order(shape):
    """The kernels' loops over a pixel's neighbours (stencil.degree / neighbour): through the
    stencil and through the CSR arrays, the row's off-diagonal columns in the CSR's order."""
    p = random_problem(shape, k=2, seed=2)
    stencil, offsets = grid_stencil(p)
    L = p.laplacian
    none = np.empty((0, 8))
    for i in range(p.n):
        row = [j for j in L.indices[L.indptr[i]:L.indptr[i + 1]] if j != i]
        for st in (stencil, none):
            got = [neighbour(L.indptr, L.indices, st, offsets, i, t)
                   for t in range(degree(L.indptr, st, i))]
            assert [j for j in got if j >= 0] == row
    assert degree(L.indptr, stencil, 0) == 8


def test_a_stored_zero_is_an_edge_and_a_matrix_off_the_grid_gets_no_stencil():
    p = random_problem((5, 6), k=2, seed=0)
    L = p.laplacian.copy()
    L.data[L.indices[L.indptr[7]:L.indptr[8]].argmin() + L.indptr[7]] = 0.0  # kept as an entry
    stencil, _ = grid_stencil(replace(p, laplacian=L))
    assert stencil[7, 0] == 0.0 and (stencil[7] == 0.0).sum() == 1
    far = sp.lil_matrix(p.laplacian)
    far[0, p.n - 1] = far[p.n - 1, 0] = -0.5  # an edge between opposite corners
    assert grid_stencil(replace(p, laplacian=sp.csr_matrix(far)))[0].shape == (0, 8)
    wrap = sp.lil_matrix(p.laplacian)
    wrap[5, 6] = wrap[6, 5] = -0.5  # the end of row 0 and the start of row 1: offset 1, no edge
    assert grid_stencil(replace(p, laplacian=sp.csr_matrix(wrap)))[0].shape == (0, 8)
    positive = p.laplacian.copy()
    positive.data[positive.indices != np.repeat(np.arange(p.n), np.diff(positive.indptr))] *= -1
    assert grid_stencil(replace(p, laplacian=positive))[0].shape == (0, 8)
    assert grid_stencil(random_problem((6, 2), k=2, seed=0))[0].shape == (0, 8)  # too narrow
    assert grid_offsets(4).tolist() == [-5, -4, -3, -1, 1, 3, 4, 5]


def test_an_image_above_the_size_limit_gets_no_stencil_and_icm_is_the_same():
    p, q = random_problem((9, 10), k=3, seed=4), random_problem((9, 10), k=3, seed=4)
    start = np.random.default_rng(4).integers(1, 4, p.shape)
    with_stencil = icm(p, start)
    assert grid_stencil(p)[0].shape == (p.n, 8)
    # the first call for a matrix decides its stencil: q's is made as for an image over the limit
    assert grid_stencil(q, max_pixels=q.n - 1)[0].shape == (0, 8)
    np.testing.assert_array_equal(icm(q, start), with_stencil)
    assert not np.array_equal(with_stencil, start)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_best_label_through_the_stencil_is_the_csrs_for_every_pixel(k):
    import numba

    @numba.njit
    def both(indptr, indices, data, stencil, offsets, unary, two_lam, lab, agree):
        out = np.empty((lab.size, 2), np.int64)
        for i in range(lab.size):
            out[i, 0] = kernels.best_label(indptr, indices, data, unary, two_lam, lab, i, agree)
            out[i, 1] = best_label_stencil(stencil, offsets, unary, two_lam, lab, i, agree)
        return out

    for seed in range(3):
        p = random_problem((11, 13), k=k, seed=seed)
        lab = np.random.default_rng(seed).integers(0, k, p.n)
        got = both(*kernels.csr_arrays(p), *grid_stencil(p), p.unary, 2.0 * p.lam, lab,
                   np.zeros(k))
        np.testing.assert_array_equal(got[:, 1], got[:, 0])
        assert (got[:, 0] != lab).any()  # (the labels are far from a fixed point)


def _both_ways(kernel, k, shape, scratch):
    """Run a fusion kernel through the stencil and through the CSR arrays on four random
    problems (ICM fixed points, random snapshots); assert the same regions and labels, and that
    some were taken."""
    taken_any = 0
    for seed in range(4):
        p = random_problem(shape, k=k, seed=seed, hard_fraction=0.05)
        rng = np.random.default_rng(seed)
        lab = icm(p, np.where(p.hard > 0, p.hard, rng.integers(1, k + 1, p.n)).reshape(p.shape))
        snap = Snapshot.from_dense(rng.dirichlet(np.ones(k), p.n))
        out = []
        for stencil in (grid_stencil(p)[0], np.empty((0, 8))):
            lab0 = lab.ravel().astype(np.int64) - 1
            work = scratch(p)
            if len(work) > 9:
                work[1][:] = lab0  # descent fusion's copy of the labels
            taken = kernel(*kernels.csr_arrays(p), stencil, grid_offsets(p.shape[1]), p.unary,
                           2.0 * p.lam, lab0, p.hard.ravel() == 0, snap.pixels, snap.weights,
                           snap.fixed, np.zeros(0, np.int64), np.array([0.2, 0.5, 0.8]), p.n,
                           work)
            out.append((taken, lab0))
        assert out[0][0] == out[1][0]
        np.testing.assert_array_equal(out[0][1], out[1][1])
        taken_any += out[1][0]
    assert taken_any > 0  # (the comparison saw regions taken)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_descent_fusion_is_the_same_through_the_stencil_and_the_csr(k):
    _both_ways(descent_kernels.fuse_descents, k, (19, 23),
               lambda p: descent_kernels.descent_scratch(p.n, p.k))


@pytest.mark.parametrize("k", [2, 4])
def test_level_set_fusion_is_the_same_through_the_stencil_and_the_csr(k):
    from solver.mrf.polish import region_kernels
    _both_ways(region_kernels.fuse_level_sets, k, (17, 21),
               lambda p: region_kernels.fusion_scratch(p.n))


@pytest.mark.parametrize("k", [2, 3])
def test_region_moves_are_the_same_through_the_stencil_and_the_csr(k):
    from solver.mrf.polish import region_kernels
    moved_any = 0
    for seed in range(4):
        p = random_problem((18, 20), k=k, seed=seed, hard_fraction=0.02)
        lab = np.random.default_rng(seed).integers(0, k, p.n)
        out = []
        for stencil in (grid_stencil(p)[0], np.empty((0, 8))):
            lab0, moved = lab.copy(), 0
            for a in range(k):  # the regions of each label in turn, as settle_regions does
                moved += region_kernels.move_regions(
                    *kernels.csr_arrays(p), stencil, grid_offsets(p.shape[1]), p.unary,
                    2.0 * p.lam, lab0, a, np.empty(0, bool), p.hard.ravel(), np.arange(p.n), 50,
                    region_kernels.region_scratch(p.n))
            out.append((moved, lab0))
        assert out[0][0] == out[1][0]
        np.testing.assert_array_equal(out[0][1], out[1][1])
        moved_any += out[1][0]
    assert moved_any > 0
