"""The polish's region settling and ICM in their device form (solver.mrf.polish.device) make the
host kernels' moves: the same labels on every case, on the host stand-in for CuPy and on a real
GPU where one is present."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from segapp.cli.bench import sample
from solver import gpu_available
from solver.backend import get_backend
from solver.mrf import build_problem
from solver.mrf.options import PolishOptions
from solver.mrf.polish import device, region_kernels
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish.icm import icm
from solver.mrf.polish.pipeline import polish_labels
from solver.mrf.polish.regions import settle_regions
from solver.mrf.solve.dispatch import solve_mrf
from tests.solver.conftest import _host_gpu

DEVICES = [
    pytest.param(_host_gpu(), id="host-stand-in"),
    pytest.param("gpu", marks=pytest.mark.skipif(not gpu_available(), reason="no CuPy/CUDA GPU")),
]


@pytest.fixture(params=DEVICES)
def dev_backend(request):
    return get_backend(request.param)


def noisy_case(k, n=20000, noise=0.05, hard_every=0, seed=0):
    """The cameraman with its K-label strokes, and a start labelling: each pixel's data choice
    with a fraction of pixels relabelled at random (islands for the region moves)."""
    img, strokes = sample(n, k)
    p = build_problem(img, strokes, k)
    if hard_every:
        hard = np.zeros(p.n, np.int32)
        hard[::hard_every] = np.argmin(p.unary[::hard_every], axis=1) + 1
        p = replace(p, hard=hard)
    rng = np.random.default_rng(seed)
    start = np.argmin(p.unary, axis=1).astype(np.int32) + 1
    flip = rng.random(p.n) < noise
    start[flip] = rng.integers(1, k + 1, int(flip.sum()))
    start[p.hard > 0] = p.hard[p.hard > 0]
    return p, start.reshape(p.shape)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_device_icm_makes_the_host_moves(dev_backend, k):
    p, start = noisy_case(k, hard_every=7)
    expected = icm(p, start)
    grid = device.device_grid(p, dev_backend)
    lab = device.to_device(grid, start.ravel() - 1)
    moves = device.icm(grid, lab)
    got = dev_backend.to_numpy(lab).astype(np.int32) + 1
    assert moves > 100  # (the case has work to do)
    np.testing.assert_array_equal(got, expected)
    assert np.all(got.ravel()[p.hard > 0] == p.hard[p.hard > 0])


@pytest.mark.parametrize("k", [2, 3])
def test_each_device_region_move_is_the_hosts(dev_backend, k):
    """One mask's moves, label by label: the same regions move to the same labels, also with a
    cap that leaves the larger ones out and with hard pixels pinning theirs."""
    p, start = noisy_case(k, noise=0.2, hard_every=211, seed=3)
    grid = device.device_grid(p, dev_backend)
    for cap in (2048, 3):
        for a in range(k):
            for prefer in [None, *range(k)]:
                if prefer == a:
                    continue
                host = start.ravel().astype(np.int64) - 1
                mask = host == a
                if prefer is not None:
                    mask &= np.argmin(p.unary, axis=1) == prefer
                moved_host = region_kernels.move_regions(
                    *kernels.graph_arrays(p), p.unary, 2.0 * p.lam, host, mask, a,
                    np.asarray(p.hard), np.flatnonzero(mask), cap,
                    region_kernels.region_scratch(p.n))
                lab = device.to_device(grid, start.ravel() - 1)
                moved = device.move_regions(grid, lab, a, None if prefer is None
                                            else grid.prefers[prefer], cap)
                assert moved == moved_host
                np.testing.assert_array_equal(dev_backend.to_numpy(lab).ravel(), host)
    assert moved_host > 0 or k == 3  # (the last mask of K = 2 moves regions)


@pytest.mark.parametrize("k,cap", [(2, 2048), (3, 2048), (4, 2048), (2, 8)])
def test_device_settle_is_the_hosts(dev_backend, k, cap):
    p, start = noisy_case(k, hard_every=97, seed=k)
    options = PolishOptions(region_cap=0.0, region_cap_min=cap)
    host, settled_host = settle_regions(p, start, options=options)
    got, settled = settle_regions(p, start, options=options, backend=dev_backend)
    np.testing.assert_array_equal(got, host)
    assert settled == settled_host
    assert p.energy(got) < p.energy(icm(p, start))  # region moves did more than ICM


def test_device_polish_is_the_hosts(dev_backend):
    """The whole polish with the region moves on the device gives the host's labels."""
    p, _ = noisy_case(3)
    res = solve_mrf(p, "admm", polish=False, max_iter=30)
    weights = [np.asarray(res.x_continuous).reshape(p.n, 3)]
    np.testing.assert_array_equal(polish_labels(p, res.labels, weights, backend=dev_backend),
                                  polish_labels(p, res.labels, weights))


def _without_edge(L, i, j):
    L = L.tolil(copy=True)
    L[i, j] = 0.0
    L[j, i] = 0.0
    L = L.tocsr()
    L.eliminate_zeros()
    return L


def test_a_graph_that_is_not_the_full_grid_gets_the_host_moves(dev_backend):
    p, start = noisy_case(2, n=2000)
    w = p.shape[1]
    assert device.device_grid(p, dev_backend) is not None
    for L in (_without_edge(p.laplacian, 5 * w + 5, 5 * w + 6),  # an edge left out
              p.laplacian + sp.csr_matrix(([0.5, 0.5], ([0, 3 * w], [3 * w, 0])),
                                          shape=p.laplacian.shape)):  # one off the grid
        q = replace(p, laplacian=L.tocsr())
        assert device.device_grid(q, dev_backend) is None
        np.testing.assert_array_equal(settle_regions(q, start, backend=dev_backend)[0],
                                      settle_regions(q, start)[0])
