"""The graph-building kernels against plain scipy/numpy constructions of the same arrays."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from solver.mrf.build.graph import GridGraph, grid_edges, laplacian
from solver.mrf.build.grid_kernels import (
    _is_grid_edge_list,
    coarsen_edges,
    grid_laplacian_csr,
    grid_potts_energy,
    grid_potts_energy_threaded,
    laplacian_csr,
    potts_energy,
)
from solver.mrf.solve.pyramid import block_index
from tests.solver._mrf_helpers import on_threads


def _reference_laplacian(n, i, j, w):
    W = sp.coo_matrix((w, (i, j)), shape=(n, n)).tocsr()
    W = W + W.T
    return (sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W).tocsr()


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(6, 7), (5, 2), (1, 6), (4, 1), (3, 3)])
def test_laplacian_csr_matches_scipy_with_repeats_and_missing_edges(shape):
    i, j, _ = grid_edges(shape)
    rng = np.random.default_rng(shape[0])
    keep = rng.random(i.size) > 0.2           # some pixel pairs without an edge
    keep[0] = True
    i, j = i[keep], j[keep]
    i = np.concatenate([i, j[:3]])            # three pairs again, reversed
    j = np.concatenate([j, i[:3]])
    w = rng.random(i.size)
    n = shape[0] * shape[1]
    indptr, indices, data, bad = laplacian_csr(i.astype(np.int64), j.astype(np.int64), w, shape)
    assert bad == 0
    L = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    assert L.has_sorted_indices
    for r in range(n):  # each row: distinct sorted columns, its diagonal included
        row = indices[indptr[r]:indptr[r + 1]]
        assert np.all(np.diff(row) > 0) and r in row
    ref = _reference_laplacian(n, i, j, w)
    np.testing.assert_allclose(L.toarray(), ref.toarray(), atol=1e-12)
    assert L.nnz == (ref + sp.eye(n)).nnz  # no entry for a pair without an edge


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (5, 1), (2, 2), (3, 4), (7, 3), (31, 40)])
def test_grid_laplacian_is_bit_identical_to_the_general_kernel(shape):
    """A built grid graph's Laplacian is read straight from its weights, with the same bits
    (zero weights keep their entries) as the kernel that takes any edge list."""
    h, w = shape
    i, j, _ = grid_edges(shape)
    rng = np.random.default_rng(h * 100 + w)
    weights = rng.random(i.size) * 10.0 ** rng.integers(-8, 8, i.size)
    weights[::5] = 0.0
    assert _is_grid_edge_list(i, j, h, w)
    general = laplacian_csr(i, j, weights, shape)[:3]
    for got, want in zip(grid_laplacian_csr(weights, h, w), general):
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    if i.size > 1:  # any other order or list goes through the general kernel
        assert not _is_grid_edge_list(i[::-1].copy(), j[::-1].copy(), h, w)
        assert not _is_grid_edge_list(i[1:], j[1:], h, w)
        shuffled = rng.permutation(i.size)
        g = GridGraph(shape=shape, i=i[shuffled], j=j[shuffled], weights=weights[shuffled],
                      beta=1.0)
        want = laplacian(GridGraph(shape, i, j, weights, 1.0))
        assert abs(laplacian(g) - want).max() <= 1e-12 * abs(want).max()  # (summed in another order)


def test_laplacian_of_a_graph_with_a_non_neighbour_edge_is_refused():
    i, j, _ = grid_edges((4, 4))
    graph = GridGraph(shape=(4, 4), i=np.append(i, 0), j=np.append(j, 10),
                      weights=np.ones(i.size + 1), beta=1.0)
    with pytest.raises(ValueError, match="1 edges of the graph are not 8-neighbour"):
        laplacian(graph)


@pytest.mark.parametrize(("shape", "factor"), [((9, 11), 2), ((8, 8), 2), ((7, 10), 3),
                                               ((5, 1), 2), ((1, 7), 2), ((6, 3), 2), ((4, 4), 4)])
def test_coarsen_edges_sums_the_fine_edges_between_each_pair_of_blocks(shape, factor):
    i, j, _ = grid_edges(shape)
    w = np.random.default_rng(0).random(i.size)
    block, cshape = block_index(shape, factor)
    expected: dict = {}
    for a, b, x in zip(block[i].tolist(), block[j].tolist(), w.tolist()):
        if a != b:
            key = (min(a, b), max(a, b))
            expected[key] = expected.get(key, 0.0) + x
    lo, hi, cw, bad = coarsen_edges(i.astype(np.int64), j.astype(np.int64), w, shape, factor)
    assert bad == 0
    got = list(zip(lo.tolist(), hi.tolist()))
    assert got == sorted(expected)  # each pair once, ordered by lo then hi
    np.testing.assert_allclose(cw, [expected[key] for key in got], rtol=1e-14)
    # the block grid of 8-neighbour fine edges is an 8-neighbour grid again
    ci, cj, _ = grid_edges(cshape)
    assert sorted(zip(ci.tolist(), cj.tolist())) == got


@pytest.mark.parametrize("k", [2, 4])
def test_potts_energy_matches_the_direct_sum(k):
    rng = np.random.default_rng(k)
    shape = (70, 90)                       # more than one 4096-term block of edges and pixels
    i, j, _ = grid_edges(shape)
    w = rng.random(i.size)
    unary = rng.normal(size=(shape[0] * shape[1], k))
    lab = rng.integers(0, k, shape[0] * shape[1])
    cut = lab[i] != lab[j]
    expected = 3.5 * 2.0 * w[cut].sum() + unary[np.arange(lab.size), lab].sum()
    got = potts_energy(i.astype(np.int64), j.astype(np.int64), w, unary, lab, 3.5)
    assert got == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("shape", [(1, 1), (1, 2), (2, 1), (2, 2), (1, 5000), (5000, 1),
                                   (3, 3000), (70, 90), (64, 64), (33, 125)])
def test_grid_energy_is_the_edge_list_energy_bit_for_bit_on_any_threads(shape):
    """The grid's energy from positions, serial or with its 4096-term blocks summed on threads,
    is the edge-list kernel's value to the bit: blocks that start mid-row and mid-direction
    included."""
    rng = np.random.default_rng(shape[0] * 11 + shape[1])
    i, j, _ = grid_edges(shape)
    n, k = shape[0] * shape[1], 3
    w = rng.random(i.size) * 5.0
    unary = rng.normal(size=(n, k)) * 100.0
    lab = rng.integers(0, k, n)
    want = potts_energy(i.astype(np.int64), j.astype(np.int64), w, unary, lab, 0.7)
    bits = np.float64(want).view(np.uint64)
    assert np.float64(grid_potts_energy(w, *shape, unary, lab, 0.7)).view(np.uint64) == bits
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        got = on_threads(threads, grid_potts_energy_threaded, w, *shape, unary, lab, 0.7)
        assert np.float64(got).view(np.uint64) == bits


@pytest.mark.parametrize(("shape", "threaded"), [((255, 257), False), ((256, 256), True),
                                                 ((300, 301), True), ((40, 50), False)])
def test_a_problems_energy_is_the_edge_list_sum_on_either_side_of_the_threads_cut_off(shape,
                                                                                     threaded):
    """MRFProblem.energy sums a large grid on the threads and a small one serially; both are
    the edge-list kernel's value to the bit."""
    from solver.mrf.build.graph import edge_ends
    from solver.mrf.build.problem import THREADED_ENERGY_PIXELS
    from tests.solver._mrf_helpers import random_problem
    p = random_problem(shape, k=3, seed=shape[1])
    assert (p.n >= THREADED_ENERGY_PIXELS) == threaded
    lab = np.random.default_rng(1).integers(1, 4, p.n)
    gi, gj = edge_ends(p.graph)
    want = potts_energy(np.asarray(gi, np.int64), np.asarray(gj, np.int64),
                        np.asarray(p.graph.weights, np.float64), p.unary, lab - 1, float(p.lam))
    assert np.float64(p.energy(lab)).view(np.uint64) == np.float64(want).view(np.uint64)


@pytest.mark.parametrize("shape", [(7, 9), (1, 12), (12, 3)])
def test_level_set_energies_are_each_sets_energy_and_area(shape):
    """All level sets at once: each level's energy is the energy of ``{s > t}`` alone (to
    rounding) and its area the weighted count, with values at the levels themselves, ties
    between neighbours and fixed 0s and 1s in ``s``."""
    from solver.mrf.build.grid_kernels import grid_level_set_energies
    from tests.solver._mrf_helpers import random_problem

    problem = random_problem(shape, k=2, seed=sum(shape))
    rng = np.random.default_rng(len(shape))
    levels = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    s = rng.choice(np.r_[levels, rng.random(6), 0.0, 1.0], size=problem.n)
    w = rng.random(problem.n)
    h, width = shape
    energies, areas = grid_level_set_energies(problem.graph.weights, h, width, problem.unary,
                                              s, levels, float(problem.lam), w)
    for t, e, a in zip(levels, energies, areas):
        cand = (s > t).astype(np.int64)
        assert e == pytest.approx(problem.energy(cand + 1), rel=1e-12, abs=1e-12)
        assert a == pytest.approx(float(w @ cand), rel=1e-12, abs=1e-12)
