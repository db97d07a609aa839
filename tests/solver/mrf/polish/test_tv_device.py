"""The TV relaxation's steps on the GPU (solver.mrf.polish.tv_device).

On the host: the stopping rule's driver, run with the CPU kernel's dense step, reproduces the
CPU kernel (whose sparse steps must give what dense ones give); only the real GPU backend takes
the CUDA path; and a solve's backend reaches the polish's TV relaxation. With a GPU: the CUDA
steps give the CPU kernel's iterates bit for bit, and a solve's answer is the CPU's.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from segapp.core.io import ASSETS_DIR, load_image
from solver import gpu_available
from solver.backend import CPU, get_backend
from solver.mrf import build_problem, solve_mrf
from solver.mrf.polish import tv, tv_device, tv_kernels
from solver.mrf.polish.tv import expansion_terms, grid_terms
from tests.solver.conftest import _host_gpu

def needs_gpu(test):
    """A test that runs on a real GPU (marked ``gpu``; skipped without one)."""
    return pytest.mark.gpu(pytest.mark.skipif(not gpu_available(), reason="no CuPy/CUDA GPU")(test))


def _cameraman(k: int, size=(90, 80)):
    """The cameraman resized, with a GrabCut rectangle (K = 2) or a short stroke per label, at
    λ = 10, the λ these inputs were built and measured at (the default until 2026-12-02)."""
    img = cv2.resize(load_image(ASSETS_DIR / "cameraman.png"), size[::-1],
                     interpolation=cv2.INTER_AREA)
    if k == 2:
        return build_problem(img, None, 2, rect=(2, 8, 60, 75), lam=10.0)
    strokes = np.zeros(size, np.int32)
    for c in range(k):
        strokes[10 + 20 * c:12 + 20 * c, 15:45] = c + 1
    return build_problem(img, strokes, k, lam=10.0)


def _k2_inputs(problem, start):
    """The grid kernel's arguments for the K = 2 relaxation from ``start`` (as tv_relaxation)."""
    cost, offsets, tau, gamma = grid_terms(problem, 1.0)
    u = (problem.unary[:, 1] - problem.unary[:, 0]).astype(np.float32)
    free = problem.hard.ravel() == 0
    return cost, offsets, u, free, tau, start.astype(np.float32), np.float32(0.5 / gamma)


def _expansion_inputs(problem, lab, alpha):
    """The grid kernel's arguments for the expansion move of ``lab`` to ``alpha``."""
    cost, offsets, tau, gamma = grid_terms(problem, 1.0)
    u, move_cost = expansion_terms(problem, lab, alpha, cost, offsets)
    free = (problem.hard.ravel() == 0) & (lab != alpha)
    y = (lab == alpha).astype(np.float32)
    return move_cost, offsets, u, free, tau, y, np.float32(0.5 / gamma)


def _dense_driver(args, iterations, tol):
    """:func:`tv_device.run_steps` with the CPU kernel's dense step on host arrays."""
    cost, offsets, u, free, tau, s, sigma = args
    s = s.copy()
    bar, p = s.copy(), np.zeros((4, s.size), np.float32)
    steps = tv_device.run_steps(np, lambda: tv_kernels._dense_step(
        (cost, offsets, u, free, tau), s, bar, p, sigma, tv_kernels.NO_PULL,
        tv_kernels.NO_WEIGHTS), s, iterations, tol)
    return s, steps


def _cpu(args, iterations, tol):
    s = args[5].copy()
    steps, sparse = tv_kernels.tv_iterate_grid(args[:5], s, args[6], iterations, tol,
                                               tv_kernels.SPARSE_BELOW)
    return s, steps, sparse


def _problems():
    k2 = _cameraman(2)
    start = np.zeros(k2.n, np.int64)
    yield "k2-from-background", _k2_inputs(k2, start)
    k3 = _cameraman(3)
    lab = np.argmin(k3.unary, axis=1).astype(np.int64)  # (each pixel's cheapest label)
    yield "k3-expansion", _expansion_inputs(k3, lab, 1)


def test_the_dense_driver_reproduces_the_cpu_kernel():
    for name, args in _problems():
        want, cpu_steps, _ = _cpu(args, 60, 0.0)  # (no test passes: every step runs)
        got, steps = _dense_driver(args, 60, 0.0)
        assert np.array_equal(got, want), name
        assert steps == cpu_steps == 60, name
        # long enough for the CPU's sparse steps, which must give what dense ones give
        want, cpu_steps, sparse = _cpu(args, 400, 1e-3)
        got, steps = _dense_driver(args, 400, 1e-3)
        assert sparse > 0, name
        assert np.array_equal(got, want), name
        # the same test every 25 steps; the CPU also stops once nothing changes
        assert steps % tv_device.CHECK_EVERY == 0 or steps == 400, name
        assert cpu_steps <= steps, name


