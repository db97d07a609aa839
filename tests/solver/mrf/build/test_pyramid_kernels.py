"""The coarse levels' threaded graph kernels give the general kernels' arrays bit for bit, on
one thread and on all of them."""

import numba
import numpy as np
import pytest

from solver.mrf.build.graph import grid_edges, laplacian
from solver.mrf.build.grid_kernels import coarsen_edges, laplacian_csr
from solver.mrf.build.problem import problem_from_unary
from solver.mrf.build.pyramid_kernels import (
    cell_edge_count,
    cell_laplacian_csr,
    coarsen_cells,
    coarsen_grid_edges,
    is_cell_edge_list,
)
from solver.mrf.solve import pyramid as multilevel
from tests.solver._mrf_helpers import on_threads

SHAPES = [(1, 1), (1, 2), (2, 1), (1, 7), (7, 1), (2, 2), (3, 3), (4, 5), (5, 4), (9, 7),
          (31, 17), (64, 3)]


def _bits(a):
    return np.asarray(a).view(np.uint8)


def _grid(shape, seed=0):
    i, j, _ = grid_edges(shape)
    w = np.random.default_rng(seed).random(i.size) * 3.0
    return i.astype(np.int32), j.astype(np.int32), w


@pytest.mark.parametrize("shape", SHAPES)
def test_coarsening_a_grid_graph_matches_the_general_kernel_bit_for_bit(shape):
    i, j, w = _grid(shape, seed=shape[0] * 31 + shape[1])
    lo, hi, weight, bad = coarsen_edges(i, j, w, shape, 2)
    assert bad == 0
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        got = on_threads(threads, coarsen_grid_edges, w, *shape)
        for a, b in zip((lo, hi, weight), got):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(_bits(a), _bits(b))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("factor", [2, 3])
def test_coarse_data_terms_and_hard_labels_are_numpys_bincounts_bit_for_bit(shape, factor):
    """Sums of each block's data terms in pixel order (bincount's), and a block's hard label
    only where its fine hard pixels name exactly one label."""
    rng = np.random.default_rng(shape[0] * 7 + shape[1] + factor)
    n, k = shape[0] * shape[1], 3
    unary = rng.random((n, k)) * 1e3
    hard = np.where(rng.random(n) < 0.4, rng.integers(1, k + 1, n), 0).astype(np.int32)
    block, (hc, wc) = multilevel.block_index(shape, factor)
    nc = hc * wc
    want = np.stack([np.bincount(block, weights=unary[:, c], minlength=nc) for c in range(k)],
                    axis=1)
    named = np.bincount(block * (k + 1) + hard, minlength=nc * (k + 1)).reshape(nc, k + 1)[:, 1:]
    want_hard = np.where((named > 0).sum(axis=1) == 1, np.argmax(named > 0, axis=1) + 1, 0)
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        got, got_hard = on_threads(threads, coarsen_cells, unary, hard, *shape, factor)
        np.testing.assert_array_equal(_bits(got), _bits(want))
        np.testing.assert_array_equal(got_hard, want_hard)
        assert got_hard.dtype == np.int32


@pytest.mark.parametrize("shape", SHAPES)
def test_cell_ordered_laplacian_matches_the_general_kernel_bit_for_bit(shape):
    i, j, w = _grid(shape, seed=7)
    lo, hi, weight, _ = coarsen_edges(i, j, w, shape, 2)
    cshape = (-(-shape[0] // 2), -(-shape[1] // 2))
    assert lo.size == cell_edge_count(*cshape) and is_cell_edge_list(lo, hi, *cshape)
    want = laplacian_csr(lo, hi, weight, cshape)[:3]
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        got = on_threads(threads, cell_laplacian_csr, weight, *cshape)
        for a, b in zip(want, got):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(_bits(a), _bits(b))


def test_only_the_exact_cell_order_is_recognised():
    i, j, w = _grid((9, 8))
    lo, hi, _, _ = coarsen_edges(i, j, w, (9, 8), 2)
    assert is_cell_edge_list(lo, hi, 5, 4)
    assert not is_cell_edge_list(lo, hi, 4, 5)             # another shape
    assert not is_cell_edge_list(lo[:-1], hi[:-1], 5, 4)   # an edge missing
    swapped_lo, swapped_hi = lo.copy(), hi.copy()
    swapped_lo[[3, 4]], swapped_hi[[3, 4]] = lo[[4, 3]], hi[[4, 3]]
    assert not is_cell_edge_list(swapped_lo, swapped_hi, 5, 4)  # two edges out of order
    assert not is_cell_edge_list(i, j, 9, 8)                # the fine grid's own order


def test_coarsen_takes_the_grid_path_and_gives_the_general_answer(monkeypatch):
    shape, k = (13, 10), 3
    rng = np.random.default_rng(4)
    fine = problem_from_unary(rng.random((*shape, 3)), rng.random((shape[0] * shape[1], k)))
    i, j = np.asarray(fine.graph.i, np.int32), np.asarray(fine.graph.j, np.int32)
    w = np.asarray(fine.graph.weights)
    general = [0]
    real = multilevel.coarsen_edges

    def counted(*args):
        general[0] += 1
        return real(*args)

    monkeypatch.setattr(multilevel, "coarsen_edges", counted)
    coarse, _ = multilevel.coarsen(fine)
    assert general[0] == 0  # the photo's own graph takes the threaded path
    coarser, _ = multilevel.coarsen(coarse)
    assert general[0] == 1  # a cell-ordered level takes the general one
    lo, hi, weight, _ = real(i, j, w, shape, 2)
    np.testing.assert_array_equal(coarse.graph.i, lo)
    np.testing.assert_array_equal(coarse.graph.weights, weight)
    L = laplacian(coarse.graph)  # the cell-ordered Laplacian, as the general kernel has it
    indptr, indices, data, _ = laplacian_csr(lo, hi, weight, coarse.shape)
    np.testing.assert_array_equal(L.indptr, indptr)
    np.testing.assert_array_equal(L.indices, indices)
    np.testing.assert_array_equal(_bits(L.data), _bits(data))
    np.testing.assert_array_equal(_bits(coarse.laplacian.data), _bits(data))
    assert coarser.n == 4 * 3
