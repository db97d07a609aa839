"""The build's threaded per-pixel passes give the same bits on any number of threads, and the
right values on images whose pixel count is not a multiple of the thread blocks."""

import numba
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from solver.mrf.build import colour_kernels, grid_kernels
from solver.mrf.build.gmm import GaussianMixtureModel
from solver.mrf.build.graph import NEIGHBOUR_OFFSETS, build_grid_graph, grid_edges, laplacian
from tests.solver._mrf_helpers import on_threads

OFFSETS = np.asarray(NEIGHBOUR_OFFSETS, dtype=np.int64)


def _both(fn, *args):
    """``fn(*args)`` on one thread and on all of them, as tuples of arrays."""
    one = on_threads(1, fn, *args)
    many = on_threads(numba.config.NUMBA_NUM_THREADS, fn, *args)
    as_tuple = (lambda r: r if isinstance(r, tuple) else (r,))
    return as_tuple(one), as_tuple(many)


@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (7, 1), (2, 2), (67, 95)])
def test_edge_passes_and_laplacian_do_not_depend_on_threads(shape):
    h, w = shape
    colours = np.random.default_rng(h * w).random((h, w, 3))
    one, many = _both(colour_kernels.edge_squared_differences, colours, OFFSETS)
    np.testing.assert_array_equal(one[0], many[0])
    for a, b in zip(*_both(colour_kernels.grid_edge_list, h, w, OFFSETS)):
        np.testing.assert_array_equal(a, b)
    weights = np.random.default_rng(1).random(one[0].size)
    for a, b in zip(*_both(grid_kernels.grid_laplacian_csr, weights, h, w)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_grid_laplacian_rows_start_where_the_general_kernel_puts_them():
    h, w = 23, 41
    i, j, _ = grid_edges((h, w))
    weights = np.random.default_rng(2).random(i.size)
    general = grid_kernels.laplacian_csr(i, j, weights, (h, w))[:3]
    for got, want in zip(grid_kernels.grid_laplacian_csr(weights, h, w), general):
        np.testing.assert_array_equal(got, want)


def test_weights_from_contrast_match_numpy_and_threads():
    image = np.random.default_rng(3).random((53, 61, 3))
    for diagonal_distance in (True, False):
        graph = build_grid_graph(image, diagonal_distance=diagonal_distance)
        contrast = colour_kernels.edge_squared_differences(image, OFFSETS)
        _, _, diag = grid_edges(image.shape[:2])
        want = np.exp(-graph.beta * contrast)
        if diagonal_distance:
            want[diag] /= np.sqrt(2.0)
        np.testing.assert_allclose(graph.weights, want, rtol=1e-15, atol=0)
        a, b = contrast.copy(), contrast.copy()  # (the kernel works in place)
        on_threads(1, colour_kernels.contrast_to_weights, a, 53, 61, OFFSETS, graph.beta,
                   diagonal_distance)
        on_threads(numba.config.NUMBA_NUM_THREADS, colour_kernels.contrast_to_weights, b, 53,
                   61, OFFSETS, graph.beta, diagonal_distance)
        np.testing.assert_array_equal(a, b)
    assert laplacian(graph).shape == (53 * 61, 53 * 61)


def test_gmm_density_over_several_blocks_matches_scipy_and_threads():
    rng = np.random.default_rng(5)
    gmm = GaussianMixtureModel(n_components=4).fit(rng.random((600, 3)), seed=2)
    m = 2 * colour_kernels.BLOCK + 123  # (three blocks, the last one short)
    points = rng.random((m, 3))
    density = sum(w * multivariate_normal(mu, cov).pdf(points)
                  for w, mu, cov in zip(gmm.weights_, gmm.means_, gmm.covariances_))
    one = on_threads(1, gmm.neg_log_likelihood, points)
    many = on_threads(numba.config.NUMBA_NUM_THREADS, gmm.neg_log_likelihood, points)
    np.testing.assert_array_equal(one, many)
    np.testing.assert_allclose(many, -np.log(density), rtol=1e-10)


def _split_reference(L, hard, k):
    """``split_by_fixed``'s outputs from scipy slicing."""
    free = np.flatnonzero(hard == 0)
    L_ff = L[free][:, free].tocsr()
    L_ff.sort_indices()
    X = np.zeros((hard.size, k))
    on = (hard > 0) & (hard <= k)
    X[np.flatnonzero(on), hard[on] - 1] = 1.0
    coupling = L[free] @ X
    same = sum(L[np.ix_(hard == c, hard == c)].sum() for c in range(1, k + 1))
    return L_ff, coupling, same


@pytest.mark.parametrize("k", [1, 3])
def test_split_by_fixed_matches_scipy_and_threads(k):
    from solver.mrf.solve.reduction_kernels import SPLIT_BLOCK, split_by_fixed  # noqa: PLC0415

    h, w = 61, 2 * SPLIT_BLOCK // 61 + 7  # (three blocks of rows, the last one short)
    i, j, _ = grid_edges((h, w))
    rng = np.random.default_rng(k)
    L = laplacian(type("G", (), {"n": h * w, "shape": (h, w), "i": i, "j": j,
                                 "weights": rng.random(i.size)})())
    hard = rng.integers(0, k + 2, h * w).astype(np.int64)  # (k + 1: fixed, but to no label)
    hard[rng.random(h * w) < 0.5] = 0
    one, many = _both(split_by_fixed, L.indptr, L.indices, L.data, np.empty(0),
                      np.zeros(13, np.int64), hard, k)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)
    ptr, idx, val, coupling, same = many
    L_ff, coupling_ref, same_ref = _split_reference(L, hard, k)
    np.testing.assert_array_equal(ptr, L_ff.indptr)
    np.testing.assert_array_equal(idx, L_ff.indices)
    np.testing.assert_array_equal(val, L_ff.data)
    np.testing.assert_allclose(coupling, coupling_ref, rtol=1e-12, atol=1e-12)
    assert same == pytest.approx(same_ref, rel=1e-12, abs=1e-9)