def test_the_stopping_test_runs_every_block_and_stops_on_a_still_iterate():
    calls = []
    s = np.zeros(5)

    def step():
        calls.append(1)
        if len(calls) <= 30:
            s[0] += 0.1  # moves for 30 steps, then still

    steps = tv_device.run_steps(np, step, s, 1000, 1e-3)
    assert steps == 75  # blocks ending at 25 and 50 moved; the one ending at 75 did not
    assert tv_device.run_steps(np, lambda: None, np.zeros(3), 10, 1e-3) == 10


def test_only_the_real_gpu_backend_takes_the_cuda_steps():
    assert not tv_device.applies(None)
    assert not tv_device.applies(CPU)
    assert not tv_device.applies(_host_gpu())
    if gpu_available():
        assert tv_device.applies(get_backend("gpu"))


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_a_solve_passes_its_backend_to_the_tv_relaxation(k, monkeypatch):
    seen = []
    real = tv_device.applies
    monkeypatch.setattr(tv_device, "applies", lambda b: seen.append(b) or real(b))
    fake = _host_gpu()
    problem = _cameraman(k)
    solve_mrf(problem, "admm", backend=fake, seed=0)
    solve_mrf(problem, "admm", backend=fake, seed=0, coarse_to_fine=True)
    assert len(seen) >= 2 and all(b is fake for b in seen)
    seen.clear()
    solve_mrf(problem, "admm", seed=0)
    assert seen and all(b is None or not b.is_gpu for b in seen)


@needs_gpu
def test_the_cuda_steps_give_the_cpu_kernels_iterates():
    gpu = get_backend("gpu")
    for iterations, tol in ((60, 0.0), (400, 1e-3)):
        for name, args in _problems():
            want, cpu_steps, _ = _cpu(args, iterations, tol)
            got = args[5].copy()
            steps = tv_device.tv_iterate_grid(gpu, *args[:5], got, args[6], iterations, tol)
            assert np.array_equal(got, want), (name, float(np.abs(got - want).max()))
            assert cpu_steps <= steps <= iterations, name


@needs_gpu
@pytest.mark.parametrize("k", [2, 3])
def test_a_gpu_solve_ends_on_the_cpu_solves_labels(k):
    problem = _cameraman(k, size=(160, 150))
    cpu = solve_mrf(problem, "admm", seed=0, coarse_to_fine=True)
    gpu = solve_mrf(problem, "admm", backend="gpu", seed=0, coarse_to_fine=True)
    assert gpu.backend == "gpu"
    assert gpu.energy == pytest.approx(cpu.energy, rel=1e-9)


def test_grid_steps_on_the_host_are_the_cpu_kernels():
    _, args = next(_problems())
    want, steps_want, sparse_want = _cpu(args, 200, 1e-3)
    s = args[5].copy()
    assert tv.grid_steps(None, args[:5], s, args[6], 200, 1e-3) == (steps_want, sparse_want)
    assert np.array_equal(s, want)


def test_the_dual_value_in_array_operations_is_the_kernels():
    """The GPU's gap test sums the kernel's dual objective with array operations."""
    _, args = next(_problems())
    cost, offsets, u, free, tau, s, sigma = args
    rng = np.random.default_rng(0)
    p = (rng.uniform(-1, 1, cost.shape) * cost).astype(np.float32)
    want = tv_kernels.grid_dual_value(offsets, u, free, s, p)
    got = tv_device.dual_value(np, u, p, free, s, tuple(offsets[4:]))
    assert got == pytest.approx(want, rel=1e-6, abs=1e-3)


def test_the_gap_test_runs_after_each_block():
    gaps = iter([5.0, 3.0, 0.5, 0.1])
    steps = tv_device.run_steps(np, lambda: None, np.arange(3.0), 1000, -1.0,
                                lambda: next(gaps), 1.0)
    assert steps == 75  # the blocks ending at 25 and 50 left gaps of 5 and 3, then 0.5


@needs_gpu
def test_the_cuda_steps_go_on_from_one_call_to_the_next_and_stop_on_the_gap():
    from solver.mrf.polish.tv import start_value

    gpu = get_backend("gpu")
    _, args = next(_problems())
    want, _, _ = _cpu(args, 200, 0.0)
    got = args[5].copy()
    p, bar = np.zeros((4, got.size), np.float32), got.copy()
    for _ in range(4):
        tv_device.tv_iterate_grid(gpu, *args[:5], got, args[6], 50, 0.0, np.inf, -np.inf, p,
                                  bar)
    assert np.array_equal(got, want)
    start = start_value(args[0], args[1], args[2], args[5])
    s = args[5].copy()
    cpu_steps, _ = tv_kernels.tv_iterate_grid(args[:5], s, args[6], 2000, 0.0, 0.0, start,
                                              0.05 * abs(start))
    g = args[5].copy()
    gpu_steps = tv_device.tv_iterate_grid(gpu, *args[:5], g, args[6], 2000, 0.0, start,
                                          0.05 * abs(start))
    assert abs(gpu_steps - cpu_steps) <= tv_device.CHECK_EVERY