def test_split_fixed_threads_only_large_matrices_and_restores_the_thread_count(monkeypatch):
    from solver.mrf.solve import reduction_kernels as kernels  # noqa: PLC0415

    h, w = 40, 50
    i, j, _ = grid_edges((h, w))
    L = laplacian(type("G", (), {"n": h * w, "shape": (h, w), "i": i, "j": j,
                                 "weights": np.random.default_rng(7).random(i.size)})())
    hard = np.zeros(h * w, np.int64)
    hard[::4] = 2
    seen = []
    real = kernels.split_by_fixed
    monkeypatch.setattr(kernels, "split_by_fixed",
                        lambda *a: seen.append(numba.get_num_threads()) or real(*a))
    before = numba.get_num_threads()
    small = kernels.split_fixed(L.indptr, L.indices, L.data, hard, 2)
    assert kernels.SPLIT_THREAD_ROWS > h * w
    large = kernels.split_fixed(L.indptr, L.indices, L.data, hard, 2, thread_rows=h * w)
    assert seen == [1, before]
    assert numba.get_num_threads() == before
    for a, b in zip(small, large):
        np.testing.assert_array_equal(a, b)


_CONCURRENT = r"""
import threading
import numpy as np
from solver.mrf import MRFADMM, build_problem

rng = np.random.default_rng(0)
image = rng.random((120, 150, 3))
strokes = np.zeros((120, 150), np.int32)
strokes[:4] = 1
strokes[-4:] = 2
build_problem(image, strokes, 2)  # (compiled before the threads start)
errors = []

def work():
    try:
        for _ in range(15):
            p = build_problem(image, strokes, 2)
            MRFADMM(p)  # (a fixed/free split: one thread, through the same layer)
    except BaseException as exc:  # noqa: BLE001
        errors.append(exc)

threads = [threading.Thread(target=work) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("ok" if not errors else errors)
"""


@pytest.mark.slow
def test_threaded_kernels_from_several_python_threads_under_the_workqueue_layer():
    """numba's fallback threading layer aborts the process when two threads launch parallel
    kernels at once; every threaded kernel goes through one lock (solver.backend.threads)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[4]
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue",
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _CONCURRENT], env=env, capture_output=True,
                          text=True, timeout=600, cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok"), proc.stdout[-2000:]


@pytest.mark.slow
def test_the_polish_relaxations_do_not_depend_on_threads():
    """The TV relaxation's dense steps (also under an area bound) and the layered relaxation's
    steps are parallel over the pixels with no sums across them, and the layered dual value
    sums fixed blocks: the same bits on one thread and on all."""
    from solver.mrf import Constraints, with_constraints
    from solver.mrf.polish import layered_kernels, tv_kernels
    from solver.mrf.polish.tv import start_value
    from solver.mrf.polish.tv import grid_terms
    from tests.solver._mrf_helpers import random_problem

    p = with_constraints(random_problem((37, 41), k=3, seed=5), Constraints(apart=((1, 3),)))
    cost, offsets, tau, gamma = grid_terms(p, 1.0)
    rng = np.random.default_rng(0)
    u = rng.normal(size=p.n).astype(np.float32)
    start = rng.random((2, p.n)).astype(np.float32)
    free = rng.random(p.n) > 0.1
    sigma = np.float32(0.5 / gamma)

    def tv():
        s = start[0].copy()
        steps = tv_kernels.tv_iterate_grid((cost, offsets, u, free, tau), s, sigma, 60, 0.0, 0.0)
        return s, np.asarray(steps)

    def layered():
        u1, u2 = start[0].copy(), start[1].copy()
        layered_kernels.layered_iterate((cost, offsets, u, -u, free, tau), u1, u2, sigma, 60, 0.0,
                                        0.0, -np.inf)
        rows = np.random.default_rng(1).random((9, p.n)).astype(np.float32)
        dual = layered_kernels.dual_value(offsets, u, -u, free, start[0], start[1], rows[:4],
                                          rows[4:8], rows)
        return u1, u2, np.asarray(dual)

    def area():  # (its area is summed in order on one thread)
        s = start[0].copy()
        w = np.ones(p.n, np.float32)
        _, nu, gap = tv_kernels.tv_iterate_grid_area(
            (cost, offsets, u, free, tau), s, sigma, w, (0.2 * p.n, 0.3 * p.n), 0.1 / p.n, 60,
            start_value(cost, offsets, u, s), -np.inf)
        return s, np.asarray(nu), np.asarray(gap)

    for fn in (tv, layered, area):
        one, many = _both(fn)
        for a, b in zip(one, many):
            np.testing.assert_array_equal(a, b)
